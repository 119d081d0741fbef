package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
)

// probeWorkflow runs what the dashboard's Temporal panels chart: a local
// activity that succeeds and one that fails; failing, an activity that
// fails, whose error fails the run.
func probeWorkflow(ctx workflow.Context, fail bool) error {
	once := &temporal.RetryPolicy{MaximumAttempts: 1}
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 10 * time.Second, RetryPolicy: once})
	if err := workflow.ExecuteLocalActivity(lctx, probeLocal).Get(ctx, nil); err != nil {
		return err
	}
	if !fail {
		return nil
	}
	_ = workflow.ExecuteLocalActivity(lctx, probeLocalFails).Get(ctx, nil) //nolint:errcheck // counted as failed, which is the point
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second, RetryPolicy: once})
	return workflow.ExecuteActivity(actx, probeFails).Get(ctx, nil)
}

func probeLocal(context.Context) error      { return nil }
func probeLocalFails(context.Context) error { return errors.New("probe: fails") }
func probeFails(context.Context) error      { return errors.New("probe: fails") }

// series is one sample of a gathered family: its labels, and its value (a
// counter's) or its buckets' upper bounds (a histogram's).
type series struct {
	labels  map[string]string
	value   float64
	buckets []float64
}

func gather(t *testing.T, families []*dto.MetricFamily, name string) (dto.MetricType, []series) {
	t.Helper()
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		var out []series
		for _, m := range f.GetMetric() {
			s := series{labels: map[string]string{}, value: m.GetCounter().GetValue()}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			for _, b := range m.GetHistogram().GetBucket() {
				s.buckets = append(s.buckets, b.GetUpperBound())
			}
			out = append(out, s)
		}
		return f.GetType(), out
	}
	return 0, nil
}

// The Temporal SDK's metrics as the Grafana dashboard reads them
// (deploy/grafana/dashboards/pix.json, its Temporal panels): each family's
// name and type, the labels its panels group by, with the values they
// show, and a latency's buckets, in the process's one registry. The alerts
// read none of the SDK's.
func TestTemporalSDKMetricsAsTheDashboardReadsThem(t *testing.T) {
	s := temporaltest.StartT(t)
	r := metrics.New()
	handler, err := metrics.TemporalSDK(r, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	require.NoError(t, err)
	c := s.Client(t, func(o *client.Options) { o.MetricsHandler = handler })

	queue := fmt.Sprintf("pix-metrics-%d", rand.Uint64())
	w := sdkworker.New(c, queue, sdkworker.Options{})
	w.RegisterWorkflowWithOptions(probeWorkflow, workflow.RegisterOptions{Name: "Probe"})
	w.RegisterActivityWithOptions(probeLocal, activityNamed("ProbeLocal"))
	w.RegisterActivityWithOptions(probeLocalFails, activityNamed("ProbeLocalFails"))
	w.RegisterActivityWithOptions(probeFails, activityNamed("ProbeFails"))
	require.NoError(t, w.Start())
	defer w.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, fail := range []bool{false, true} {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: queue}, "Probe", fail)
		require.NoError(t, err)
		require.Equal(t, fail, run.Get(ctx, nil) != nil)
	}
	// A request Temporal refuses: a failed request, by operation.
	_, err = c.DescribeWorkflow(ctx, "no-such-workflow", "")
	require.Error(t, err)

	// The names are those tally's Prometheus reporter gave them before
	// (the dashboard's); a label's value is the SDK's as it is, the task
	// queue's name as the Temporal UI shows it (tally showed "pix_credit"
	// for "pix-credit"; the dashboard groups by it, filters on none).
	shownQueue := queue
	seconds := []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	want := []struct {
		name  string
		typ   dto.MetricType
		match map[string]string // labels of the sample the panel shows
		value float64           // a counter's, 0: any above 0
	}{
		{"temporal_workflow_task_schedule_to_start_latency_seconds", dto.MetricType_HISTOGRAM, map[string]string{"task_queue": shownQueue}, 0},
		{"temporal_workflow_completed_total", dto.MetricType_COUNTER, map[string]string{"workflow_type": "Probe", "task_queue": shownQueue}, 1},
		{"temporal_workflow_failed_total", dto.MetricType_COUNTER, map[string]string{"workflow_type": "Probe", "task_queue": shownQueue}, 1},
		{"temporal_request_total", dto.MetricType_COUNTER, map[string]string{"operation": "StartWorkflowExecution"}, 0},
		{"temporal_request_failure_total", dto.MetricType_COUNTER, map[string]string{"operation": "DescribeWorkflowExecution"}, 1},
		{"temporal_local_activity_execution_latency_seconds", dto.MetricType_HISTOGRAM, map[string]string{"activity_type": "ProbeLocal", "task_queue": shownQueue}, 0},
		{"temporal_activity_execution_failed_total", dto.MetricType_COUNTER, map[string]string{"activity_type": "ProbeFails", "task_queue": shownQueue}, 1},
		{"temporal_local_activity_execution_failed_total", dto.MetricType_COUNTER, map[string]string{"activity_type": "ProbeLocalFails", "task_queue": shownQueue}, 1},
	}
	var problems []string
	require.Eventually(t, func() bool { // a run's last counts land as its result is reported
		families, err := r.Gather()
		require.NoError(t, err)
		problems = nil
		for _, w := range want {
			typ, all := gather(t, families, w.name)
			found := slices.IndexFunc(all, func(s series) bool {
				for k, v := range w.match {
					if s.labels[k] != v {
						return false
					}
				}
				return true
			})
			switch {
			case all == nil:
				problems = append(problems, w.name+": missing")
			case typ != w.typ:
				problems = append(problems, fmt.Sprintf("%s: a %s, want a %s", w.name, typ, w.typ))
			case found < 0:
				problems = append(problems, fmt.Sprintf("%s: no sample with %v among %v", w.name, w.match, labelsOf(all)))
			case w.typ == dto.MetricType_HISTOGRAM && !slices.Equal(all[found].buckets, seconds):
				problems = append(problems, fmt.Sprintf("%s: buckets %v, want %v", w.name, all[found].buckets, seconds))
			case w.typ == dto.MetricType_COUNTER && w.value != 0 && all[found].value != w.value:
				problems = append(problems, fmt.Sprintf("%s%v: %v, want %v", w.name, w.match, all[found].value, w.value))
			case w.typ == dto.MetricType_COUNTER && all[found].value <= 0:
				problems = append(problems, fmt.Sprintf("%s%v: %v, want more than 0", w.name, w.match, all[found].value))
			}
		}
		return len(problems) == 0
	}, 15*time.Second, 200*time.Millisecond, "%v", &problems)
}

func activityNamed(name string) activity.RegisterOptions { return activity.RegisterOptions{Name: name} }

func labelsOf(all []series) []map[string]string {
	var out []map[string]string
	for _, s := range all {
		out = append(out, s.labels)
	}
	return out
}
