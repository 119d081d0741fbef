package registry

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/scheduled"
)

// All is every saga of the service: the one list a new saga is registered
// in, one line each. A saga of its own package (saga/<name>) is listed here
// rather than in package saga, which it imports for saga.Descriptor.
var All = []saga.Descriptor{
	saga.Credit,
	saga.Transfer,
	saga.Refund,
	saga.Maintenance,
	saga.PSPCatchUp,
	scheduled.Saga,
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
