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

// Routes are the customer routes of every saga whose handlers live in its
// own package (saga.Descriptor.Routes), built from env, for api.Deps.
func Routes(env saga.Env) ([]api.SagaRoutes, error) {
	var out []api.SagaRoutes
	for _, d := range All {
		if d.Routes == nil {
			continue
		}
		r, err := d.Routes(env)
		if err != nil {
			return nil, fmt.Errorf("saga %s: %w", d.Name, err)
		}
		out = append(out, r)
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
