package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/temporaltest"
)

// stack is the service under test: a Temporal dev server, the API (with
// the dispatcher) and the worker as separate processes.
type stack struct {
	temporal    *temporaltest.Server
	api, worker *process
	apiURL      string
	pool        *pgxpool.Pool
}

func startStack(ctx context.Context, dir string) (*stack, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	st := &stack{}
	if st.temporal, err = temporaltest.Start(dir); err != nil {
		return nil, err
	}
	port, err := temporaltest.FreePort()
	if err != nil {
		st.close()
		return nil, err
	}
	st.apiURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	env := []string{
		"TEMPORAL_ADDRESS=" + st.temporal.Address,
		fmt.Sprintf("HTTP_ADDR=127.0.0.1:%d", port),
		// An attempt stuck on a locked row is cut off well within the
		// 20 s lock of case 6, and retried.
		"INBOX_ACTIVITY_TIMEOUT=5s",
		"DISPATCH_POLL_INTERVAL=200ms",
		"DISPATCH_RETRY_MAX_DELAY=2s",
		"LOG_LEVEL=info",
	}
	pixd := os.Getenv("PIXD")
	migrate := exec.CommandContext(ctx, pixd, "migrate")
	migrate.Env = append(os.Environ(), env...)
	if b, err := migrate.CombinedOutput(); err != nil {
		st.close()
		return nil, fmt.Errorf("migrate: %w: %s", err, b)
	}
	st.api = &process{name: "api", args: []string{pixd, "api"}, env: env, logDir: dir}
	st.worker = &process{name: "worker", args: []string{pixd, "worker"}, env: env, logDir: dir}
	for _, p := range []*process{st.api, st.worker} {
		if err := p.start(); err != nil {
			st.close()
			return nil, err
		}
	}
	if err := st.waitReady(ctx); err != nil {
		st.close()
		return nil, err
	}
	if st.pool, err = db.Open(ctx, os.Getenv("DATABASE_URL"), 4); err != nil {
		st.close()
		return nil, err
	}
	return st, nil
}

// waitReady waits until the API answers /readyz with 200.
func (st *stack) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, st.apiURL+"/readyz", nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the API at %s is not ready after 60 s", st.apiURL)
}

func (st *stack) close() {
	for _, p := range []*process{st.api, st.worker} {
		if p != nil {
			p.stop()
		}
	}
	if st.temporal != nil {
		st.temporal.Stop()
	}
	if st.pool != nil {
		st.pool.Close()
	}
}
