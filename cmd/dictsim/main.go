// Command dictsim runs the DICT simulator (package dictsim): an in-memory
// stand-in for the Central Bank's DICT, the part of its API the bank calls
// as the credited participant of MED (infraction reports, refund requests,
// rate-limit policies), served as the DICT is: over mutual TLS, a client
// certificate required and the participant known by it, every answer an
// XML document signed by the DICT's certificate, every write's signature
// verified against its participant's certificate. make run starts it and
// points pixd's MED_DICT_* at it; make demo drives it through its control
// routes.
//
//	DICT_SIM_ADDR           listen address of the API, mutual TLS
//	                        (default 127.0.0.1:8092)
//	DICT_SIM_CONTROL_ADDR   listen address of the control routes, plain
//	                        HTTP, for the tools that drive the simulator
//	                        (default 127.0.0.1:8093): open an infraction
//	                        report against a PIX (POST /sim/infraction-reports
//	                        {"end_to_end_id","amount_cents","debited","credited"}),
//	                        a refund request of a report closed AGREED
//	                        (POST /sim/refunds {"infraction_report_id",
//	                        "amount_cents"}), cancel either, faults, the
//	                        clock; the list is dictsim.ControlHandler's
//	DICT_SIM_BASE_PATH      the API's path (default /api/v1, the DICT's)
//	DICT_SIM_LIST_LAG       how long the lists lag the writes (default 0;
//	                        the specification allows the DICT up to 5s)
//
// Its certificates (PEM files; make run's are made by pixctl dev-pki in
// .data/pki, never committed):
//
//	DICT_SIM_TLS_CERT_FILE, DICT_SIM_TLS_KEY_FILE  its TLS server certificate
//	DICT_SIM_TLS_CLIENT_CA_FILE  the CA(s) of the participants' client
//	                        certificates
//	DICT_SIM_SIGNING_CERT_FILE, DICT_SIM_SIGNING_KEY_FILE  the DICT's signing
//	                        certificate (the bank's MED_DICT_VERIFY_CERT_FILE)
//	DICT_SIM_PARTICIPANTS   the participants that may call, ISPB=certificate
//	                        file, separated by ";": each is known by that
//	                        client certificate, which signs its writes too
//	                        (12345678=.data/pki/bank-client.pem;99999010=...)
//	LOG_LEVEL               debug, info, warn, error (default info)
//
// It logs JSON to stderr, one line per request, and shuts down gracefully
// on SIGINT or SIGTERM. Everything is in memory: a restart forgets the
// reports and refund requests (the bank's rows keep theirs).
package main

import (
	"cmp"
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/internal/tooling/dictsim"
)

const usage = "usage: dictsim (configured by DICT_SIM_* variables and LOG_LEVEL: see the command's doc)"

// The servers' timeouts: the DICT's operations answer within a second; a
// fault (an outage) answers at once, nothing is held.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = time.Minute
	shutdownTimeout   = 10 * time.Second
)

func main() { cli.Main("dictsim", run) }

func run(ctx context.Context, args []string) error {
	if len(args) != 0 {
		return errors.New(usage)
	}
	log := logging.New(os.Stderr, os.Getenv("LOG_LEVEL")).With("role", "dictsim")
	sim, tlsConfig, err := served(os.Getenv, log)
	if err != nil {
		return err
	}
	addr := cmp.Or(os.Getenv("DICT_SIM_ADDR"), "127.0.0.1:8092")
	controlAddr := cmp.Or(os.Getenv("DICT_SIM_CONTROL_ADDR"), "127.0.0.1:8093")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	controlLn, err := net.Listen("tcp", controlAddr)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("listen on %s: %w", controlAddr, err)
	}
	log.Info("dict simulator listening", "addr", ln.Addr().String(), "control_addr", controlLn.Addr().String(),
		"mutual_tls", true)
	// Both servers are this function's: each stops with ctx (or when the
	// other fails), and both are waited for.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 2)
	go func() { errc <- serve(ctx, log, tls.NewListener(ln, tlsConfig), sim.Handler()) }()
	go func() { errc <- serve(ctx, log, controlLn, sim.ControlHandler()) }()
	first := <-errc
	cancel()
	return errors.Join(first, <-errc)
}

// served is the simulator of the environment's settings, and its API's
// TLS configuration (dictsim.NewServed).
func served(getenv func(string) string, log *slog.Logger) (*dictsim.Simulator, *tls.Config, error) {
	opts := dictsim.Options{Logger: log, BasePath: getenv("DICT_SIM_BASE_PATH")}
	if v := getenv("DICT_SIM_LIST_LAG"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, nil, fmt.Errorf("DICT_SIM_LIST_LAG: want a duration such as 5s, got %q", v)
		}
		opts.ListLag = d
	}
	var c dictsim.Credentials
	var err error
	if c.Server, err = keyPair("DICT_SIM_TLS", getenv); err != nil {
		return nil, nil, err
	}
	signer, err := keyPair("DICT_SIM_SIGNING", getenv)
	if err != nil {
		return nil, nil, err
	}
	key, ok := signer.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("DICT_SIM_SIGNING_KEY_FILE: not a key that signs")
	}
	c.Signer = dictsim.Signer{Key: key, Certificate: signer.Leaf}
	if c.ClientCAs, err = certPool(getenv("DICT_SIM_TLS_CLIENT_CA_FILE")); err != nil {
		return nil, nil, fmt.Errorf("DICT_SIM_TLS_CLIENT_CA_FILE: %w", err)
	}
	if c.Participants, err = participants(getenv("DICT_SIM_PARTICIPANTS")); err != nil {
		return nil, nil, fmt.Errorf("DICT_SIM_PARTICIPANTS: %w", err)
	}
	return dictsim.NewServed(opts, c)
}

// keyPair loads prefix_CERT_FILE and prefix_KEY_FILE, both required.
func keyPair(prefix string, getenv func(string) string) (tls.Certificate, error) {
	certFile, keyFile := getenv(prefix+"_CERT_FILE"), getenv(prefix+"_KEY_FILE")
	if certFile == "" || keyFile == "" {
		return tls.Certificate{}, fmt.Errorf("%s_CERT_FILE and %s_KEY_FILE: set both", prefix, prefix)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s_CERT_FILE, %s_KEY_FILE: %w", prefix, prefix, err)
	}
	return cert, nil
}

// certPool reads the PEM certificates of the file at path.
func certPool(path string) (*x509.CertPool, error) {
	if path == "" {
		return nil, errors.New("not set: the CA of the participants' client certificates")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("no PEM certificate in %s", path)
	}
	return pool, nil
}

// participants reads "ISPB=certificate file;...": each participant known
// by its client certificate, which signs its writes too.
func participants(v string) ([]dictsim.Participant, error) {
	var ps []dictsim.Participant
	for item := range strings.SplitSeq(v, ";") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		ispb, file, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want ISPB=certificate file", item)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("participant %s: %w", ispb, err)
		}
		block, _ := pem.Decode(b)
		if block == nil || block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("participant %s: no PEM certificate in %s", ispb, file)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("participant %s: %w", ispb, err)
		}
		ps = append(ps, dictsim.ParticipantOf(ispb, cert))
	}
	if len(ps) == 0 {
		return nil, errors.New("not set: name the participants that may call, ISPB=certificate file, separated by \";\"")
	}
	return ps, nil
}

// serve serves h on ln until ctx ends, then shuts down gracefully.
func serve(ctx context.Context, log *slog.Logger, ln net.Listener, h http.Handler) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve dict simulator on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		return fmt.Errorf("serve dict simulator on %s: %w", ln.Addr(), serr)
	}
	if err != nil {
		return fmt.Errorf("shut down dict simulator on %s: %w", ln.Addr(), err)
	}
	return nil
}
