//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tooling/pspsim"
)

// dashboardMetrics are the metric families the Grafana dashboard's queries
// read (a histogram's _bucket series by its family's name).
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/grafana/dashboards/pix.json")
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	name := regexp.MustCompile(`\b(?:pix|temporal)_[a-z_]+`)
	var names []string
	for _, p := range dash.Panels {
		for _, target := range p.Targets {
			for _, n := range name.FindAllString(target.Expr, -1) {
				names = append(names, strings.TrimSuffix(n, "_bucket"))
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// alertMetrics are the metric families the Prometheus rules' expressions
// read (deploy/prometheus/rules/*.yml: pix_ and temporal_ ones, a
// histogram's _bucket, _count and _sum series under its family's name; up
// is Prometheus's own, the recording rules' pix: names the rules' own).
func alertMetrics(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../deploy/prometheus/rules/*.yml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	name := regexp.MustCompile(`\b(?:pix|temporal)_[a-z_]+`)
	histogram := regexp.MustCompile(`_(?:bucket|count|sum)$`)
	var names []string
	for _, file := range files {
		raw, err := os.ReadFile(file)
		require.NoError(t, err)
		var rules struct {
			Groups []struct {
				Rules []struct{ Expr string }
			}
		}
		require.NoError(t, yaml.Unmarshal(raw, &rules), file)
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				for _, n := range name.FindAllString(r.Expr, -1) {
					names = append(names, histogram.ReplaceAllString(n, ""))
				}
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Every metric the dashboard charts and the alerts watch exists under that
// name once the service has done what the metric counts: a dashboard that
// names a metric wrongly would chart nothing, an alert would never fire,
// and nobody would notice until the day it mattered.
func TestDashboardChartsRealMetrics(t *testing.T) {
	s := newStack(t, shared, func(c *config.Config) { c.PSPRetryInitial = 100 * time.Millisecond })
	s.openAccount("acc-1", 100_000)
	s.openAccount("acc-closed", 0)
	require.NoError(t, s.store.CloseAccount(context.Background(), "acc-closed"))
	require.NoError(t, s.psp.SetBehavior("flaky@example.com", pspsim.Behavior{Mode: pspsim.ModeFail, Times: 1}))
	// Refused credentials once: an answer that needs a human (counted), then settled.
	require.NoError(t, s.psp.SetBehavior("expired@example.com", pspsim.Behavior{Mode: pspsim.ModeUnauthorized, Times: 1}))

	credited, failed := pixID(), pixID()
	require.Equal(t, http.StatusAccepted, s.post(webhook{credited, "acc-1", 100}).Status)
	require.True(t, s.post(webhook{credited, "acc-1", 100}).Body["duplicate"].(bool))
	require.Equal(t, http.StatusAccepted, s.post(webhook{failed, "acc-closed", 100}).Status)
	unsigned, err := http.Post(s.baseURL+"/webhooks/pix", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	unsigned.Body.Close()
	require.Equal(t, http.StatusUnauthorized, unsigned.StatusCode)
	transfer := s.sendPix(uuid.NewString(), "acc-1", 1_000, "flaky@example.com")
	require.Equal(t, http.StatusCreated, transfer.Status, "%v", transfer.Body)
	s.waitStatus(credited, pix.StatusDone, 30*time.Second)
	s.waitStatus(failed, pix.StatusFailed, 30*time.Second)
	s.waitTransfer(transfer.Body["id"].(string), pix.TransferSettled, 30*time.Second)
	refused := s.sendPix(uuid.NewString(), "acc-1", 1_000, "expired@example.com")
	require.Equal(t, http.StatusCreated, refused.Status, "%v", refused.Body)
	s.waitTransfer(refused.Body["id"].(string), pix.TransferSettled, 30*time.Second)
	require.NoError(t, s.reconcileNow())
	// A request Temporal refuses (no such run) counts as a failed request.
	_, err = s.app.Temporal.DescribeWorkflow(context.Background(), "no-such-workflow-"+randomSuffix(), "")
	require.Error(t, err)

	want := dashboardMetrics(t)
	require.Contains(t, want, "pix_dispatch_lag_seconds")
	require.Contains(t, want, "temporal_workflow_task_schedule_to_start_latency_seconds")
	alerted := alertMetrics(t)
	require.Contains(t, alerted, "pix_reconcile_differences")
	require.Contains(t, alerted, "pix_psp_attention_total")
	require.Contains(t, alerted, "pix_webhook_request_duration_seconds")
	require.Contains(t, alerted, "pix_transfer_oldest_open_age_seconds")
	want = append(want, alerted...)
	// The SDK's metrics are read at the scrape; a run's last counts land
	// as its result is reported.
	var missing []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		families, err := s.app.Metrics.Gather()
		require.NoError(t, err)
		present := map[string]bool{}
		for _, f := range families {
			present[f.GetName()] = true
		}
		missing = slices.DeleteFunc(slices.Clone(want), func(n string) bool { return present[n] })
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	require.Empty(t, missing, "the dashboard charts, or the alerts watch, metrics that don't exist")
}
