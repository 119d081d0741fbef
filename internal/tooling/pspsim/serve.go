package pspsim

import (
	"context"
	"crypto/tls"
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

// Serve serves the simulator's API (Handler) on ln until ctx ends, then
// stops taking connections and lets in-flight requests finish within a
// shutdown timeout. Requests hanging in timeout mode end with ctx, so that
// they do not hold the shutdown for their whole delay. With Options.TLS,
// it serves TLS (mutual TLS when that configuration requires a client
// certificate: a client without one fails the handshake).
//
// Serve also runs the webhook loop, which delivers the PIX told to POST
// /sim/pix and the outcomes of their devoluções (see deliverWebhooks). The
// loop is Serve's: it stops when ctx ends, a delivery in flight included,
// and Serve returns only after it has. A Handler served otherwise delivers
// no webhook. Malformed Options are Serve's error, before it serves
// anything.
func (s *Simulator) Serve(ctx context.Context, ln net.Listener) error {
	if s.configErr != nil {
		_ = ln.Close() // Serve owns ln, and serves nothing on it
		return fmt.Errorf("psp simulator: %w", s.configErr)
	}
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
	if s.serverTLS != nil {
		ln = tls.NewListener(ln, s.serverTLS.Clone())
	}
	h := s.Handler()
	if s.wrapHandler != nil {
		h = s.wrapHandler(h)
	}
	return s.serveHTTP(ctx, ln, h)
}

// ServeControl serves the control routes alone (ControlHandler), over
// plain HTTP, on ln until ctx ends, as Serve does: for the tools that
// drive a simulator whose API is behind mutual TLS. Run it beside Serve.
func (s *Simulator) ServeControl(ctx context.Context, ln net.Listener) error {
	if s.configErr != nil {
		_ = ln.Close()
		return fmt.Errorf("psp simulator: %w", s.configErr)
	}
	return s.serveHTTP(ctx, ln, s.ControlHandler())
}

// serveHTTP serves h on ln until ctx ends, then shuts down gracefully.
func (s *Simulator) serveHTTP(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
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
