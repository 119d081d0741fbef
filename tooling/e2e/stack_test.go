//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"golang.org/x/sync/errgroup"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/codec"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/internal/tooling/natstest"
	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/internal/webhooksig"
	"github.com/pixbank/pix/saga/reconcile"
	"github.com/pixbank/pix/worker"
	"github.com/pixbank/pix/workflows"
)

// shared is the Temporal dev server of the package's tests; each test has
// its own task queue and database schema on it.
var shared *temporaltest.Server

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// The whole package is the integration tier: every test skips
		// (newStack asks dbtest, which skips under -short).
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "pix-e2e-temporal-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared, err = temporaltest.Start(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	e2eJWKSFile = filepath.Join(dir, "auth", auth.DevJWKSFile)
	e2eIssuer, err = auth.OpenDevIssuer(filepath.Dir(e2eJWKSFile), "pix-e2e-issuer", "pix-api")
	if err != nil {
		shared.Stop()
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	code := m.Run()
	reportContractCoverage(os.Stdout)
	shared.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// stack is one running service: API with dispatcher, and worker.
type stack struct {
	t       *testing.T
	cfg     config.Config
	app     *app.App
	store   *db.Store
	srv     *temporaltest.Server
	baseURL string
	// psp is the stack's PSP simulator, served over HTTP; pspClock is its
	// clock (the real time unless a test moves it ahead).
	psp      *pspsim.Simulator
	pspClock *simClock
	// natsURL is the stack's NATS (embedded, with JetStream).
	natsURL string
	// logs are the service's log lines.
	logs *syncBuffer
	// settings are the sagas' own settings the stack set (app.WithSettings;
	// a test's own, among opts, over them).
	settings map[string]string
	// began is when the stack started: its runs started after.
	began time.Time

	workerMu   sync.Mutex
	stopWorker func() // stops the running worker and waits for it

	tcOnce sync.Once
	tc     client.Client
}

// client dials the stack's Temporal server on first use (a test may start
// the stack while the server is down), with the service's converters: it
// reads and writes the payloads the service encrypts.
func (s *stack) client() client.Client {
	s.tcOnce.Do(func() {
		s.tc = s.srv.Client(s.t, func(o *client.Options) {
			if s.cfg.TemporalCodecKeys != nil {
				codec.NewConverters(codec.New(s.cfg.TemporalCodecKeys)).ApplyTo(o)
			}
		})
	})
	return s.tc
}

// dataConverter decodes payloads the stack's service wrote (a memo in a
// visibility listing, say), as its client does.
func (s *stack) dataConverter() converter.DataConverter {
	if s.cfg.TemporalCodecKeys == nil {
		return converter.GetDefaultDataConverter()
	}
	return codec.NewConverters(codec.New(s.cfg.TemporalCodecKeys)).DataConverter
}

// syncBuffer collects the service's logs, shown when a test fails.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// loggedWorkflows is the workflow_id of every line of the service's logs
// whose message is msg.
func (s *stack) loggedWorkflows(msg string) map[string]bool {
	ids := map[string]bool{}
	for line := range strings.Lines(s.logs.String()) {
		if !strings.Contains(line, `"msg":"`+msg+`"`) {
			continue
		}
		var l struct {
			WorkflowID string `json:"workflow_id"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.WorkflowID != "" {
			ids[l.WorkflowID] = true
		}
	}
	return ids
}

// failedServiceLogLines is how many of its last lines a failed test's
// service log shows in the test's output; the whole log goes to a file.
const failedServiceLogLines = 200

// logFailedService shows the end of a failed test's service log and keeps
// the whole of it in a file: a long history's log (megabytes) would
// otherwise bury the test's own verdict in the output.
func logFailedService(t *testing.T, all string) {
	lines := strings.Split(strings.TrimRight(all, "\n"), "\n")
	var where string
	f, err := os.CreateTemp("", "pix-e2e-"+strings.ReplaceAll(t.Name(), "/", "_")+"-*.log")
	if err == nil {
		_, err = f.WriteString(all)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		where = f.Name()
	} else {
		where = "not kept: " + err.Error()
	}
	shown := lines[max(0, len(lines)-failedServiceLogLines):]
	t.Logf("service logs, the last %d of %d lines (the whole log: %s):\n%s", len(shown), len(lines), where, strings.Join(shown, "\n"))
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newStack runs the service for one test on srv, with fast retries that
// tune may change, built with opts (app.WithTracing, say). It returns once
// the worker's build is current (waitCurrentBuild).
func newStack(t *testing.T, srv *temporaltest.Server, tune func(*config.Config), opts ...app.Option) *stack {
	t.Helper()
	return startStack(t, srv, nil, tune, opts...)
}

// startStack is newStack; with prod, the PSP simulator and the service run
// with the production settings prod describes (see newProductionStack).
func startStack(t *testing.T, srv *temporaltest.Server, prod *productionPSP, tune func(*config.Config), opts ...app.Option) *stack {
	t.Helper()
	s := startStackUnpromoted(t, srv, prod, tune, opts...)
	s.waitCurrentBuild()
	return s
}

// startStackUnpromoted is startStack without the wait for the worker's
// build to be current: for a test that starts the stack while its
// Temporal server is down, when nothing can promote the build yet.
func startStackUnpromoted(t *testing.T, srv *temporaltest.Server, prod *productionPSP, tune func(*config.Config), opts ...app.Option) *stack {
	t.Helper()
	recycle := recycleLast(t)
	began := time.Now()
	cfg := config.Default()
	cfg.DatabaseURL = dbtest.URL(t)
	cfg.DatabaseMaxConns = 10
	cfg.TemporalAddress = srv.Address
	// Every family's queue is derived from it: pix-transfer-<suffix>,
	// pix-maintenance-<suffix>, all of them the test's own (one an earlier
	// test ended with, emptied: see recycledBases).
	base, recycled := takeBase(t, srv)
	cfg.TemporalTaskQueue = base
	cfg.InboxAttemptsMax = 3
	cfg.InboxRetryInitial = 200 * time.Millisecond
	cfg.InboxRetryMaxInterval = time.Second
	cfg.DispatchPollInterval = 100 * time.Millisecond
	cfg.DispatchRetryMaxDelay = 500 * time.Millisecond
	cfg.ShutdownTimeout = 10 * time.Second
	cfg.ShutdownReadyzDelay = 0
	cfg.WorkerStopTimeout = 2 * time.Second
	cfg.WebhookSecrets = []webhooksig.Secret{{PSP: "e2e-psp", Key: e2eSigningKey}}
	cfg.AdminToken = e2eAdminToken
	cfg.AuthIssuer, cfg.AuthAudience = e2eIssuer.Issuer, e2eIssuer.Audience
	cfg.AuthJWKSFile = e2eJWKSFile
	// Payloads encrypted, as in production (codec_test.go checks it),
	// unless the run records plain histories for the replay tests.
	if !recordingHistories() {
		cfg.TemporalCodecKeys = e2eCodecKeys
	}
	cfg.CodecCORSOrigins = []string{e2eTemporalUIOrigin}
	clock := &simClock{}
	// The sagas' own settings (saga.Descriptor.Settings), as their
	// variables would set them: the tests' own, whatever the environment
	// of the test process holds.
	settings := map[string]string{}
	settings["MED_DICT_DISABLED"] = "true" // no DICT but the production stack's (productionPSP.start)
	var sim *pspsim.Simulator
	if prod == nil {
		sim = pspsim.New(pspsim.Options{DefaultSettleAfter: 200 * time.Millisecond, Now: clock.now})
		pspServer := httptest.NewServer(sim.Handler())
		t.Cleanup(pspServer.Close)
		cfg.PSPURL = pspServer.URL
	} else {
		sim = prod.start(t, &cfg, settings, clock)
	}
	cfg.PSPTimeout = time.Second
	cfg.PSPRetryInitial = 200 * time.Millisecond
	cfg.PSPRetryMax = time.Second
	settings["TRANSFER_SETTLEMENT_POLL_MAX"] = "500ms"
	settings["REFUND_REFUSAL_QUIET_PERIOD"] = "2s"
	cfg.NATSURL = natstest.StartT(t).URL
	cfg.OutboxPollInterval = 100 * time.Millisecond
	if tune != nil {
		tune(&cfg)
	}
	reusable := useBase(srv, &cfg, base, recycled)
	logs := &syncBuffer{}
	a, err := app.New(context.Background(), cfg, logging.New(logs, "info"), append([]app.Option{app.WithSettings(settings)}, opts...)...)
	require.NoError(t, err)
	require.NoError(t, a.Migrate(context.Background()))
	recordContract(t, a)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if prod != nil {
			// The webhooks' listener is prod's: bound before the
			// simulator, which posts to it, was made.
			return a.ServeListeners(gctx, app.Listeners{Main: ln, Webhooks: prod.webhooks})
		}
		return a.ServeAPI(gctx, ln)
	})
	s := &stack{t: t, cfg: cfg, app: a, store: a.Store, srv: srv, baseURL: "http://" + ln.Addr().String(), psp: sim, pspClock: clock, natsURL: cfg.NATSURL, logs: logs, settings: settings, began: began}
	s.startWorker()
	if reusable {
		*recycle = s.recycleBase
	}
	t.Cleanup(func() {
		// Connections the client dialed but never used would hold the
		// server's graceful shutdown until they are 5 s old.
		http.DefaultClient.CloseIdleConnections()
		s.killWorker()
		cancel()
		require.NoError(t, g.Wait())
		a.Close()
		if t.Failed() {
			logFailedService(t, logs.buf.String())
		}
	})
	return s
}

// simClock is the PSP simulator's clock: the real time, moved ahead by
// advance, so that a test can make the PSP's outcomes due at a moment it
// chooses.
type simClock struct{ offset atomic.Int64 }

func (c *simClock) now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// advance moves the simulator's clock d ahead.
func (c *simClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// startWorker runs a worker (with its dispatchers) for the stack.
func (s *stack) startWorker() {
	s.workerMu.Lock()
	defer s.workerMu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.app.RunWorker(ctx) }()
	s.stopWorker = func() {
		cancel()
		require.NoError(s.t, <-done)
	}
}

// waitCurrentBuild waits, when the stack's workers are versioned (the
// default, as pixd's), until its build takes every family's new runs: its
// deployment's current version, promoted as its worker started
// (TEMPORAL_WORKER_PROMOTE=first), which Temporal takes once the worker
// polls, and the version each family's task queue routes new tasks to,
// workflow and activity tasks alike. Until then a pinned saga's dispatcher
// (the transfer's, the devolução's, the block's) starts no run, and a
// start finds no worker to take it eagerly: on a loaded dev server the
// promotion took more than a test's 30 s wait for a saga's outcome (CI:
// two promotion attempts timed out), so every stack waits for it before
// its test begins. The routing comes apart from the promotion: a task
// queue learns it once it is registered in the version, when the
// version's first poll of it arrives, one queue after another, and the
// promotion needs only the version to exist; on a loaded machine the
// refunds' queue still routed to no build 30 s after the promotion.
//
// On a recycled base (recycledBases) the build was current and routed
// before the stack's worker started: the stack waits also for its own
// worker's polls of each family's queue (waitOwnPollers).
func (s *stack) waitCurrentBuild() {
	s.t.Helper()
	if !s.cfg.WorkerVersioning {
		return
	}
	v := worker.ThisBuild(s.cfg.TaskQueues())
	require.EventuallyWithT(s.t, func(c *assert.CollectT) {
		d, err := s.client().WorkerDeploymentClient().GetHandle(v.DeploymentName).Describe(context.Background(), client.WorkerDeploymentDescribeOptions{})
		require.NoError(c, err)
		require.NotNil(c, d.Info.RoutingConfig.CurrentVersion)
		require.Equal(c, v, *d.Info.RoutingConfig.CurrentVersion)
	}, 2*time.Minute, 100*time.Millisecond, "the stack's build is promoted as its worker starts")
	require.EventuallyWithT(s.t, func(c *assert.CollectT) {
		for _, q := range s.cfg.TaskQueues().All() {
			for _, kind := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
				d, err := s.client().WorkflowService().DescribeTaskQueue(context.Background(), &workflowservice.DescribeTaskQueueRequest{
					Namespace: s.cfg.TemporalNamespace, TaskQueue: &taskqueuepb.TaskQueue{Name: q, Kind: enumspb.TASK_QUEUE_KIND_NORMAL}, TaskQueueType: kind,
				})
				if !assert.NoError(c, err) {
					return
				}
				current := d.GetVersioningInfo().GetCurrentDeploymentVersion()
				assert.True(c, current.GetDeploymentName() == v.DeploymentName && current.GetBuildId() == v.BuildID,
					"%s (%s) routes new runs to the build: its current version is %v", q, kind, current)
			}
		}
	}, 2*time.Minute, 100*time.Millisecond, "each family's task queue routes to the stack's build: registered in its version as the worker polls it")
	s.waitOwnPollers()
}

// waitOwnPollers waits until the stack's worker of each family polls its
// queue for workflow and activity tasks (the SDK's temporal_num_pollers).
// The SDK takes a worker for eager starts once its workflow pollers
// started, before its activity pollers: until then a dispatcher's start
// (started with the worker, cmd/pixd/app) is not eager, and a run would
// wait for a poll. On a new base the build's promotion waited for the
// worker's first poll; on a recycled one nothing else did.
func (s *stack) waitOwnPollers() {
	s.t.Helper()
	require.EventuallyWithT(s.t, func(c *assert.CollectT) {
		for _, q := range s.cfg.TaskQueues().All() {
			for _, kind := range []string{"workflow_task", "activity_task"} {
				assert.Positive(c, s.numPollers(q, kind), "the stack's worker polls %s for %s", q, kind)
			}
		}
	}, 2*time.Minute, 100*time.Millisecond, "the stack's workers poll every family's queue")
}

// killWorker stops the stack's worker: its running activities get
// WORKER_STOP_TIMEOUT, then their results are lost with it.
func (s *stack) killWorker() {
	s.workerMu.Lock()
	defer s.workerMu.Unlock()
	// Cleared before it runs: a stop that fails its test must not be
	// waited for again by the cleanup's kill.
	if stop := s.stopWorker; stop != nil {
		s.stopWorker = nil
		stop()
	}
}

// The credentials of the e2e stacks: the tests act as the PSP and as an
// operator.
var e2eSigningKey = []byte("e2e webhook signing key, 32 bytes")

const e2eAdminToken = "e2e-admin-token-0123456789"

// e2eCodecKeys encrypt the stacks' Temporal payloads: a rotated ring (the
// newest key encrypts), of test keys. e2eTemporalUIOrigin is the Temporal
// UI's origin, which may call the codec server.
var e2eCodecKeys = func() *codec.KeyRing {
	keys, err := codec.ParseKeyRing("e2e-old=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x11}, codec.KeySize)) +
		",e2e-new=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x22}, codec.KeySize)))
	if err != nil {
		panic(err)
	}
	return keys
}()

const e2eTemporalUIOrigin = "http://127.0.0.1:8233"

// pixID returns a fresh, valid end_to_end_id.
func pixID() string {
	return "E12345678" + strings.ToUpper(randomSuffix()) + fmt.Sprintf("%011d", time.Now().UnixNano()%1e11)
}

type webhook struct {
	EndToEndID  string `json:"end_to_end_id"`
	AccountID   string `json:"account_id"`
	AmountCents int64  `json:"amount_cents"`
}

type reply struct {
	Status int
	Body   map[string]any
}

func (s *stack) request(method, path string, body any) reply {
	s.t.Helper()
	return s.requestWith(method, path, nil, body)
}

// e2eIssuer mints the bearer tokens of the customer routes; the stacks
// trust its keys.
var (
	e2eIssuer   *auth.DevIssuer
	e2eJWKSFile string
)

// e2eCustomer is the sub of the tests' customer requests: one caller, so
// that a retried POST /pix replays under its Idempotency-Key.
const e2eCustomer = "e2e-app-backend"

// e2eAccounts are the accounts the tests opened: the customer tokens grant
// them (access control itself is tested in security_test.go).
var e2eAccounts sync.Map

// asCaller makes req, a JSON request with body raw, come from whoever may
// call path: webhooks signed as the stack's PSP, admin calls with the admin
// token, customer calls with a token of the accounts the tests opened and
// the one the request names.
func asCaller(req *http.Request, path string, raw []byte) {
	req.Header.Set("Content-Type", "application/json")
	switch {
	case strings.HasPrefix(path, "/webhooks/"):
		webhooksig.SetHeaders(req.Header, "msg_"+randomSuffix(), time.Now(), raw, e2eSigningKey)
	case strings.HasPrefix(path, "/admin/"):
		req.Header.Set("Authorization", "Bearer "+e2eAdminToken)
	default:
		var named struct {
			AccountID string `json:"account_id"`
		}
		_ = json.Unmarshal(raw, &named) //nolint:errcheck // a body that names no account grants none
		if id, ok := strings.CutPrefix(path, "/accounts/"); ok {
			named.AccountID = id
		}
		accounts := []string{named.AccountID}
		e2eAccounts.Range(func(k, _ any) bool { accounts = append(accounts, k.(string)); return true })
		token, err := e2eIssuer.Mint(auth.TokenSpec{Subject: e2eCustomer, Scopes: []string{auth.ScopeRead, auth.ScopeWrite},
			Accounts: accounts, TTL: 5 * time.Minute}, time.Now())
		if err != nil {
			panic(err) // the issuer's own key: can't fail
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
}

// requestWith sends body as JSON with the extra headers; webhooks are
// signed as the stack's PSP, admin calls carry the admin token.
func (s *stack) requestWith(method, path string, header http.Header, body any) reply {
	s.t.Helper()
	r := s.call(method, path, header, body, "")
	return reply{r.Status, r.Body}
}

func (s *stack) post(w webhook) reply { return s.request(http.MethodPost, "/webhooks/pix", w) }

func (s *stack) openAccount(id string, opening int64) {
	s.t.Helper()
	_, err := s.store.CreateAccount(context.Background(), db.NewAccount{ID: id, OwnerName: "Owner " + id, OpeningBalanceCents: opening})
	require.NoError(s.t, err)
	e2eAccounts.Store(id, true)
}

func (s *stack) balance(id string) int64 {
	s.t.Helper()
	acc, err := s.store.GetAccount(context.Background(), id)
	require.NoError(s.t, err)
	return acc.BalanceCents
}

// creditRows counts pix_credits rows for an end_to_end_id.
func (s *stack) creditRows(id string) int {
	s.t.Helper()
	var n int
	require.NoError(s.t, s.store.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM pix_credits WHERE end_to_end_id = $1`, id).Scan(&n))
	return n
}

func (s *stack) status(id string) string {
	s.t.Helper()
	c, err := s.store.GetCredit(context.Background(), id)
	require.NoError(s.t, err)
	return c.Status
}

// waitStatus waits until the PIX reaches want.
func (s *stack) waitStatus(id, want string, within time.Duration) {
	s.t.Helper()
	require.Eventually(s.t, func() bool { return s.status(id) == want },
		within, 50*time.Millisecond, "PIX %s never became %s", id, want)
}

// assertBooksBalance checks invariants I1-I3 over the whole schema: one credit
// per done row and none for other rows, and every balance equal to its
// opening balance plus its credits, minus its transfers, plus its refunds
// (I2).
func (s *stack) assertBooksBalance() {
	s.t.Helper()
	ctx := context.Background()
	var doneWithoutCredit, creditWithoutDone int
	require.NoError(s.t, s.store.Pool().QueryRow(ctx, `
		SELECT
		  (SELECT count(*) FROM inbox_messages m WHERE m.status = 'done' AND NOT EXISTS (SELECT 1 FROM pix_credits c WHERE c.end_to_end_id = m.end_to_end_id)),
		  (SELECT count(*) FROM pix_credits c JOIN inbox_messages m USING (end_to_end_id) WHERE m.status <> 'done')`).
		Scan(&doneWithoutCredit, &creditWithoutDone))
	unbalanced, err := reconcile.NewStore(s.store).UnbalancedAccounts(ctx, "")
	require.NoError(s.t, err)
	require.Empty(s.t, unbalanced, "accounts whose balance is not opening + credits - transfers + refunds")
	require.Zero(s.t, doneWithoutCredit, "done inbox rows without a credit")
	require.Zero(s.t, creditWithoutDone, "credits whose inbox row is not done")
}

// clientOptions starts a run of the PIX's workflow on the stack's credits'
// task queue.
func clientOptions(s *stack, id string) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{ID: workflows.CreditWorkflowID(id), TaskQueue: s.cfg.TaskQueues().Credits}
}

// taskQueuesQuery is a visibility filter for the runs of every family's
// task queue of the stack (each derived from its own TEMPORAL_TASK_QUEUE)
// started since the stack: no other test's runs, also on a recycled base
// (recycledBases).
func (s *stack) taskQueuesQuery() string {
	return s.queuesFilter() + s.startedSince()
}

// queuesFilter is a visibility filter for every run ever started on the
// stack's task queues (an earlier test's too, on a recycled base).
func (s *stack) queuesFilter() string {
	var qs []string
	for _, q := range s.cfg.TaskQueues().All() {
		qs = append(qs, fmt.Sprintf("TaskQueue = '%s'", q))
	}
	return "(" + strings.Join(qs, " OR ") + ")"
}

// startedSince is a visibility filter's clause for the runs started since
// the stack was: on a recycled base, those of the test's own.
func (s *stack) startedSince() string {
	return fmt.Sprintf(" AND StartTime >= '%s'", s.began.UTC().Format(time.RFC3339Nano))
}

// metric reads a counter's or a gauge's value, or a histogram's
// observation count, in the stack's registry: name, then {value} for each
// label, e.g. pix_transfers_finished_total{settled}.
func (s *stack) metric(name string) float64 {
	s.t.Helper()
	families, err := s.app.Metrics.Gather()
	require.NoError(s.t, err)
	for _, f := range families {
		for _, m := range f.GetMetric() {
			full := f.GetName()
			for _, l := range m.GetLabel() {
				full += "{" + l.GetValue() + "}"
			}
			if full == name {
				return sampleValue(m)
			}
		}
	}
	return 0
}

// sampleValue is a counter's or a gauge's value, or a histogram's
// observation count (the other two are zero).
func sampleValue(m *dto.Metric) float64 {
	return m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
}

// total sums a family of the stack's registry over all its label sets (see
// sampleValue).
func (s *stack) total(family string) float64 {
	s.t.Helper()
	families, err := s.app.Metrics.Gather()
	require.NoError(s.t, err)
	var sum float64
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += sampleValue(m)
		}
	}
	return sum
}
