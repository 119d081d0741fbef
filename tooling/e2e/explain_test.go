//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/stretchr/testify/require"
	deploymentpb "go.temporal.io/api/deployment/v1"
	enumspb "go.temporal.io/api/enums/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/worker"
)

// A wait for a saga's row that runs out says why: where its run stood (not
// started; its first workflow task waiting in a partition that no poller
// reached; an activity waiting for a worker), what the dispatcher's row
// held, and how Temporal routed the family's task queue. A bare "did not
// become" names no cause; this names the next one.

// sagaRun is what explainSaga reads of one saga's row: its run, its family
// (whose task queue the run is on) and the row itself, as Row (a query
// returning it as text, its $1 Key) reads it.
type sagaRun struct {
	WorkflowID string
	Family     runconf.Family
	Row, Key   string
}

// awaitSaga waits up to within for done, run's row reaching what the
// caller waits for (what says it); on a timeout the test fails with
// explainSaga's account. The bound counts from the test's start, when its
// stack's build takes every family's runs and its own worker polls every
// family's queue (waitCurrentBuild).
func (s *stack) awaitSaga(run sagaRun, within time.Duration, what string, done func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(within)
	for !done() {
		if time.Now().After(deadline) {
			require.FailNow(s.t, fmt.Sprintf("%s within %s", what, within), s.explainSaga(run))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// explainSaga describes run: its workflow (the pending workflow task,
// the pending activities, the versioning), its row, the family's task
// queue partition by partition (the pollers each saw last, each one's
// backlog), the stack's own pollers of it (the SDK's metrics), and the
// Worker Deployment's routing and this build's version.
func (s *stack) explainSaga(run sagaRun) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var b strings.Builder
	var row string
	if err := s.store.Pool().QueryRow(ctx, run.Row, run.Key).Scan(&row); err != nil {
		row = "unread: " + err.Error()
	}
	fmt.Fprintf(&b, "explained at %s\nits row: %s\n", time.Now().UTC().Format(time.RFC3339Nano), row)
	c := s.client()
	w, err := c.DescribeWorkflow(ctx, run.WorkflowID, "")
	var raw proto.Message
	if err == nil {
		raw = w.RawResponse
	}
	fmt.Fprintf(&b, "workflow %s: %s\n", run.WorkflowID, protoOrErr(raw, err))
	queue := s.cfg.TaskQueues().Of(run.Family)
	for _, kind := range []enumspb.TaskQueueType{enumspb.TASK_QUEUE_TYPE_WORKFLOW, enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
		for p := range devServerPartitions {
			name := queue
			if p > 0 {
				name = fmt.Sprintf("/_sys/%s/%d", queue, p) // the partition's own name
			}
			// Stats are the root's only (of every partition); each
			// partition tells its pollers and its own backlog (status).
			tq, err := c.WorkflowService().DescribeTaskQueue(ctx, &workflowservice.DescribeTaskQueueRequest{
				Namespace: s.cfg.TemporalNamespace, TaskQueue: &taskqueuepb.TaskQueue{Name: name, Kind: enumspb.TASK_QUEUE_KIND_NORMAL},
				TaskQueueType: kind, ReportStats: p == 0,
				//lint:ignore SA1019 the one way to read a partition's own backlog: stats are the root's only
				IncludeTaskQueueStatus: true,
			})
			fmt.Fprintf(&b, "task queue %s (%s): %s\n", name, kind, protoOrErr(tq, err))
		}
	}
	fmt.Fprintf(&b, "the stack's pollers of %s (SDK metrics):\n%s", queue, s.pollerMetrics(queue))
	if s.cfg.WorkerVersioning {
		v := worker.ThisBuild(s.cfg.TaskQueues())
		d, err := c.WorkflowService().DescribeWorkerDeployment(ctx, &workflowservice.DescribeWorkerDeploymentRequest{
			Namespace: s.cfg.TemporalNamespace, DeploymentName: v.DeploymentName,
		})
		fmt.Fprintf(&b, "worker deployment %s: %s\n", v.DeploymentName, protoOrErr(d, err))
		dv, err := c.WorkflowService().DescribeWorkerDeploymentVersion(ctx, &workflowservice.DescribeWorkerDeploymentVersionRequest{
			Namespace:         s.cfg.TemporalNamespace,
			DeploymentVersion: &deploymentpb.WorkerDeploymentVersion{DeploymentName: v.DeploymentName, BuildId: v.BuildID},
			// Each of the version's task queues' backlog.
			ReportTaskQueueStats: true,
		})
		fmt.Fprintf(&b, "this build's version %s: %s\n", v.BuildID, protoOrErr(dv, err))
	}
	return b.String()
}

// devServerPartitions is how many partitions a task queue of the dev
// server has (Temporal's default matching.numTaskqueueReadPartitions; the
// tests' server keeps it).
const devServerPartitions = 4

// pollerMetrics lists the stack's Temporal SDK metrics of its pollers of
// queue: how many poll each kind of task (workflow_task: the normal queue,
// workflow_sticky_task, activity_task), and their polls.
func (s *stack) pollerMetrics(queue string) string {
	families, err := s.app.Metrics.Gather()
	if err != nil {
		return "unread: " + err.Error()
	}
	var b strings.Builder
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "temporal_") || !strings.Contains(f.GetName(), "poll") {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			ours := false
			for _, l := range m.GetLabel() {
				ours = ours || l.GetValue() == queue
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			if ours {
				fmt.Fprintf(&b, "  %s{%s} %g\n", f.GetName(), strings.Join(labels, ","), sampleValue(m))
			}
		}
	}
	return b.String()
}

// numPollers is how many polls of pollerType (workflow_task: the normal
// queue's, workflow_sticky_task, activity_task) the stack's worker of
// queue has open (the SDK's temporal_num_pollers).
func (s *stack) numPollers(queue, pollerType string) float64 {
	s.t.Helper()
	families, err := s.app.Metrics.Gather()
	require.NoError(s.t, err)
	for _, f := range families {
		if f.GetName() != "temporal_num_pollers" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["task_queue"] == queue && labels["poller_type"] == pollerType {
				return sampleValue(m)
			}
		}
	}
	return 0
}

// protoOrErr is m as indented JSON, or err.
func protoOrErr(m proto.Message, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	j, err := protojson.MarshalOptions{Multiline: true}.Marshal(m)
	if err != nil {
		return "unprintable: " + err.Error()
	}
	return string(j)
}
