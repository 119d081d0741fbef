package registry

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/block"
	"github.com/pixbank/pix/saga/catchup"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/reconcile"
	"github.com/pixbank/pix/saga/refund"
	"github.com/pixbank/pix/saga/retention"
	"github.com/pixbank/pix/saga/scheduled"
	"github.com/pixbank/pix/saga/transfer"
)

// All is every saga of the service: the one list a new saga is registered
// in, one line each. A saga of its own package (saga/<name>) is listed here
// rather than in package saga, which it imports for saga.Descriptor.
var All = []saga.Descriptor{
	saga.Credit,
	transfer.Saga,
	refund.Saga,
	reconcile.Saga,
	retention.Saga,
	catchup.Saga,
	scheduled.Saga,
	block.Saga,
	med.Saga,
}

// CheckSettings checks every saga's own settings (saga.Descriptor.Settings)
// through lookup, telling every mistake at once, as config.Load does: pixd
// calls it at start, in every role, before anything is built from them.
func CheckSettings(lookup func(string) (string, bool)) error {
	var errs []error
	for _, d := range All {
		if d.Settings == nil {
			continue
		}
		if err := d.Settings(lookup); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	return nil
}

// HTTP are the HTTP sides of every saga that has one
// (saga.Descriptor.HTTP), built from env, in the order of All: for
// api.Deps.Sagas.
func HTTP(env saga.Env) ([]api.SagaHTTP, error) {
	var out []api.SagaHTTP
	for _, d := range All {
		if d.HTTP == nil {
			continue
		}
		h, err := d.HTTP(env)
		if err != nil {
			return nil, fmt.Errorf("saga %s: %w", d.Name, err)
		}
		out = append(out, h)
	}
	return out, nil
}

// RegisterMetrics registers every saga's own metrics
// (saga.Descriptor.Collectors), built from env, on r. Call it once per
// process.
func RegisterMetrics(r prometheus.Registerer, env saga.Env) error {
	for _, d := range All {
		if d.Collectors == nil {
			continue
		}
		for _, c := range d.Collectors(env) {
			if err := r.Register(c); err != nil {
				return fmt.Errorf("saga %s: metrics: %w", d.Name, err)
			}
		}
	}
	return nil
}

// WatchFills sets every saga's hook on the holds an inflow filled
// (saga.Descriptor.HoldsFilled) on env's store, which calls them after the
// inflow's commit (db.Store.InTx). Call it once per process, before
// the store is used: every process that credits, refunds or releases
// (the workers, the API) wakes the sagas alike.
func WatchFills(env saga.Env) {
	for _, d := range All {
		if d.HoldsFilled != nil {
			env.Store.OnHoldsFilled(d.HoldsFilled(env))
		}
	}
}

// Started runs every saga's Started (saga.Descriptor.Started) with env:
// a worker process calls it once, when it has started.
func Started(env saga.Env) {
	for _, d := range All {
		if d.Started != nil {
			d.Started(env)
		}
	}
}
