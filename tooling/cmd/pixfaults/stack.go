package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/tooling/devauth"
	"github.com/pixbank/pix/internal/tooling/devpki"
	"github.com/pixbank/pix/internal/tooling/dictsim"
	"github.com/pixbank/pix/internal/tooling/natstest"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/internal/webhooksig"
)

// stack is the service under test: a Temporal dev server, the API and the
// worker (with the dispatchers and the outbox relay) as separate processes;
// and, in this process, the PSP simulator the worker sends outgoing PIX to,
// the NATS server the relay publishes to, and a durable consumer of the
// event stream that runs for the whole suite.
//
// The PSP is met as the API Pix requires: the worker's PSP client gets
// OAuth 2.0 tokens (of pspTokenLifetime: they expire and are renewed
// during the cases) from the simulator's token endpoint, over mutual TLS
// with the bank's client certificate, its secret in a file; the
// simulator's own webhooks (the PIX it is told it received) go over mutual
// TLS, unsigned, to a second API process whose webhook listener takes
// them on the simulator's certificate alone (WEBHOOK_MTLS_PSPS), with
// signatures required, as production. The load's webhooks stay signed, on
// the first API's plain listener. The catch-up lists the PSP's record
// every pspCatchUpInterval.
type stack struct {
	temporal    *temporaltest.Server
	api, worker *process
	// pspWebhooks is the API process that takes the simulator's webhooks
	// over mutual TLS; pspWebhooksURL its plain listener (/readyz).
	pspWebhooks    *process
	pspWebhooksURL string
	apiURL         string
	// workerMetricsURL is the worker's GET /metrics (WORKER_METRICS_ADDR).
	workerMetricsURL string
	pool             *pgxpool.Pool
	psp              *pspServer
	dict             *dictsim.TestServer
	// dictBroken are the DICT simulator's findings against dict-api.yaml
	// (a request of ours, or an answer of its own, that breaks it).
	dictMu     sync.Mutex
	dictBroken []string
	nats       *natstest.Server
	events     *eventLog
	// issuer mints the bearer tokens of the customer routes, which the API
	// requires (a development issuer of the suite's own, in dir/auth); nil
	// when the stack is a test's stand-in: no token is sent.
	issuer *auth.DevIssuer
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
	// The API requires bearer tokens on the customer routes, as in
	// production; the suite is their issuer, with a key pair of its own.
	issuer := devauth.Settings{KeyDir: filepath.Join(dir, "auth"), Issuer: devauth.DefaultIssuer, Audience: devauth.DefaultAudience}
	if st.issuer, err = issuer.Open(); err != nil {
		return nil, err
	}
	// The simulator's webhooks go to the second API's webhook listener,
	// whose port is fixed before the simulator starts.
	ports, err := stablePorts(4)
	if err != nil {
		return nil, err
	}
	pspWebhooksPort, pspWebhooksTLSPort, metricsPort := ports[0], ports[1], ports[2]
	cred := &pspCredentials{pkiDir: filepath.Join(dir, "pki"), clientID: pspClientID, tokenLifetime: pspTokenLifetime,
		webhookURL: fmt.Sprintf("https://127.0.0.1:%d/webhooks/api-pix/pix", pspWebhooksTLSPort)}
	cred.secretFile = cred.path(devpki.ClientSecretFile)
	if err := devpki.EnsureDir(cred.pkiDir); err != nil {
		return nil, err
	}
	if st.psp, err = newPSPServer(dir, cred); err != nil {
		return nil, err
	}
	dictDir := filepath.Join(dir, "dict")
	if err := os.MkdirAll(dictDir, 0o700); err != nil {
		st.close()
		return nil, err
	}
	// The simulator's own check of every request and answer against
	// dict-api.yaml is logged: a violation is a defect the MED case
	// reports (dictViolations).
	if st.dict, err = dictsim.NewServer(dictDir, dictsim.Options{ListLag: dict.ListLag, OnViolation: st.dictViolation}); err != nil {
		st.close()
		return nil, err
	}
	if st.nats, err = natstest.Start(filepath.Join(dir, "nats")); err != nil {
		st.close()
		return nil, err
	}
	// The consumer exists before the first event, and creates the stream.
	if st.events, err = consumeEvents(ctx, st.nats.URL); err != nil {
		st.close()
		return nil, err
	}
	if st.temporal, err = temporaltest.Start(dir); err != nil {
		st.close()
		return nil, err
	}
	// The API is killed and started again on this port (case 2).
	port := ports[3]
	st.apiURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	env := []string{
		"TEMPORAL_ADDRESS=" + st.temporal.Address,
		fmt.Sprintf("HTTP_ADDR=127.0.0.1:%d", port),
		// An attempt stuck on a locked row is cut off well within the
		// 20 s lock of case 6, and retried.
		"INBOX_ACTIVITY_TIMEOUT=5s",
		"DISPATCH_POLL_INTERVAL=200ms",
		"DISPATCH_RETRY_MAX_DELAY=2s",
		// A transfer whose saga run failed (visibly) is started again
		// within a case's drain, not after the default 2 minutes, however
		// long its row has been open.
		"DISPATCH_RECHECK_AFTER=15s",
		"DISPATCH_RECHECK_MAX=15s",
		"LOG_LEVEL=info",
		// Short enough that a hanging PSP is given up on, and retried,
		// several times within a case.
		"PSP_TIMEOUT=3s",
		"PSP_RETRY_INITIAL_INTERVAL=200ms",
		"PSP_RETRY_MAX_INTERVAL=3s",
		"TRANSFER_SETTLEMENT_POLL_MAX=2s",
		// A devolução the PSP refused is reversed after a quiet period and
		// a second look at its record: 5 s rather than a minute, so that
		// the refusals of case 20 end within the case (the mechanism, not
		// its length, is what the case checks).
		"REFUND_REFUSAL_QUIET_PERIOD=5s",
		// Refunds poll the PSP's record as transfers poll their settlement.
		"REFUND_POLL_MAX=2s",
		// Ours, not the machine's shared NATS (which scripts/lib.sh may
		// have put in NATS_URL): the NATS cases stop it.
		"NATS_URL=" + st.nats.URL,
		// Small rounds: a relay killed while it drains a backlog dies
		// between publishing a round and marking it, not after.
		"OUTBOX_BATCH_SIZE=20",
		// The catch-up lists the PSP's record often, up to 2 s ago (not a
		// minute: a webhook arrives within milliseconds here): a PIX whose
		// webhook was dropped is credited within a case, in two intervals
		// (case 22 measures it).
		"PSP_CATCHUP_INTERVAL=" + pspCatchUpInterval.String(),
		"PSP_CATCHUP_GRACE=" + pspCatchUpGrace.String(),
		// The default, said here because the burst case's bound counts it.
		"PSP_CATCHUP_OVERLAP=" + pspCatchUpOverlap.String(),
		// MED with the DICT, as production: the simulator's address, the
		// bank's certificate of its mutual TLS (which signs the writes
		// too), its CA and the DICT's signing certificate; listed often,
		// the lists' lag as the grace. (scripts/lib.sh's development
		// default, MED_DICT_DISABLED=true, said false over it.)
		"MED_DICT_DISABLED=false",
		"MED_DICT_URL=" + st.dict.Config.BaseURL,
		"MED_DICT_CERT_FILE=" + st.dict.Config.CertFile,
		"MED_DICT_KEY_FILE=" + st.dict.Config.KeyFile,
		"MED_DICT_CA_FILE=" + st.dict.Config.CAFile,
		"MED_DICT_VERIFY_CERT_FILE=" + st.dict.Config.DICTCertFile,
		"BANK_ISPB=" + dictsim.TestBank,
		"MED_DICT_LIST_INTERVAL=" + dictListInterval.String(),
		"MED_DICT_LIST_GRACE=" + dict.ListLag.String(),
		"MED_DICT_LIST_OVERLAP=1m",
	}
	// The PSP at PSP_URL, the simulator, by its name in WEBHOOK_SECRETS
	// (the secret its webhooks are signed with): the psp-webhooks API
	// knows it by a second name too (pspWebhooksPSP), and with two PSPs
	// configured PSP_NAME is required (internal/config: the catch-up's
	// credits name their PSP, whose MED notices are then taken).
	if secrets, err := webhooksig.ParseSecrets(os.Getenv("WEBHOOK_SECRETS")); err == nil && len(secrets) > 0 {
		env = append(env, "PSP_NAME="+secrets[0].PSP)
	}
	env = append(env, cred.env(st.psp.apiURL)...)
	env = append(env, issuer.APIEnv()...)
	// The service encrypts its Temporal payloads, as production's must, so
	// that the faults hit the encrypted path: with the environment's keys,
	// else with the suite's own (a test key, never a real one).
	_, inlineKeys := os.LookupEnv("TEMPORAL_CODEC_KEYS")
	_, fileKeys := os.LookupEnv("TEMPORAL_CODEC_KEYS_FILE")
	if !inlineKeys && !fileKeys {
		env = append(env, "TEMPORAL_CODEC_KEYS="+faultsCodecKeys)
	}
	pixd := os.Getenv("PIXD")
	migrate := exec.CommandContext(ctx, pixd, "migrate")
	migrate.Env = environ(env)
	if b, err := migrate.CombinedOutput(); err != nil {
		st.close()
		return nil, fmt.Errorf("migrate: %w: %s", err, b)
	}
	st.api = &process{name: "api", args: []string{pixd, "api"}, env: env, logDir: dir}
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", metricsPort)
	st.workerMetricsURL = "http://" + metricsAddr + "/metrics"
	st.worker = &process{name: "worker", args: []string{pixd, "worker"}, env: append(slices.Clip(env), "WORKER_METRICS_ADDR="+metricsAddr), logDir: dir}
	// The PSP's webhooks: TLS on the webhook listener alone, a client
	// certificate of the authority required, the simulator's (CN
	// devpki.PSPClientName) naming its PSP; its main listener (plain)
	// answers /readyz. Another PSP name than WEBHOOK_SECRETS's, whose PSP
	// must sign.
	st.pspWebhooksURL = fmt.Sprintf("http://127.0.0.1:%d", pspWebhooksPort)
	st.pspWebhooks = &process{name: "psp-webhooks", args: []string{pixd, "api"}, logDir: dir, env: append(slices.Clip(env),
		fmt.Sprintf("HTTP_ADDR=127.0.0.1:%d", pspWebhooksPort),
		fmt.Sprintf("WEBHOOK_HTTP_ADDR=127.0.0.1:%d", pspWebhooksTLSPort),
		"TLS_LISTENERS=webhooks",
		"TLS_CERT_FILE="+cred.path(devpki.WebhookServerCertFile),
		"TLS_KEY_FILE="+cred.path(devpki.WebhookServerKeyFile),
		"TLS_CLIENT_CA_FILE="+cred.path(devpki.CAFile),
		"WEBHOOK_MTLS_PSPS="+pspWebhooksPSP+"="+devpki.PSPClientName,
	)}
	for _, p := range []*process{st.api, st.worker, st.pspWebhooks} {
		if err := p.start(); err != nil {
			st.close()
			return nil, err
		}
	}
	for _, u := range []string{st.apiURL, st.pspWebhooksURL} {
		if err := waitReady(ctx, u); err != nil {
			st.close()
			return nil, err
		}
	}
	if st.pool, err = db.Open(ctx, os.Getenv("DATABASE_URL"), 4); err != nil {
		st.close()
		return nil, err
	}
	return st, nil
}

// dictViolation keeps a finding of the DICT simulator against
// dict-api.yaml.
func (st *stack) dictViolation(err error) {
	st.dictMu.Lock()
	defer st.dictMu.Unlock()
	st.dictBroken = append(st.dictBroken, err.Error())
}

// dictViolations are the DICT simulator's findings since the last call.
func (st *stack) dictViolations() []string {
	st.dictMu.Lock()
	defer st.dictMu.Unlock()
	out := st.dictBroken
	st.dictBroken = nil
	return out
}

// The stack's PSP security: our client id at the simulator; its tokens'
// lifetime, short, so that tokens are renewed all through every case (the
// PSP client renews one half-way through so short a lifetime, and sends it
// for three quarters of it: pspTokenUsable, 6 s), and so that the token in
// hand when the token endpoint goes down runs out while the case's load
// still asks (the smoke load ends 9 s into the outage); the catch-up's
// period, grace and overlap; the PSP name of the simulator's webhooks
// (WEBHOOK_MTLS_PSPS, the inbox rows' psp).
const (
	pspClientID        = "pix-bank"
	pspTokenLifetime   = 8 * time.Second
	pspCatchUpInterval = 5 * time.Second
	pspCatchUpGrace    = 2 * time.Second
	pspCatchUpOverlap  = 10 * time.Minute
	pspWebhooksPSP     = "pspsim"
	// dictListInterval is the MED lister's period (MED_DICT_LIST_INTERVAL):
	// a report is taken in within it and the lists' 5 s lag.
	dictListInterval = 2 * time.Second
)

// stablePorts are n distinct free ports (temporaltest.StablePort), for
// listeners started again on the same port.
func stablePorts(n int) ([]int, error) {
	var out []int
	for len(out) < n {
		p, err := temporaltest.StablePort()
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// faultsCodecKeys is the suite's TEMPORAL_CODEC_KEYS: one AES-256 key of
// 32 bytes 0x5a, for the suite's throwaway Temporal server only.
const faultsCodecKeys = "pixfaults=WlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlpaWlo="

// customerToken is a bearer token for a customer request acting for
// accounts with scopes, valid for ttl; "" when the stack has no issuer.
func (st *stack) customerToken(sub string, scopes, accounts []string, ttl time.Duration) (string, error) {
	if st.issuer == nil {
		return "", nil
	}
	return st.issuer.Mint(auth.TokenSpec{Subject: sub, Scopes: scopes, Accounts: accounts, TTL: ttl}, time.Now())
}

// customerTokens mints, and mints again before they expire, the tokens of
// one client of the customer routes (one subject: its Idempotency-Keys
// replay across a renewal); nil when the stack has no issuer.
func (st *stack) customerTokens(sub string, scopes, accounts []string) func() (string, error) {
	if st.issuer == nil {
		return nil
	}
	return devauth.NewTokens(st.issuer, auth.TokenSpec{Subject: sub, Scopes: scopes, Accounts: accounts, TTL: 15 * time.Minute}, nil).Token
}

// waitReady waits until the API answers /readyz with 200.
func (st *stack) waitReady(ctx context.Context) error { return waitReady(ctx, st.apiURL) }

// waitReady waits until the API at apiURL answers /readyz with 200.
func waitReady(ctx context.Context, apiURL string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, apiURL+"/readyz", nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the API at %s is not ready after 60 s", apiURL)
}

func (st *stack) close() {
	for _, p := range []*process{st.api, st.worker, st.pspWebhooks} {
		if p != nil {
			p.stop()
		}
	}
	if st.temporal != nil {
		st.temporal.Stop()
	}
	if st.events != nil {
		st.events.close()
	}
	if st.nats != nil {
		st.nats.Stop()
	}
	if st.psp != nil {
		st.psp.close()
	}
	if st.dict != nil {
		st.dict.Server.Close()
	}
	if st.pool != nil {
		st.pool.Close()
	}
}
