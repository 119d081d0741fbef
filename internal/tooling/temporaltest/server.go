package temporaltest

import (
	"context"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/workflows"
)

// Server is one dev server process.
type Server struct {
	Address string
	// MetricsAddress serves the server's Prometheus metrics (/metrics):
	// what it did, by operation (a new one at each start).
	MetricsAddress string
	bin            string
	dir            string
	port           int
	extra          []string
	cmd            *exec.Cmd
	exited         chan struct{}
}

// CLIPath finds the Temporal CLI binary.
func CLIPath() (string, error) { return ToolPath("TEMPORAL_CLI", "temporal") }

// ToolPath finds a pinned tool's binary that tests start (the Temporal CLI,
// the NATS server): the path in the environment variable env, else
// .bin/name in the nearest folder above the working directory that has
// one, the repository's root (a test of the tooling module runs two
// folders below it).
func ToolPath(env, name string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, ".bin", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%s not found in .bin above the working directory, nor named by %s: build it with scripts/lib.sh's build_tools (make test does)", name, env)
		}
		dir = parent
	}
}

// Start starts a dev server with its state under dir and waits until it
// answers.
func Start(dir string) (*Server, error) { return StartWith(dir) }

// StartWith starts a dev server as Start does, with more `start-dev` flags
// (`--dynamic-config-value key=value`, say).
func StartWith(dir string, extraFlags ...string) (*Server, error) {
	bin, err := CLIPath()
	if err != nil {
		return nil, err
	}
	port, err := StablePort()
	if err != nil {
		return nil, err
	}
	s := &Server{Address: "127.0.0.1:" + strconv.Itoa(port), bin: bin, dir: dir, port: port, extra: extraFlags}
	return s, s.start()
}

func (s *Server) start() error {
	httpPort, err := FreePort()
	if err != nil {
		return err
	}
	metricsPort, err := FreePort()
	if err != nil {
		return err
	}
	logFile, err := os.OpenFile(filepath.Join(s.dir, "temporal.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	args := append([]string{"server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", strconv.Itoa(s.port), "--http-port", strconv.Itoa(httpPort), "--metrics-port", strconv.Itoa(metricsPort),
		"--db-filename", filepath.Join(s.dir, "temporal.db"), "--log-level", "error"},
		workflows.DevServerFlags()...) // the PIX search attributes, as the dev command registers them
	// Each test's workers are a Worker Deployment of their own (named by
	// their queues' base, worker.Version): a shared server sees many more
	// than the 100 a namespace may have by default.
	args = append(args, "--dynamic-config-value", "matching.maxDeployments=100000")
	args = append(args, s.extra...)
	s.MetricsAddress = "127.0.0.1:" + strconv.Itoa(metricsPort)
	s.cmd = exec.Command(s.bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start temporal dev server: %w", err)
	}
	s.exited = make(chan struct{})
	go func() { _ = s.cmd.Wait(); logFile.Close(); close(s.exited) }()
	return s.waitReady(90 * time.Second)
}

func (s *Server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := client.Dial(client.Options{HostPort: s.Address, Logger: quiet{}})
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-s.exited:
			// The log's end, in the error: the test's folder (and the log
			// in it) is gone by the time anyone reads the failure.
			return fmt.Errorf("temporal dev server exited; the end of %s:\n%s", filepath.Join(s.dir, "temporal.log"), logTail(filepath.Join(s.dir, "temporal.log"), 2048))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("temporal dev server at %s not ready after %s: %w", s.Address, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// logTail is the last n bytes of the file at path, or why it can't be read.
func logTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size() > n {
		_, _ = f.Seek(-n, io.SeekEnd)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// Stop stops the server (SIGTERM, then SIGKILL) and waits for it to exit.
// Its state file stays, so Restart brings back every workflow.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	Terminate(s.cmd.Process, s.exited)
	s.cmd = nil
}

// Terminate stops a server process the tests started: SIGTERM, then
// SIGKILL after 15 s; it returns once exited (closed when the process's
// Wait returned) is closed.
func Terminate(p *os.Process, exited <-chan struct{}) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		_ = p.Kill()
		<-exited
	}
}

// PID is the running server's process id (0 when stopped), whose CPU time
// a measurement reads in /proc.
func (s *Server) PID() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Restart starts the server again on the same address and state.
func (s *Server) Restart() error { return s.start() }

// StartT starts a server for one test and stops it at cleanup.
func StartT(t testing.TB) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("integration tier: needs a Temporal server (run without -short)")
	}
	s, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Client dials the server; the client closes at cleanup. configure may
// set more options, such as the data converter of a service whose
// payloads are encrypted.
func (s *Server) Client(t testing.TB, configure ...func(*client.Options)) client.Client {
	t.Helper()
	if s == nil && testing.Short() {
		// Under -short no server was started (the e2e package's TestMain).
		t.Skip("integration tier: needs a Temporal server (run without -short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := client.Options{HostPort: s.Address, Logger: quiet{}}
	for _, f := range configure {
		f(&opts)
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// StablePort returns a TCP port free on loopback right now, below Linux's
// ephemeral range (32768-60999 by default), for a server that is stopped and
// started again on the same port (Restart; the fault suite's API): a port
// of that range, once its server stopped, can be taken meanwhile as the
// local port of any outgoing connection on the machine (a busy test run
// makes thousands), and the restarted server then can't bind it.
func StablePort() (int, error) {
	var err error
	for range 100 {
		port := 20000 + mathrand.IntN(12000)
		var ln net.Listener
		if ln, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			ln.Close()
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port from 20000 to 31999 on loopback: %w", err)
}

// FreePort returns a TCP port free on loopback right now, which the kernel
// then keeps from its own choices for a minute (TIME_WAIT's): a dev server
// binds its history, matching and worker services on ports it has the
// kernel choose (the CLI's GetFreePort, reserved the same way), and a port
// given back as soon as it was chosen could be one of them, in this
// server or in another test's, and the second to bind it fails (a
// restarted server's history service panicked so). A connection that
// the listening side closes first leaves the port in TIME_WAIT: port 0
// and outgoing connections skip it, and a listener with SO_REUSEADDR (Go
// sets it) may still bind it.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, fmt.Errorf("reserve port %d: %w", port, err)
	}
	defer c.Close()
	accepted, err := ln.Accept()
	if err != nil {
		return 0, fmt.Errorf("reserve port %d: %w", port, err)
	}
	// Closed before the dialing side (deferred): this side's socket, on the
	// port, is the one left in TIME_WAIT.
	if err := accepted.Close(); err != nil {
		return 0, fmt.Errorf("reserve port %d: %w", port, err)
	}
	return port, nil
}

// quiet drops the SDK's logs while dialing.
type quiet struct{}

func (quiet) Debug(string, ...any) {}
func (quiet) Info(string, ...any)  {}
func (quiet) Warn(string, ...any)  {}
func (quiet) Error(string, ...any) {}
