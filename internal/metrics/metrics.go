package metrics

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pixbank/pix/internal/buildinfo"
)

// New returns a registry with the Go runtime and process collectors, and
// pix_build_info.
func New() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	registerBuildInfo(r, buildinfo.Read())
	return r
}

// Handler serves the registry in the Prometheus text format.
func Handler(r *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(r, promhttp.HandlerOpts{Registry: r})
}

// Webhooks counts the PSP webhooks by outcome, and times their
// acknowledgement.
type Webhooks struct {
	received   *prometheus.CounterVec
	duplicates *prometheus.CounterVec
	rejected   *prometheus.CounterVec
	answered   *prometheus.HistogramVec
}

// NoPSP is the psp label of a webhook request that no PSP was identified
// for: unsigned and without a listed client certificate (development, or a
// request refused before any credential matched: a PSP whose secret we no
// longer hold, or a stranger).
const NoPSP = "none"

// AckSLOThreshold is the webhook acknowledgement's latency objective
// (docs/runbooks.md, "The webhook acknowledgement's SLOs"): a bucket
// boundary of pix_webhook_request_duration_seconds, so that the fraction
// of answers slower than it is exact.
const AckSLOThreshold = 0.25

// NewWebhooks registers the webhook counters on r.
func NewWebhooks(r *prometheus.Registry) *Webhooks {
	w := &Webhooks{
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pix_webhooks_received_total",
			Help: "PIX notifications stored (first deliveries and redeliveries), by webhook format.",
		}, []string{"format"}),
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pix_webhook_duplicates_total",
			Help: "Redeliveries absorbed at the door, by webhook format.",
		}, []string{"format"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pix_webhooks_rejected_total",
			Help: "Webhook requests answered with an error, by error code and by the PSP that sent them (psp=\"none\": none identified, as when no secret matches a signature).",
		}, []string{"code", "psp"}),
		answered: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pix_webhook_request_duration_seconds",
			Help: "Webhook requests from their arrival at the webhook routes to their answer, by the PSP that sent them (psp=\"none\": none identified) and the answer's status class (2xx, 4xx, 5xx): the acknowledgement's SLIs.",
			// Around the SLO's threshold (AckSLOThreshold), and the
			// benchmarks' p99 (tens of milliseconds).
			Buckets: []float64{.005, .01, .025, .05, .1, AckSLOThreshold, .5, 1, 2.5, 5, 10},
		}, []string{"psp", "status_class"}),
	}
	r.MustRegister(w.received, w.duplicates, w.rejected, w.answered)
	return w
}

// Stored counts one stored notification.
func (w *Webhooks) Stored(format string, duplicate bool) {
	w.received.WithLabelValues(format).Inc()
	if duplicate {
		w.duplicates.WithLabelValues(format).Inc()
	}
}

// Answered observes one webhook request answered with status after
// elapsed, sent by psp (a PSP of the configuration, or NoPSP: the label's
// values are bounded by the configuration), and counts it as refused, by
// its error code, when status is an error. code is one of the declared
// error codes (api.ErrorDetail), or the status itself when the answer had
// none.
func (w *Webhooks) Answered(psp string, status int, code string, elapsed time.Duration) {
	w.answered.WithLabelValues(psp, strconv.Itoa(status/100)+"xx").Observe(elapsed.Seconds())
	if status >= 400 {
		if code == "" {
			code = strconv.Itoa(status)
		}
		w.rejected.WithLabelValues(code, psp).Inc()
	}
}

// GroupCommit observes the group commit of the webhooks' inserts: how many
// requests and deliveries each transaction held.
type GroupCommit struct {
	calls, rows prometheus.Histogram
}

// NewGroupCommit registers the group commit's histograms on r.
func NewGroupCommit(r *prometheus.Registry) *GroupCommit {
	buckets := []float64{1, 2, 4, 8, 16, 32, 64, 128, 256}
	g := &GroupCommit{
		calls: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "pix_webhook_group_requests",
			Help:    "Webhook requests whose inserts one transaction (one commit) held: 1 when the API is idle, more under load.",
			Buckets: buckets,
		}),
		rows: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "pix_webhook_group_rows",
			Help:    "PIX deliveries one group commit's transaction held.",
			Buckets: buckets,
		}),
	}
	r.MustRegister(g.calls, g.rows)
	return g
}

// Observe records one group written.
func (g *GroupCommit) Observe(calls, rows int) {
	g.calls.Observe(float64(calls))
	g.rows.Observe(float64(rows))
}

// Worker counts what the worker's activities did. A nil *Worker counts
// nothing. Activities run at least once: a retried activity whose first
// run's answer was lost counts twice.
type Worker struct {
	credits     prometheus.Counter
	failures    *prometheus.CounterVec
	dispatchLag *prometheus.HistogramVec
	starts      *prometheus.CounterVec
	schedules   prometheus.Gauge
	// chargeMismatches and pspRefusals count what needs a human's look
	// although no money went wrong.
	chargeMismatches *prometheus.CounterVec
	pspAttention     *prometheus.CounterVec
}

// NewWorker registers the worker's counters on r.
func NewWorker(r *prometheus.Registry) *Worker {
	w := &Worker{
		credits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pix_credits_total",
			Help: "Incoming PIX credited.",
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pix_credit_failures_total",
			Help: "Incoming PIX marked failed, by error type.",
		}, []string{"type"}),
		dispatchLag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "pix_dispatch_lag_seconds",
			Help: "From the commit of a row (inbox row, transfer) to the first start of its workflow, by kind.",
			// From an eager start on an idle machine (milliseconds) to
			// starts held back by a Temporal outage (minutes).
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"kind"}),
		starts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pix_dispatch_starts_total",
			Help: "Workflow starts the dispatchers issued, by kind and outcome (new: the first run of a row's drive began; restarted: a recheck found the run gone and began another, or a refund notice arrived as its run ended; open: its run was open already, a recheck; closing: a run open that the row has no record of starting, tried again less and less often; failed: retried after a backoff). open per new is the rechecks' churn; restarted is a run lost or given up; failed rising is Temporal refusing or away.",
		}, []string{"kind", "outcome"}),
	}
	w.schedules = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "pix_schedules_differing",
		Help: "The service's Temporal Schedules that differ from this worker's configuration at its last check (every 15 s, while its build is current; 0 otherwise). The workers write them only at their start and their build's promotion: another worker of the build started with other settings, or a hand edit; roll every worker to one configuration.",
	})
	w.chargeMismatches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pix_charge_not_concluded_total",
		Help: "PIX credited that named a charge (txid) they did not conclude, by outcome (other_account, amount_mismatch, not_open, unknown_charge); each needs a look.",
	}, []string{"outcome"})
	w.pspAttention = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pix_psp_attention_total",
		Help: "PSP answers that need a human, about a transfer, a devolução or the catch-up's listing, by kind (PSPRequestRefused: our credentials or request; RejectionUnconfirmed, PSPTransferMismatch, RefundUnconfirmed; PSPRefundMismatch, ReversalUnconfirmed; PSPListingIncomplete) and status code; nothing is refunded nor reversed on them; alert on any.",
	}, []string{"kind", "status_code"})
	r.MustRegister(w.credits, w.failures, w.dispatchLag, w.starts, w.schedules, w.chargeMismatches, w.pspAttention)
	return w
}

// SchedulesDiffering publishes how many of the service's Schedules differ
// from this worker's configuration (worker.KeepSchedules).
func (w *Worker) SchedulesDiffering(n int) {
	if w != nil {
		w.schedules.Set(float64(n))
	}
}

// DispatchLag observes one first workflow start of a row of kind, lag after
// its commit. The commit time is PostgreSQL's clock, the start this
// process's: both are the same machine's, or NTP-synchronised ones.
func (w *Worker) DispatchLag(kind string, lag time.Duration) {
	if w != nil {
		w.dispatchLag.WithLabelValues(kind).Observe(max(lag, 0).Seconds())
	}
}

// DispatchStarted counts one workflow start a dispatcher issued for a row of
// kind, by its outcome (durable.StartedNew, ...).
func (w *Worker) DispatchStarted(kind, outcome string) {
	if w != nil {
		w.starts.WithLabelValues(kind, outcome).Inc()
	}
}

// Credited counts one credit.
func (w *Worker) Credited() {
	if w != nil {
		w.credits.Inc()
	}
}

// CreditFailed counts one PIX marked failed with an error of type errType.
func (w *Worker) CreditFailed(errType string) {
	if w != nil {
		w.failures.WithLabelValues(errType).Inc()
	}
}

// ChargeNotConcluded counts one PIX credited that named a charge it did not
// conclude, by why (db.ChargeOtherAccount, ...).
func (w *Worker) ChargeNotConcluded(outcome string) {
	if w != nil {
		w.chargeMismatches.WithLabelValues(outcome).Inc()
	}
}

// PSPNeedsAttention counts one PSP answer about a transfer, a devolução or
// the catch-up's listing that a human must look at although no money moved
// on it, by kind (the activity error type: PSPRequestRefused,
// RejectionUnconfirmed, PSPTransferMismatch, RefundUnconfirmed,
// PSPRefundMismatch, ReversalUnconfirmed, PSPListingIncomplete) and HTTP
// status code (0 when none applies).
func (w *Worker) PSPNeedsAttention(kind string, statusCode int) {
	if w != nil {
		w.pspAttention.WithLabelValues(kind, strconv.Itoa(statusCode)).Inc()
	}
}

// Database is what the core's gauges read from PostgreSQL at each scrape,
// declared here, by its reader, so that the metrics import no store
// (cmd/pixd/app gives *db.Store's reads).
type Database struct {
	// OutboxLag is how many events wait for the broker, and the age of the
	// oldest in seconds (0 when none waits): db.Store.OutboxLag.
	OutboxLag func(ctx context.Context) (unpublished int64, oldestAge float64, err error)
	// OldestPendingAge is the age of the oldest pending inbox row (0 when
	// none is pending): db.Store.OldestPendingAge.
	OldestPendingAge func(ctx context.Context) (time.Duration, error)
}

// RegisterDatabaseGauges adds the gauges read from PostgreSQL at each
// scrape: the outbox's lag (how many events wait for the broker, and for
// how long the oldest has), the age of the oldest pending inbox row (how
// long accepted money has waited for its credit; the transfer's and the
// devolução's oldest open are their own: saga/transfer, saga/refund). Each
// is read once per scrape; a failed read is logged and reported as NaN,
// not as zero.
func RegisterDatabaseGauges(r *prometheus.Registry, d Database, log *slog.Logger) {
	r.MustRegister(&databaseGauges{
		db:  d,
		log: log,
		outboxEvents: prometheus.NewDesc("pix_outbox_unpublished_events",
			"Events committed but not yet acknowledged by the broker.", nil, nil),
		outboxAge: prometheus.NewDesc("pix_outbox_oldest_unpublished_age_seconds",
			"Age of the oldest event not yet acknowledged by the broker (0 when none waits).", nil, nil),
		ages: []ageGauge{
			{prometheus.NewDesc("pix_inbox_oldest_pending_age_seconds",
				"Age of the oldest pending inbox row (0 when none is pending).", nil, nil),
				"the oldest pending inbox row", d.OldestPendingAge},
		},
	})
}

// ageGauge is one "oldest ... age" reading of databaseGauges: its
// metric, what it reads (for the log), and how.
type ageGauge struct {
	desc *prometheus.Desc
	what string
	read func(context.Context) (time.Duration, error)
}

// databaseGauges is the collector of RegisterDatabaseGauges.
type databaseGauges struct {
	db                      Database
	log                     *slog.Logger
	outboxEvents, outboxAge *prometheus.Desc
	ages                    []ageGauge
}

func (g *databaseGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.outboxEvents
	ch <- g.outboxAge
	for _, a := range g.ages {
		ch <- a.desc
	}
}

func (g *databaseGauges) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	unpublished, outboxAge := math.NaN(), math.NaN()
	if events, age, err := g.db.OutboxLag(ctx); err != nil {
		g.log.Warn("metrics: could not read the outbox lag", "error", err)
	} else {
		unpublished, outboxAge = float64(events), age
	}
	ch <- prometheus.MustNewConstMetric(g.outboxEvents, prometheus.GaugeValue, unpublished)
	ch <- prometheus.MustNewConstMetric(g.outboxAge, prometheus.GaugeValue, outboxAge)
	for _, a := range g.ages {
		seconds := math.NaN()
		if age, err := a.read(ctx); err != nil {
			g.log.Warn("metrics: could not read "+a.what, "error", err)
		} else {
			seconds = age.Seconds()
		}
		ch <- prometheus.MustNewConstMetric(a.desc, prometheus.GaugeValue, seconds)
	}
}
