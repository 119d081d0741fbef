package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// DispatchStarts sums the workflow starts the workers' dispatchers issued
// for rows of kind, by outcome (new, restarted, open, closing, failed: the
// worker's pix_dispatch_starts_total), over the workers' /metrics URLs. Read before
// and after a drain, it tells how many starts each credit took: a start per
// credit is the least, and every "open" one a recheck of a row whose run
// had not finished.
func DispatchStarts(ctx context.Context, urls []string, kind string) (map[string]float64, error) {
	out := map[string]float64{}
	client := &http.Client{Timeout: 5 * time.Second}
	for _, u := range urls {
		if err := addDispatchStarts(ctx, client, u, kind, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func addDispatchStarts(ctx context.Context, client *http.Client, url, kind string, out map[string]float64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("worker metrics %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("worker metrics %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return fmt.Errorf("worker metrics %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return fmt.Errorf("worker metrics %s: %w", url, err)
	}
	family, ok := families["pix_dispatch_starts_total"]
	if !ok {
		return nil // no start counted yet
	}
	for _, m := range family.GetMetric() {
		var k, outcome string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "kind":
				k = l.GetValue()
			case "outcome":
				outcome = l.GetValue()
			}
		}
		if k == kind {
			out[outcome] += m.GetCounter().GetValue()
		}
	}
	return nil
}
