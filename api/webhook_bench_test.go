package api_test

// What a webhook costs the API, without the database: the router as
// cmd/pixd/app wires it (every middleware, the signature, the decoding, the
// receipt, the log line and the counters) over a store that answers at
// once. Two measures:
//
//   - BenchmarkWebhook drives the router in process (router.ServeHTTP with
//     a prepared request): ns/op, allocs/op and B/op of the handler chain,
//     and a profile of it (-cpuprofile). allocs/op and B/op do not move
//     with the machine's load; callgrind counts its instructions.
//   - BenchmarkWebhookServerCPU serves the router from a child process over
//     loopback HTTP/1.1 keep-alive connections, as pixd serves pixload, and
//     reports the child's CPU time (user + system, /proc/<pid>/stat, as
//     pixload accounts it) per webhook: the API's CPU per webhook without
//     its database write, the net/http server and its system calls
//     included.
//
//	go test ./api -run '^$' -bench 'Webhook' -benchmem
//	go test ./api -run '^$' -bench 'WebhookServerCPU' -benchtime 20000x
//
// docs/benchmarks.md ("API CPU per webhook: where it goes") has the figures.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/webhooksig"
)

// benchKey signs the benchmark's webhooks (the PSP "bench-psp").
var benchKey = []byte("0123456789abcdef0123456789abcdef")

// A native webhook as pixload sends it, and an API Pix webhook of one PIX.
const (
	benchNativeBody = `{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc-000123","amount_cents":15000,"occurred_at":"2026-11-29T12:00:00Z"}`
	benchAPIPixBody = `{"pix":[{"endToEndId":"E12345678202009091221kkkkkkkkkkk","txid":"c3e0e7a4e7f1469a9f782d3d4999343c","valor":"110.00","horario":"2020-09-09T20:15:00.358Z","infoPagador":"0123456789"}]}`
)

// instantStore answers every webhook as a first delivery, at once: the
// webhook routes' store.
type instantStore struct{}

func (instantStore) Receive(_ context.Context, n pix.Notification) (pix.Receipt, error) {
	return pix.Receipt{EndToEndID: n.EndToEndID, Status: pix.StatusPending, Attempts: 0}, nil
}

func (instantStore) ReceiveBatch(_ context.Context, ns []pix.Notification) ([]pix.Receipt, error) {
	rs := make([]pix.Receipt, len(ns))
	for i, n := range ns {
		rs[i] = pix.Receipt{EndToEndID: n.EndToEndID, Status: pix.StatusPending}
	}
	return rs, nil
}

// benchRouter is the router of the main listener as cmd/pixd/app builds it
// (apiDeps, ServeListeners) with the configuration's defaults: signatures
// required, a 5 s request timeout, no trusted proxy, tracing off, the
// process's JSON logger at level (into w) and the Prometheus counters.
func benchRouter(tb testing.TB, stores api.Stores, level string, w io.Writer) http.Handler {
	tb.Helper()
	registry := metrics.New()
	deps := api.Deps{
		Stores:            stores,
		TemporalNamespace: "default",
		TemporalUIURL:     "http://localhost:8233",
		RequestTimeout:    5 * time.Second,
		Logger:            logging.New(w, level),
		Signatures:        webhooksig.NewVerifier([]webhooksig.Secret{{PSP: "bench-psp", Key: benchKey}}, webhooksig.DefaultTolerance, nil),
		RequireSignatures: true,
		AdminToken:        "bench-admin-token",
		Keys:              db.KeyPolicy{LockFor: 30 * time.Second, KeepFor: 24 * time.Hour},
		Metrics:           metrics.Handler(registry),
		Webhooks:          metrics.NewWebhooks(registry),
		Draining:          func() bool { return false },
		Sagas:             sagasOf(nil, nil, nil),
	}
	router, err := api.NewRouter(deps, api.AllRoutes)
	if err != nil {
		tb.Fatal(err)
	}
	return router
}

// replayBody is a request body that can be read again after reset.
type replayBody struct{ bytes.Reader }

func (*replayBody) Close() error { return nil }

// discardWriter is a ResponseWriter that keeps the status and throws the
// body away; its header map is reused across requests.
type discardWriter struct {
	header http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }
func (w *discardWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// signedRequest is a POST of body to path as the benchmark's PSP signs it.
func signedRequest(tb testing.TB, path, body string) *http.Request {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:8480"+path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.RemoteAddr = "127.0.0.1:40000"
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Go-http-client/1.1")
	webhooksig.SetHeaders(req.Header, "msg_E1234567820261129120000000000001", time.Now(), []byte(body), benchKey)
	return req
}

func BenchmarkWebhook(b *testing.B) {
	for _, tc := range []struct {
		name, path, body string
		status           int
	}{
		{"native", "/webhooks/pix", benchNativeBody, http.StatusAccepted},
		{"api_pix", "/webhooks/api-pix/pix", benchAPIPixBody, http.StatusOK},
	} {
		// warn is the level of the benchmarks (scripts/bench.sh), info the
		// configuration's default: the "webhook accepted" line is written.
		for _, level := range []string{"warn", "info"} {
			b.Run(tc.name+"/log="+level, func(b *testing.B) {
				router := benchRouter(b, api.Stores{Webhooks: instantStore{}}, level, io.Discard)
				req := signedRequest(b, tc.path, tc.body)
				body := &replayBody{}
				w := &discardWriter{header: http.Header{}}
				serve := func() {
					body.Reset([]byte(tc.body))
					req.Body = body
					clear(w.header)
					w.status, w.n = 0, 0
					router.ServeHTTP(w, req)
				}
				serve()
				if w.status != tc.status {
					b.Fatalf("status %d, want %d", w.status, tc.status)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					serve()
				}
				b.StopTimer()
				if w.status != tc.status {
					b.Fatalf("status %d, want %d", w.status, tc.status)
				}
			})
		}
	}
}

// benchServerEnv tells the test binary, started again as a child, to be the
// server of BenchmarkWebhookServerCPU.
const benchServerEnv = "PIX_WEBHOOK_BENCH_SERVER"

// benchServerDatabaseEnv, when set, is the database (a migrated schema) the
// child stores the webhooks in, through db.Store as pixd does, its waker
// running; unset, the child's store answers at once (instantStore).
const benchServerDatabaseEnv = "PIX_WEBHOOK_BENCH_DATABASE_URL"

// benchServerProfileEnv, when set, is where the child writes its CPU
// profile (run one sub-benchmark at a time).
const benchServerProfileEnv = "PIX_WEBHOOK_BENCH_CPUPROFILE"

// TestWebhookBenchServer is the child process of BenchmarkWebhookServerCPU:
// it serves the router on a loopback port, says the address on stdout and
// stops when its stdin closes. Without the environment variable it is
// skipped.
func TestWebhookBenchServer(t *testing.T) {
	level := os.Getenv(benchServerEnv)
	if level == "" {
		t.Skip("the child process of BenchmarkWebhookServerCPU")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var handler http.Handler
	switch url := os.Getenv(benchServerDatabaseEnv); {
	case level == "floor":
		handler = http.HandlerFunc(floorHandler)
	case url != "":
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		pool, err := db.Open(ctx, url, 20) // DATABASE_MAX_CONNS's default
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		store := db.NewStore(pool)
		wakerDone := make(chan struct{})
		go func() {
			defer close(wakerDone)
			_ = store.RunWaker(ctx, slog.New(slog.NewJSONHandler(io.Discard, nil)))
		}()
		defer func() {
			stop()
			<-wakerDone
		}()
		handler = benchRouter(t, api.StoresOf(store), level, io.Discard)
	default:
		handler = benchRouter(t, api.Stores{Webhooks: instantStore{}}, level, io.Discard)
	}
	// As ServeListeners configures the API's servers (the defaults).
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       5 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(slog.NewJSONHandler(os.Stderr, nil), slog.LevelWarn),
	}
	if path := os.Getenv(benchServerProfileEnv); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			t.Fatal(err)
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		}()
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes it
		_ = srv.Close()
	}()
	fmt.Println(ln.Addr().String())
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		t.Fatal(err)
	}
}

// floorHandler is the least a webhook's handler can do: read the body and
// answer a receipt, with no router, no check and no log. Served by the
// same server, it measures what net/http and the runtime cost by
// themselves (BenchmarkWebhookServerCPU/.../log=floor).
func floorHandler(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"end_to_end_id":"E1234567820261129120000000000001","status":"pending","duplicate":false}`)
}

// processCPU is the user + system CPU time pid has used (/proc/<pid>/stat,
// in clock ticks of 10 ms, as pixload reads it).
func processCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		tb.Skipf("no /proc: %v", err)
	}
	// The fields after the command's closing parenthesis; utime and stime
	// are the 14th and 15th of the line, the 12th and 13th after it.
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		tb.Fatalf("parse /proc/%d/stat: %v %v", pid, err1, err2)
	}
	return time.Duration(utime+stime) * (time.Second / 100)
}

// BenchmarkWebhookServerCPU reports the server's CPU per native webhook
// (api-cpu-µs/webhook) with 16 keep-alive connections sending at once, as
// pixload's CPU accounting would measure it with a database that costs
// nothing. The figure is CPU time, not wall time: a busy machine moves it
// much less than ns/op (it still moves with cache and scheduler effects).
// Use -benchtime 20000x or more: the kernel counts in 10 ms ticks.
//
// Two shapes of load: closed (16 connections, each sending its next webhook
// as soon as the last is answered: the server never idles, its goroutines
// rarely sleep) and paced (2,000 webhooks/s spread evenly over 64
// connections, as pixload's open model sends: most requests find the server
// idle, and each pays for waking it up).
//
// With postgres, the child stores each webhook (every one a new PIX) in
// PostgreSQL through db.Store, as pixd does today: the API's CPU per
// webhook with its database client, PostgreSQL's own CPU not counted (it
// is another process), as pixload's "pixd api" column.
func BenchmarkWebhookServerCPU(b *testing.B) {
	for _, level := range []string{"warn", "info", "floor"} {
		b.Run("closed/log="+level, func(b *testing.B) { benchServerCPU(b, level, 16, 0, false) })
		b.Run("paced2000/log="+level, func(b *testing.B) { benchServerCPU(b, level, 64, 2000, false) })
	}
	b.Run("paced2000/postgres/log=warn", func(b *testing.B) { benchServerCPU(b, "warn", 64, 2000, true) })
}

// benchServerCPU sends b.N webhooks over connections; at rate per second
// when rate > 0, each as soon as a connection is free otherwise. With
// postgres, each is a new PIX stored in a fresh schema.
func benchServerCPU(b *testing.B, level string, connections, rate int, postgres bool) {
	if testing.Short() {
		b.Skip("starts a child process")
	}
	child := exec.Command(os.Args[0], "-test.run=^TestWebhookBenchServer$", "-test.bench=^$")
	child.Env = append(os.Environ(), benchServerEnv+"="+level)
	if postgres {
		child.Env = append(child.Env, benchServerDatabaseEnv+"="+dbtest.URL(b))
	}
	child.Stderr = os.Stderr
	stdin, err := child.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = stdin.Close()
		_ = child.Wait()
	}()
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("child: %v", err)
	}
	url := "http://" + strings.TrimSpace(addr) + "/webhooks/pix"

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: connections, MaxConnsPerHost: connections}}
	defer client.CloseIdleConnections()
	header := http.Header{}
	header.Set("Content-Type", "application/json")
	webhooksig.SetHeaders(header, "msg_E1234567820261129120000000000001", time.Now(), []byte(benchNativeBody), benchKey)
	var sent atomic.Int64
	post := func() error {
		body, h := benchNativeBody, header.Clone()
		if postgres {
			// A new PIX each time, signed as a PSP signs it.
			id := fmt.Sprintf("E%031d", sent.Add(1))
			body = strings.Replace(benchNativeBody, "E1234567820261129120000000000001", id, 1)
			webhooksig.SetHeaders(h, "msg_"+id, time.Now(), []byte(body), benchKey)
		}
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header = h
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusAccepted {
			return fmt.Errorf("status %d", res.StatusCode)
		}
		return nil
	}
	send := func(n int) {
		var wg sync.WaitGroup
		errs := make(chan error, connections)
		// With a rate, one goroutine hands out the webhooks on schedule;
		// without, each connection's goroutine takes the next at once.
		due := make(chan struct{}, connections)
		go func() {
			defer close(due)
			start := time.Now()
			for i := range n {
				if rate > 0 {
					if wait := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); wait > 0 {
						time.Sleep(wait)
					}
				}
				due <- struct{}{}
			}
		}()
		for range connections {
			wg.Go(func() {
				for range due {
					if err := post(); err != nil {
						errs <- err
						for range due {
						}
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	send(2000) // connections open, the server's pools and heap warm
	b.ResetTimer()
	before := processCPU(b, child.Process.Pid)
	send(b.N)
	cpu := processCPU(b, child.Process.Pid) - before
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "api-cpu-µs/webhook")
}
