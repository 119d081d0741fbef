package pspsim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// The server's timeouts. WriteTimeout must exceed MaxDelay: a request in
// timeout mode writes its answer only after its delay, and a write timeout
// that cut it first would turn a slow answer into a dropped connection.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 2 * time.Minute
	idleTimeout       = time.Minute
	shutdownTimeout   = 10 * time.Second
)

// Serve serves the simulator's API on ln until ctx ends, then stops taking
// connections and lets in-flight requests finish within a shutdown timeout.
// Requests hanging in timeout mode end with ctx, so that they do not hold
// the shutdown for their whole delay.
//
// With Options.WebhookURL, Serve also runs the webhook loop, which
// delivers the PIX told to POST /sim/pix and the outcomes of their
// devoluções (see deliverWebhooks). The loop is Serve's: it stops when ctx
// ends, a delivery in flight included, and Serve returns only after it
// has. A Handler served otherwise delivers no webhook. A malformed
// WebhookURL or WebhookSecret is Serve's error, before it serves anything.
func (s *Simulator) Serve(ctx context.Context, ln net.Listener) error {
	if s.webhookErr != nil {
		_ = ln.Close() // Serve owns ln, and serves nothing on it
		return fmt.Errorf("psp simulator: %w", s.webhookErr)
	}
	if s.webhookURL != "" {
		loopCtx, stopLoop := context.WithCancel(ctx)
		looped := make(chan struct{})
		go func() {
			defer close(looped)
			s.deliverWebhooks(loopCtx)
		}()
		// On every path out: the loop stops before Serve returns.
		defer func() {
			stopLoop()
			<-looped
		}()
	}
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	// Serve's goroutine is owned here: Shutdown makes it return, and it is
	// waited for on every path out.
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve psp simulator: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("psp simulator shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		return fmt.Errorf("serve psp simulator: %w", serr)
	}
	if err != nil {
		return fmt.Errorf("shut down psp simulator: %w", err)
	}
	return nil
}
