package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
)

// pspServer is the PSP the worker sends outgoing PIX to: the simulator,
// served from this process on a fixed loopback port. It runs here rather
// than as a cmd/pspsim process because the simulator keeps its transfers
// in memory: "the PSP is down" must stop its API (connections refused)
// without making it forget what it holds, which a killed process would.
type pspServer struct {
	sim     *pspsim.Simulator
	addr    string
	url     string
	logFile *os.File
	// cancel stops the running Serve, whose result arrives on served.
	cancel context.CancelFunc
	served chan error
	client *http.Client
}

func newPSPServer(dir string) (*pspServer, error) {
	// Stopped and started again on this port by its cases.
	port, err := temporaltest.StablePort()
	if err != nil {
		return nil, fmt.Errorf("psp simulator: %w", err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	f, err := os.OpenFile(filepath.Join(dir, "pspsim.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	p := &pspServer{
		// Transfers settle quickly unless a case says otherwise, so that a
		// case's drain is about its fault, not about the settlement.
		sim:     pspsim.New(pspsim.Options{Logger: slog.New(slog.NewJSONHandler(f, nil)), DefaultSettleAfter: 300 * time.Millisecond}),
		addr:    addr,
		url:     "http://" + addr,
		logFile: f,
		client:  &http.Client{Timeout: 10 * time.Second},
	}
	return p, p.start()
}

// start serves the simulator's API on its address. The address was free a
// moment ago (or is the one stop just closed): a short wait covers a
// listener that the kernel has not released yet.
func (p *pspServer) start() error {
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", p.addr); err == nil || !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("psp simulator on %s: %w", p.addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.served = cancel, make(chan error, 1)
	go func() { p.served <- p.sim.Serve(ctx, ln) }()
	return nil
}

// stop takes the API down: the listener closes (connections refused) and
// requests in flight, hanging ones included, end without an answer. What
// the simulator holds stays for start.
func (p *pspServer) stop() error {
	if p.cancel == nil {
		return nil
	}
	p.cancel()
	err := <-p.served
	p.cancel = nil
	return err
}

func (p *pspServer) close() {
	_ = p.stop() //nolint:errcheck // on the way out
	p.logFile.Close()
}

// setBehavior tells the simulator what to do with pixKey's transfers, over
// its HTTP API (PUT /behaviors/{pix_key}), as an operator would.
func (p *pspServer) setBehavior(ctx context.Context, pixKey string, b pspsim.Behavior) error {
	body, err := json.Marshal(b)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, p.url+"/behaviors/"+url.PathEscape(pixKey), bytes.NewReader(body))
	if err != nil {
		return err
	}
	res, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("set psp behaviour of %s: %w", pixKey, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusNoContent {
		b, _ := io.ReadAll(res.Body)
		return fmt.Errorf("set psp behaviour of %s: http %d: %s", pixKey, res.StatusCode, b)
	}
	return nil
}

// behaviorCounts is a key's entry of GET /behaviors: how many submissions
// (and, for duplicate_conflict, resubmissions) arrived since it was set.
type behaviorCounts struct {
	PixKey        string `json:"pix_key"`
	Mode          string `json:"mode"`
	Submissions   int    `json:"submissions"`
	Resubmissions int    `json:"resubmissions"`
}

// behaviors reads GET /behaviors, by key.
func (p *pspServer) behaviors(ctx context.Context) (map[string]behaviorCounts, error) {
	var list struct {
		Behaviors []behaviorCounts `json:"behaviors"`
	}
	if err := p.get(ctx, "/behaviors", &list); err != nil {
		return nil, err
	}
	out := map[string]behaviorCounts{}
	for _, b := range list.Behaviors {
		out[b.PixKey] = b
	}
	return out, nil
}

// transfers reads everything the PSP holds (GET /transfers), by
// end_to_end_id, counting the records per end_to_end_id: a PSP must never
// hold two.
func (p *pspServer) transfers(ctx context.Context) (map[string]pspsim.TransferView, map[string]int, error) {
	var list struct {
		Transfers []pspsim.TransferView `json:"transfers"`
	}
	if err := p.get(ctx, "/transfers", &list); err != nil {
		return nil, nil, err
	}
	out, count := map[string]pspsim.TransferView{}, map[string]int{}
	for _, t := range list.Transfers {
		out[t.EndToEndID] = t
		count[t.EndToEndID]++
	}
	return out, count, nil
}

func (p *pspServer) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+path, nil)
	if err != nil {
		return err
	}
	res, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("psp simulator GET %s: %w", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		return fmt.Errorf("psp simulator GET %s: http %d: %s", path, res.StatusCode, b)
	}
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		return fmt.Errorf("psp simulator GET %s: %w", path, err)
	}
	return nil
}
