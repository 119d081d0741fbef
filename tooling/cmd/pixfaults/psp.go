package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
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
	"strings"
	"syscall"
	"time"

	"github.com/pixbank/pix/internal/tooling/devpki"
	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
)

// pspServer is the PSP the worker sends outgoing PIX to: the simulator,
// served from this process on a fixed loopback port. It runs here rather
// than as a cmd/pspsim process because the simulator keeps its transfers
// in memory: "the PSP is down" must stop its API (connections refused)
// without making it forget what it holds, which a killed process would.
//
// With credentials (the stack's), its API speaks as the API Pix's PSPs
// do: OAuth 2.0 client credentials and mutual TLS, its token endpoint
// beside it, its webhooks sent over mutual TLS; the suite drives it
// through its control routes on a plain listener of their own, which
// stays up when a case stops the API. Without (the package's tests), one
// plain listener serves both, as before.
type pspServer struct {
	sim  *pspsim.Simulator
	addr string
	// apiURL is the PSP's API (pixd's PSP_URL); url its control routes,
	// which the suite calls (the same listener without credentials).
	apiURL  string
	url     string
	logFile *os.File
	// cancel stops the running Serve, whose result arrives on served.
	cancel context.CancelFunc
	served chan error
	// stopControl stops the control listener's ServeControl, whose result
	// arrives on controlServed; nil without credentials.
	stopControl   context.CancelFunc
	controlServed chan error
	client        *http.Client
	cred          *pspCredentials
}

// pspCredentials are the simulator's API Pix security and what pixd needs
// to meet it: the development PKI in pkiDir (devpki.EnsureDir: the
// simulator's server and client certificates, the bank's client
// certificate, one authority), our OAuth 2.0 client (clientID, its secret
// in secretFile, which pixd reads at each token request: the
// wrong-secret case rewrites it), tokens valid tokenLifetime, and the
// bank's API Pix webhook route the simulator notifies over mutual TLS.
type pspCredentials struct {
	pkiDir        string
	clientID      string
	secretFile    string
	tokenLifetime time.Duration
	webhookURL    string
}

func (c *pspCredentials) path(name string) string { return filepath.Join(c.pkiDir, name) }

// secret reads our client secret from its file, as pixd does.
func (c *pspCredentials) secret() (string, error) {
	b, err := os.ReadFile(c.secretFile)
	if err != nil {
		return "", fmt.Errorf("psp client secret: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// simOptions are the simulator's OAuth 2.0 (our client and its secret),
// its API's mutual TLS (its server certificate; client certificates of the
// authority required) and its webhooks' (its client certificate, the
// authority as the bank's CA).
func (c *pspCredentials) simOptions(o *pspsim.Options) error {
	secret, err := c.secret()
	if err != nil {
		return err
	}
	server, err := tls.LoadX509KeyPair(c.path(devpki.PSPServerCertFile), c.path(devpki.PSPServerKeyFile))
	if err != nil {
		return fmt.Errorf("psp simulator server certificate: %w", err)
	}
	client, err := tls.LoadX509KeyPair(c.path(devpki.PSPClientCertFile), c.path(devpki.PSPClientKeyFile))
	if err != nil {
		return fmt.Errorf("psp simulator client certificate: %w", err)
	}
	caPEM, err := os.ReadFile(c.path(devpki.CAFile))
	if err != nil {
		return fmt.Errorf("development ca: %w", err)
	}
	ca := x509.NewCertPool()
	if !ca.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("development ca %s: no PEM certificate", c.path(devpki.CAFile))
	}
	o.OAuth = &pspsim.OAuthOptions{Clients: map[string]string{c.clientID: secret}, TokenLifetime: c.tokenLifetime}
	o.TLS = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{server},
		ClientCAs: ca, ClientAuth: tls.RequireAndVerifyClientCert}
	o.WebhookURL = c.webhookURL
	o.WebhookTLS = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{client}, RootCAs: ca}
	return nil
}

// env is pixd's PSP client for the simulator at apiURL: the token
// endpoint, our client, the secret's file, our client certificate and the
// authority as the PSP's CA.
func (c *pspCredentials) env(apiURL string) []string {
	return []string{
		"PSP_URL=" + apiURL,
		"PSP_OAUTH_TOKEN_URL=" + apiURL + pspsim.TokenPath,
		"PSP_CLIENT_ID=" + c.clientID,
		"PSP_CLIENT_SECRET_FILE=" + c.secretFile,
		"PSP_TLS_CERT_FILE=" + c.path(devpki.BankClientCertFile),
		"PSP_TLS_KEY_FILE=" + c.path(devpki.BankClientKeyFile),
		"PSP_CA_FILE=" + c.path(devpki.CAFile),
	}
}

// newPSPServer serves the simulator, with cred's security when cred is
// not nil.
func newPSPServer(dir string, cred *pspCredentials) (*pspServer, error) {
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
	// Transfers settle quickly unless a case says otherwise, so that a
	// case's drain is about its fault, not about the settlement.
	opts := pspsim.Options{Logger: slog.New(slog.NewJSONHandler(f, nil)), DefaultSettleAfter: 300 * time.Millisecond}
	// As many idle connections kept as the burst case posts PIX at once:
	// a connection each, not one opened per PIX.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = burstSenders
	p := &pspServer{addr: addr, apiURL: "http://" + addr, url: "http://" + addr, logFile: f,
		client: &http.Client{Timeout: 10 * time.Second, Transport: tr}, cred: cred}
	if cred != nil {
		if err := cred.simOptions(&opts); err != nil {
			f.Close()
			return nil, err
		}
		p.apiURL = "https://" + addr
	}
	p.sim = pspsim.New(opts)
	if cred != nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("psp simulator control listener: %w", err)
		}
		p.url = "http://" + ln.Addr().String()
		ctx, cancel := context.WithCancel(context.Background())
		p.stopControl, p.controlServed = cancel, make(chan error, 1)
		go func() { p.controlServed <- p.sim.ServeControl(ctx, ln) }()
	}
	if err := p.start(); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
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
	if p.stopControl != nil {
		p.stopControl()
		<-p.controlServed // its error does not matter on the way out
		p.stopControl = nil
	}
	p.logFile.Close()
}

// setBehavior tells the simulator what to do with pixKey's transfers, over
// its HTTP API (PUT /behaviors/{pix_key}), as an operator would.
func (p *pspServer) setBehavior(ctx context.Context, pixKey string, b pspsim.Behavior) error {
	if err := p.send(ctx, http.MethodPut, "/behaviors/"+url.PathEscape(pixKey), b, http.StatusNoContent, nil); err != nil {
		return fmt.Errorf("set psp behaviour of %s: %w", pixKey, err)
	}
	return nil
}

// send calls one of the simulator's control routes with body as JSON (none
// when nil), wants the answer want, and decodes it into v when v is not
// nil.
func (p *pspServer) send(ctx context.Context, method, path string, body any, want int, v any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.url+path, rd)
	if err != nil {
		return err
	}
	res, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("psp simulator %s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != want {
		b, _ := io.ReadAll(res.Body)
		return fmt.Errorf("psp simulator %s %s: http %d: %s", method, path, res.StatusCode, b)
	}
	if v != nil {
		if err := json.NewDecoder(res.Body).Decode(v); err != nil {
			return fmt.Errorf("psp simulator %s %s: %w", method, path, err)
		}
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
	return p.send(ctx, http.MethodGet, path, nil, http.StatusOK, v)
}
