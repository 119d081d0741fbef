// Command pspsim runs the PSP simulator (package pspsim): an in-memory PSP
// with the HTTP API that the worker's psp.HTTPClient speaks, told per Pix
// key to accept, reject, time out, fail, lose its answers, answer
// resubmissions 409 or refuse our credentials (PUT /behaviors/{pix_key}),
// and per PIX what to do with its devoluções (PUT /refund-behaviors/{e2eid}).
//
//	PSP_SIM_ADDR          listen address (default 127.0.0.1:8090)
//	PSP_SIM_SETTLE_AFTER  how long an accepted transfer stays pending, and a
//	                      devolução EM_PROCESSAMENTO, when the behaviour
//	                      does not say (default 100ms)
//	PSP_SIM_WEBHOOK_URL   the bank's API Pix webhook, for example
//	                      http://127.0.0.1:8080/webhooks/api-pix/pix: the
//	                      PIX told to POST /sim/pix, and the outcomes of
//	                      their devoluções, are delivered there (default:
//	                      none, the bank polls)
//	PSP_SIM_WEBHOOK_SECRET       the key the webhooks are signed with:
//	                             whsec_<base64>, or the bank's
//	                             WEBHOOK_SECRETS value (its first key);
//	                             unset sends them unsigned
//	PSP_SIM_WEBHOOK_SECRET_FILE  a file holding it instead (not both)
//	LOG_LEVEL             debug, info, warn, error (default info)
//
// It logs JSON to stderr, one line per request, and shuts down gracefully
// on SIGINT or SIGTERM. `pspsim healthcheck URL` GETs URL and exits 0 on a
// 2xx answer: its container's healthcheck (the image has no shell nor curl).
package main

import (
	"cmp"
	"context"
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

const usage = "usage: pspsim | pspsim healthcheck URL (configured by PSP_SIM_ADDR, PSP_SIM_SETTLE_AFTER, PSP_SIM_WEBHOOK_URL, " +
	"PSP_SIM_WEBHOOK_SECRET or PSP_SIM_WEBHOOK_SECRET_FILE, LOG_LEVEL)"

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
	addr := cmp.Or(os.Getenv("PSP_SIM_ADDR"), "127.0.0.1:8090")
	var settleAfter time.Duration
	if v := os.Getenv("PSP_SIM_SETTLE_AFTER"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("PSP_SIM_SETTLE_AFTER: want a positive duration such as 200ms, got %q", v)
		}
		settleAfter = d
	}
	webhookURL := os.Getenv("PSP_SIM_WEBHOOK_URL")
	secret, err := webhookSecret(os.Getenv)
	if err != nil {
		return err
	}
	// Checked before listening, so that a bad secret is a clear error at
	// start rather than Serve's.
	if _, err := pspsim.ParseWebhookSecret(secret); err != nil {
		return fmt.Errorf("PSP_SIM_WEBHOOK_SECRET: %w", err)
	}
	if secret != "" && webhookURL == "" {
		return errors.New("PSP_SIM_WEBHOOK_SECRET is set but PSP_SIM_WEBHOOK_URL is not: nothing would be signed")
	}
	log := logging.New(os.Stderr, os.Getenv("LOG_LEVEL")).With("role", "pspsim")
	sim := pspsim.New(pspsim.Options{Logger: log, DefaultSettleAfter: settleAfter, WebhookURL: webhookURL, WebhookSecret: secret})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	log.Info("psp simulator listening", "addr", ln.Addr().String(), "webhook_url", webhookURL, "webhooks_signed", secret != "")
	return sim.Serve(ctx, ln)
}

// webhookSecret is PSP_SIM_WEBHOOK_SECRET, or the content of the file
// PSP_SIM_WEBHOOK_SECRET_FILE names (trailing newline trimmed); "" when
// neither is set.
func webhookSecret(getenv func(string) string) (string, error) {
	secret, path := getenv("PSP_SIM_WEBHOOK_SECRET"), getenv("PSP_SIM_WEBHOOK_SECRET_FILE")
	switch {
	case secret != "" && path != "":
		return "", errors.New("PSP_SIM_WEBHOOK_SECRET and PSP_SIM_WEBHOOK_SECRET_FILE: set one, not both")
	case path == "":
		return secret, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("PSP_SIM_WEBHOOK_SECRET_FILE: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}
