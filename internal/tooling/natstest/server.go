package natstest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pixbank/pix/internal/tooling/temporaltest"
)

// Server is one nats-server process.
type Server struct {
	// Addr is host:port; URL, nats://Addr.
	Addr, URL string
	bin, dir  string
	cmd       *exec.Cmd
	exited    chan struct{}
}

// BinPath finds the nats-server binary.
func BinPath() (string, error) { return temporaltest.ToolPath("NATS_SERVER", "nats-server") }

// Start starts a server with JetStream, its streams and its log under dir
// (made if missing), on a free
// loopback port below the ephemeral range (temporaltest.StablePort: Restart
// finds it free again), and waits until JetStream answers.
func Start(dir string) (*Server, error) {
	bin, err := BinPath()
	if err != nil {
		return nil, err
	}
	port, err := temporaltest.StablePort()
	if err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	s := &Server{Addr: addr, URL: "nats://" + addr, bin: bin, dir: dir}
	return s, s.Restart()
}

// Restart starts the server again on the same address and streams. The
// port the last stop closed may not be free again at once: a start that
// exits is tried again, for 10 s.
func (s *Server) Restart() error {
	var err error
	for range 50 {
		if err = s.start(); !errors.Is(err, errExited) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
	return err
}

var errExited = errors.New("nats-server exited")

func (s *Server) start() error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(s.dir, "nats-server.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	host, port, _ := strings.Cut(s.Addr, ":")
	s.cmd = exec.Command(s.bin, "-a", host, "-p", port, "-js", "-sd", s.dir)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	s.exited = exited
	go func() { _ = s.cmd.Wait(); logFile.Close(); close(exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := s.jetStreamAnswers()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			s.cmd = nil
			return fmt.Errorf("%w; its log is %s", errExited, logPath)
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("nats-server at %s: JetStream not ready after 30 s: %w", s.Addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *Server) jetStreamAnswers() error {
	nc, err := nats.Connect(s.URL, nats.Timeout(time.Second), nats.NoReconnect())
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return err
}

// Stop stops the server (SIGTERM, then SIGKILL) and waits for it to exit.
// Its streams stay, for Restart.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	temporaltest.Terminate(s.cmd.Process, s.exited)
	s.cmd = nil
}

// StartT starts a server for one test and stops it at cleanup. Under
// -short without the binary the test is skipped (a machine that never
// built the tools); otherwise a server that can't start fails it.
func StartT(t testing.TB) *Server {
	t.Helper()
	if _, err := BinPath(); err != nil && testing.Short() {
		t.Skip(err)
	}
	s, err := Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}
