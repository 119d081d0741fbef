// Command pspsim runs the PSP simulator (package pspsim): an in-memory PSP
// that speaks the part of the Central Bank's API Pix the bank uses (GET
// /pix, devoluções, the webhook registration, its webhooks), and the
// bank's transfer interface, told per Pix key to accept, reject, time out,
// fail, lose its answers, answer resubmissions 409 or refuse our
// credentials (PUT /behaviors/{pix_key}), per PIX what to do with its
// devoluções (PUT /refund-behaviors/{e2eid}), per receiver key what to do
// with its webhooks (PUT /webhook-behaviors/{chave}), and PSP-wide faults
// (PUT /sim/token-endpoint, /sim/webhook-drop, /sim/oauth-clients/{id}).
//
//	PSP_SIM_ADDR          listen address of the API (default 127.0.0.1:8090)
//	PSP_SIM_CONTROL_ADDR  a plain-HTTP listener for the control routes alone
//	                      (behaviours, /sim/..., /healthz), for the tools
//	                      that drive a simulator whose API is behind mutual
//	                      TLS (default: none; the API listener serves them too)
//	PSP_SIM_SETTLE_AFTER  how long an accepted transfer stays pending, and a
//	                      devolução EM_PROCESSAMENTO, when the behaviour
//	                      does not say (default 100ms)
//	PSP_SIM_API_BASE_PATH the API's path too, as a PSP_URL with a path
//	                      (/api/v2; default: the root only)
//
// TLS of the API (and token endpoint) listener:
//
//	PSP_SIM_TLS_CERT_FILE, PSP_SIM_TLS_KEY_FILE  its certificate and key
//	                      (PEM): TLS on (default: plain HTTP)
//	PSP_SIM_TLS_CLIENT_CA_FILE  the CA of the bank's client certificates:
//	                      mutual TLS, a client certificate it issued
//	                      required (needs the two above)
//
// OAuth 2.0 client credentials (off unless PSP_SIM_OAUTH_CLIENT_ID is set):
//
//	PSP_SIM_OAUTH_CLIENT_ID      the client id the token endpoint
//	                             (POST /oauth/token, HTTP Basic) accepts
//	PSP_SIM_OAUTH_CLIENT_SECRET  its secret, or PSP_SIM_OAUTH_CLIENT_SECRET_FILE
//	                             a file holding it (not both)
//	PSP_SIM_OAUTH_TOKEN_LIFETIME how long a token is valid (default 5m)
//	PSP_SIM_OAUTH_SCOPES         the scopes it may be granted (default
//	                             "pix.read pix.write webhook.read webhook.write")
//
// Webhooks:
//
//	PSP_SIM_WEBHOOK_URL   the bank's API Pix webhook, for example
//	                      http://127.0.0.1:8080/webhooks/api-pix/pix: the
//	                      PIX told to POST /sim/pix whose key has no webhook
//	                      registered (PUT /webhook/{chave}), and the
//	                      outcomes of their devoluções, are delivered there
//	                      (default: none)
//	PSP_SIM_MED_WEBHOOK_URL  the base of the bank's MED notices, for
//	                      example http://127.0.0.1:8080/webhooks/med: the
//	                      infraction reports and refund requests of POST
//	                      /sim/med/... are noticed at /infraction-reports
//	                      and /refunds under it, signed and over TLS as the
//	                      webhooks (default: none)
//	PSP_SIM_WEBHOOK_SECRET       the key the webhooks are signed with:
//	                             whsec_<base64>, or the bank's
//	                             WEBHOOK_SECRETS value (its first key);
//	                             unset sends them unsigned, as the API Pix
//	PSP_SIM_WEBHOOK_SECRET_FILE  a file holding it instead (not both)
//	PSP_SIM_WEBHOOK_TLS_CERT_FILE, PSP_SIM_WEBHOOK_TLS_KEY_FILE  the
//	                      simulator's client certificate for the bank's
//	                      mutual TLS (default: none)
//	PSP_SIM_WEBHOOK_CA_FILE  the CA of the bank's server certificate
//	                      (default: the system's roots)
//	PSP_SIM_WEBHOOKS_TXID_ONLY   true: only a PIX with a txid is notified,
//	                      as the API Pix says; the others only in GET /pix
//
//	PSP_SIM_REFUNDS_NEED_PIX  true: a devolução of a PIX the simulator did
//	                      not receive is 404 NaoEncontrado (default: made)
//	LOG_LEVEL             debug, info, warn, error (default info)
//
// It logs JSON to stderr, one line per request (never a secret or a
// token), and shuts down gracefully on SIGINT or SIGTERM.
// `pspsim healthcheck URL` GETs URL and exits 0 on a 2xx answer: its
// container's healthcheck (the image has no shell nor curl).
package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/internal/tooling/pspsim"
)

const usage = "usage: pspsim | pspsim healthcheck URL (configured by PSP_SIM_* variables and LOG_LEVEL: see the command's doc)"

func main() { cli.Main("pspsim", run) }

func run(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "healthcheck" {
		if len(args) != 2 {
			return errors.New("usage: pspsim healthcheck URL")
		}
		return cli.Probe(ctx, args[1])
	}
	if len(args) != 0 {
		return errors.New(usage)
	}
	opts, err := options(os.Getenv)
	if err != nil {
		return err
	}
	addr := cmp.Or(os.Getenv("PSP_SIM_ADDR"), "127.0.0.1:8090")
	controlAddr := os.Getenv("PSP_SIM_CONTROL_ADDR")
	log := logging.New(os.Stderr, os.Getenv("LOG_LEVEL")).With("role", "pspsim")
	opts.Logger = log
	sim := pspsim.New(opts)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	var controlLn net.Listener
	if controlAddr != "" {
		if controlLn, err = net.Listen("tcp", controlAddr); err != nil {
			_ = ln.Close()
			return fmt.Errorf("listen on %s: %w", controlAddr, err)
		}
	}
	log.Info("psp simulator listening", "addr", ln.Addr().String(), "tls", opts.TLS != nil,
		"mutual_tls", opts.TLS != nil && opts.TLS.ClientAuth == tls.RequireAndVerifyClientCert, "oauth", opts.OAuth != nil,
		"api_base_path", opts.APIBasePath, "control_addr", controlAddr, "webhook_url", opts.WebhookURL, "med_webhook_url", opts.MEDWebhookURL,
		"webhooks_signed", opts.WebhookSecret != "", "webhook_client_certificate", opts.WebhookTLS != nil && len(opts.WebhookTLS.Certificates) > 0)
	if controlLn == nil {
		return sim.Serve(ctx, ln)
	}
	// Both servers are this function's: each stops with ctx (or when the
	// other fails), and both are waited for.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 2)
	go func() { errc <- sim.Serve(ctx, ln) }()
	go func() { errc <- sim.ServeControl(ctx, controlLn) }()
	first := <-errc
	cancel()
	return errors.Join(first, <-errc)
}

// options reads the simulator's Options (but its Logger) from getenv.
func options(getenv func(string) string) (pspsim.Options, error) {
	opts := pspsim.Options{
		WebhookURL:       getenv("PSP_SIM_WEBHOOK_URL"),
		MEDWebhookURL:    getenv("PSP_SIM_MED_WEBHOOK_URL"),
		APIBasePath:      getenv("PSP_SIM_API_BASE_PATH"),
		WebhooksTxidOnly: getenv("PSP_SIM_WEBHOOKS_TXID_ONLY") == "true",
		RefundsNeedPix:   getenv("PSP_SIM_REFUNDS_NEED_PIX") == "true",
	}
	var err error
	if opts.DefaultSettleAfter, err = positiveDuration(getenv, "PSP_SIM_SETTLE_AFTER"); err != nil {
		return opts, err
	}
	if opts.WebhookSecret, err = secret(getenv, "PSP_SIM_WEBHOOK_SECRET"); err != nil {
		return opts, err
	}
	// Checked before listening, so that a bad secret is a clear error at
	// start rather than Serve's.
	if _, err := pspsim.ParseWebhookSecret(opts.WebhookSecret); err != nil {
		return opts, fmt.Errorf("PSP_SIM_WEBHOOK_SECRET: %w", err)
	}
	if opts.TLS, err = serverTLS(getenv); err != nil {
		return opts, err
	}
	if opts.WebhookTLS, err = webhookTLS(getenv); err != nil {
		return opts, err
	}
	if opts.OAuth, err = oauth(getenv); err != nil {
		return opts, err
	}
	return opts, nil
}

// positiveDuration reads the duration name, 0 when unset.
func positiveDuration(getenv func(string) string, name string) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s: want a positive duration such as 200ms, got %q", name, v)
	}
	return d, nil
}

// secret is the variable name, or the content of the file name_FILE names
// (trailing newline trimmed); "" when neither is set. Its errors never
// carry the secret.
func secret(getenv func(string) string, name string) (string, error) {
	value, path := getenv(name), getenv(name+"_FILE")
	switch {
	case value != "" && path != "":
		return "", fmt.Errorf("%s and %s_FILE: set one, not both", name, name)
	case path == "":
		return value, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s_FILE: %w", name, err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// serverTLS is the API listener's TLS: nil without a certificate; mutual
// with a client CA.
func serverTLS(getenv func(string) string) (*tls.Config, error) {
	certFile, keyFile, caFile := getenv("PSP_SIM_TLS_CERT_FILE"), getenv("PSP_SIM_TLS_KEY_FILE"), getenv("PSP_SIM_TLS_CLIENT_CA_FILE")
	if certFile == "" && keyFile == "" {
		if caFile != "" {
			return nil, errors.New("PSP_SIM_TLS_CLIENT_CA_FILE needs PSP_SIM_TLS_CERT_FILE and PSP_SIM_TLS_KEY_FILE")
		}
		return nil, nil
	}
	cert, err := keyPair("PSP_SIM_TLS", certFile, keyFile)
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if caFile != "" {
		if cfg.ClientCAs, err = certPool("PSP_SIM_TLS_CLIENT_CA_FILE", caFile); err != nil {
			return nil, err
		}
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// webhookTLS is the webhook deliveries' TLS: the simulator's client
// certificate and the bank's CA; nil when neither is set.
func webhookTLS(getenv func(string) string) (*tls.Config, error) {
	certFile, keyFile, caFile := getenv("PSP_SIM_WEBHOOK_TLS_CERT_FILE"), getenv("PSP_SIM_WEBHOOK_TLS_KEY_FILE"), getenv("PSP_SIM_WEBHOOK_CA_FILE")
	if certFile == "" && keyFile == "" && caFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if certFile != "" || keyFile != "" {
		cert, err := keyPair("PSP_SIM_WEBHOOK_TLS", certFile, keyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if caFile != "" {
		pool, err := certPool("PSP_SIM_WEBHOOK_CA_FILE", caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// keyPair loads prefix_CERT_FILE and prefix_KEY_FILE, both required.
func keyPair(prefix, certFile, keyFile string) (tls.Certificate, error) {
	if certFile == "" || keyFile == "" {
		return tls.Certificate{}, fmt.Errorf("%s_CERT_FILE and %s_KEY_FILE: set both", prefix, prefix)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s_CERT_FILE, %s_KEY_FILE: %w", prefix, prefix, err)
	}
	return cert, nil
}

// certPool reads the PEM certificates of the file name names.
func certPool(name, path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: no PEM certificate in %s", name, path)
	}
	return pool, nil
}

// oauth is OAuth's options: nil without PSP_SIM_OAUTH_CLIENT_ID.
func oauth(getenv func(string) string) (*pspsim.OAuthOptions, error) {
	id := getenv("PSP_SIM_OAUTH_CLIENT_ID")
	clientSecret, err := secret(getenv, "PSP_SIM_OAUTH_CLIENT_SECRET")
	if err != nil {
		return nil, err
	}
	if id == "" {
		if clientSecret != "" {
			return nil, errors.New("PSP_SIM_OAUTH_CLIENT_SECRET is set but PSP_SIM_OAUTH_CLIENT_ID is not")
		}
		return nil, nil
	}
	if clientSecret == "" {
		return nil, errors.New("PSP_SIM_OAUTH_CLIENT_ID needs PSP_SIM_OAUTH_CLIENT_SECRET or PSP_SIM_OAUTH_CLIENT_SECRET_FILE")
	}
	o := &pspsim.OAuthOptions{Clients: map[string]string{id: clientSecret}}
	if o.TokenLifetime, err = positiveDuration(getenv, "PSP_SIM_OAUTH_TOKEN_LIFETIME"); err != nil {
		return nil, err
	}
	if v := getenv("PSP_SIM_OAUTH_SCOPES"); v != "" {
		o.Scopes = strings.Fields(v)
	}
	return o, nil
}
