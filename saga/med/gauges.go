package med

import (
	"context"
	"embed"
	"errors"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/covered"
	"github.com/pixbank/pix/saga/sagakit"
)

// The on-call's view of MED beside metrics.go's (docs/operations.md,
// "Metrics"; the alerts of deploy/prometheus/rules/med.yml): the open
// reports by age, the refund requests left unanswered, the returns under
// way, and the DICT's refusals of our requests' signature.

//go:embed med_gauges.sql
var gaugeFiles embed.FS

// gaugesSQL holds the statements of med_gauges.sql.
var gaugesSQL struct{ Ages string }

func init() { db.BindQueries(gaugeFiles, "med_gauges.sql", &gaugesSQL) }

// UnansweredAfter is how long a refund request open at the DICT may sit
// on a report where nothing changed before it counts as unanswered
// (pix_med_refund_requests_unanswered, PixMEDRefundRequestUnanswered):
// the saga returns at once and closes the request after the devolução
// ends, minutes at the PSP's pace.
const UnansweredAfter = time.Hour

// reportAges are the age label's values of pix_med_reports_open_by_age,
// AgeCounts.ByAge's order: since the DICT created the report, against its
// 7 days of analysis.
var reportAges = [4]string{"under_24h", "24h_to_6d", "6d_to_7d", "over_7d"}

// AgeCounts are the on-call's gauges' counts (Store.Ages).
type AgeCounts struct {
	ByAge                           [4]int64
	Unanswered, Returning, Returned int64
}

// Ages reads the on-call's gauges; a request counts as unanswered after
// unansweredAfter of nothing changing on its report, unless its close was
// sent through the PSP's channel and awaits the PSP (Open counts those); a
// request taken while its report's own close awaits the PSP counts.
func (s *Store) Ages(ctx context.Context, unansweredAfter time.Duration) (AgeCounts, error) {
	var c AgeCounts
	err := s.store.Pool().QueryRow(ctx, gaugesSQL.Ages, unansweredAfter, ProblemPSPActionAwaited+":").Scan(&c.ByAge[0], &c.ByAge[1], &c.ByAge[2], &c.ByAge[3],
		&c.Unanswered, &c.Returning, &c.Returned)
	return c, db.Classify(err)
}

// ageGauges are the gauges of Store.Ages, read at each scrape.
func ageGauges(env saga.Env) prometheus.Collector {
	store := NewStore(env.Store)
	gauges := []sagakit.Gauge[AgeCounts]{
		{Desc: prometheus.NewDesc("pix_med_refund_requests_unanswered",
			"Open MED reports whose refund request is open at the DICT, not answered, and nothing changed on them for an hour (PixMEDRefundRequestUnanswered).", nil, nil),
			Value: func(c AgeCounts) float64 { return float64(c.Unanswered) }},
		{Desc: prometheus.NewDesc("pix_med_reports_returning",
			"Open MED reports whose devolução is under way.", nil, nil),
			Value: func(c AgeCounts) float64 { return float64(c.Returning) }},
		{Desc: prometheus.NewDesc("pix_med_returned_cents",
			"Centavos the open MED reports returned so far (the ended ones' count in pix_med_reports_ended_total).", nil, nil),
			Value: func(c AgeCounts) float64 { return float64(c.Returned) }},
	}
	for i, age := range reportAges {
		gauges = append(gauges, sagakit.Gauge[AgeCounts]{
			Desc: prometheus.NewDesc("pix_med_reports_open_by_age",
				"Open MED reports by age since the DICT created them, against their 7 days of analysis.",
				nil, prometheus.Labels{"age": age}),
			Value: func(c AgeCounts) float64 { return float64(c.ByAge[i]) }})
	}
	return &sagakit.ScrapeGauges[AgeCounts]{
		What:   "med age gauges",
		Query:  func(ctx context.Context) (AgeCounts, error) { return store.Ages(ctx, UnansweredAfter) },
		Gauges: gauges,
		Log:    env.Log,
	}
}

// dictSignatureRefusedTotal counts the DICT's refusals of our requests'
// signature (the problem RequestSignatureInvalid): our signing
// certificate, key or canonicalisation no longer what the DICT accepts.
// Every write the saga sends is refused then (PixMEDDICTRefusesOurSignature).
var dictSignatureRefusedTotal = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "pix_med_dict_signature_refused_total",
	Help: "MED writes the DICT refused for their signature (RequestSignatureInvalid): our signing certificate or key is not the DICT's (PixMEDDICTRefusesOurSignature).",
})

// signatureCounted is a DICT whose refusals of our signed writes'
// signature are counted (dictSignatureRefusedTotal); its reads are
// unsigned, never refused so.
type signatureCounted struct{ DICT }

// countSignature counts err if the DICT refused our signature.
func countSignature(err error) {
	if errors.Is(err, dict.ErrRequestSignatureInvalid) {
		dictSignatureRefusedTotal.Inc()
	}
}

func (d signatureCounted) AcknowledgeInfractionReport(ctx context.Context, id string) (dict.InfractionReport, error) {
	r, err := d.DICT.AcknowledgeInfractionReport(ctx, id)
	countSignature(err)
	return r, err
}

func (d signatureCounted) CloseInfractionReport(ctx context.Context, id string, result dict.AnalysisResult, details string) (dict.InfractionReport, error) {
	r, err := d.DICT.CloseInfractionReport(ctx, id, result, details)
	countSignature(err)
	return r, err
}

func (d signatureCounted) CloseRefund(ctx context.Context, id string, c dict.RefundClosing) (dict.Refund, error) {
	r, err := d.DICT.CloseRefund(ctx, id, c)
	countSignature(err)
	return r, err
}

// ListerBehindIntervals is how many of its intervals (MED_DICT_LIST_INTERVAL)
// the lister's covered end may be behind now before it pages
// (PixMEDDICTListerBehind, deploy/prometheus/rules/med.yml: at least 10
// minutes): a run covers up to now less the grace (less than the overlap),
// every interval.
const ListerBehindIntervals = 5

// listerLag is what the lister's gauges read: how far its covered end is
// behind the database's clock (covered: false before any window was
// covered), and its interval (0: no Schedule lists the DICT).
type listerLag struct {
	Behind   time.Duration
	Covered  bool
	Interval time.Duration
}

// listerGauges are the lister's lag, read from PostgreSQL at each scrape
// (covered.Store.Behind), and its interval, which the alert compares it to:
// +Inf behind before any window was covered (a lister that never covered
// one is as far behind as can be), an interval of 0 when no Schedule lists
// the DICT (MED without it, MED_DICT_LIST_INTERVAL=0), which no alert
// reads as late.
func listerGauges(env saga.Env, st Settings) prometheus.Collector {
	store := covered.NewStore(env.Store, ListerName)
	interval := st.ListInterval
	if st.listerOff() != "" {
		interval = 0
	}
	return &sagakit.ScrapeGauges[listerLag]{
		What: "med lister gauges",
		Query: func(ctx context.Context) (listerLag, error) {
			behind, ok, err := store.Behind(ctx)
			return listerLag{Behind: behind, Covered: ok, Interval: interval}, err
		},
		Gauges: []sagakit.Gauge[listerLag]{
			{Desc: prometheus.NewDesc("pix_med_dict_lister_behind_seconds",
				"How far the MED DICT lister's covered end is behind the database's clock now (+Inf before any window was covered): every report and refund request modified before it was taken in (PixMEDDICTListerBehind).", nil, nil),
				Value: func(l listerLag) float64 {
					if !l.Covered {
						return math.Inf(1)
					}
					return l.Behind.Seconds()
				}},
			{Desc: prometheus.NewDesc("pix_med_dict_lister_interval_seconds",
				"The MED DICT lister's Schedule interval (MED_DICT_LIST_INTERVAL); 0 when no Schedule lists the DICT (MED_DICT_DISABLED=true, or the interval 0).", nil, nil),
				Value: func(l listerLag) float64 { return l.Interval.Seconds() }},
		},
		Log: env.Log,
	}
}
