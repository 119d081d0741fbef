package sagakit

import "github.com/prometheus/client_golang/prometheus"

// Finished counts the runs of a saga that reached their end, by outcome
// (the status they ended in: settled, refunded, returned, reversed): the
// counter a saga's activities count into when they write that end, and
// which its Collectors register. A nil *Finished counts nothing (the
// activities of a test built without metrics). Activities run at least
// once: a retried activity whose first run's answer was lost counts
// twice.
type Finished struct{ counter *prometheus.CounterVec }

// NewFinished is the counter name, labelled by outcome, registered
// nowhere yet.
func NewFinished(name, help string) *Finished {
	return &Finished{counter: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"outcome"})}
}

// Count counts one run ended with outcome.
func (f *Finished) Count(outcome string) {
	if f != nil {
		f.counter.WithLabelValues(outcome).Inc()
	}
}

// Describe sends the counter's description: a Finished is the collector
// registered.
func (f *Finished) Describe(ch chan<- *prometheus.Desc) { f.counter.Describe(ch) }

// Collect sends the counter's values.
func (f *Finished) Collect(ch chan<- prometheus.Metric) { f.counter.Collect(ch) }
