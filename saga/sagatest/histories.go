package sagatest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
)

// RecordEnv names the folder a saga's recording test writes its histories
// into (NewRecorder), to record them anew after a deliberate change of the
// workflow's history (a new version of it), e.g.:
//
//	PIX_RECORD_HISTORIES=$PWD/saga/block/testdata go test ./saga/block -run TestRecordHistories
const RecordEnv = "PIX_RECORD_HISTORIES"

// Workflow is a saga's workflow as its worker registers it: the function,
// and the name its runs' histories record.
type Workflow struct {
	Func any
	Name string
}

func (wf Workflow) register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(wf.Func, workflow.RegisterOptions{Name: wf.Name})
}

// ReplayRecordedHistories replays the runs of wf recorded on a Temporal
// server into the test's package's testdata/*.json (want of them; what
// says which, for the failure's message) on wf as it is now, a subtest
// "<format>/<file>" each: a change that would break the runs open in
// production fails there. Each replays once with each form a worker
// writes durations in (TEMPORAL_DURATION_WRITE_FORMAT), so that a run
// asleep across the release that turns text on goes on as it was.
func ReplayRecordedHistories(t *testing.T, wf Workflow, want int, what string) {
	t.Helper()
	files, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	require.Len(t, files, want, what)
	for _, f := range []payload.DurationFormat{payload.DurationsNanoseconds, payload.DurationsText} {
		func() {
			previous := payload.WriteDurations(f)
			defer payload.WriteDurations(previous)
			for _, file := range files {
				t.Run(string(f)+"/"+filepath.Base(file), func(t *testing.T) {
					r := worker.NewWorkflowReplayer()
					wf.register(r)
					require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, file))
				})
			}
		}()
	}
}

// Recorder records a saga's runs on a Temporal dev server, for
// ReplayRecordedHistories: a worker runs the saga's workflow with
// activities the test answers (a history records their names and answers
// only, and a replay never runs them), and Save writes each run's history
// as `temporal workflow show -o json` does.
type Recorder struct {
	t *testing.T
	// Client signals the runs (Start starts them).
	Client client.Client
	wf     Workflow
	queue  string
	dir    string
}

// NewRecorder skips the test unless env names the folder to record into;
// else it starts a dev server for the test's time and a worker on queue
// running wf with activities (a struct whose exported methods are the
// saga's activities; others it has are passed over).
func NewRecorder(t *testing.T, env, queue string, wf Workflow, activities any) *Recorder {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		t.Skip(env + " unset: nothing to record")
	}
	c := temporaltest.StartT(t).Client(t)
	w := worker.New(c, queue, worker.Options{})
	wf.register(w)
	w.RegisterActivityWithOptions(activities, activity.RegisterOptions{SkipInvalidStructFunctions: true})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop) // before the client closes: cleanups run last first
	return &Recorder{t: t, Client: c, wf: wf, queue: queue, dir: dir}
}

// Start starts a run of the workflow, id, with input in.
func (r *Recorder) Start(ctx context.Context, id string, in any) client.WorkflowRun {
	r.t.Helper()
	run, err := r.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: r.queue}, r.wf.Name, in)
	require.NoError(r.t, err)
	return run
}

// Save waits for run to end, its result into out (nil: none wanted), and
// writes its history into the folder as <name>.json.
func (r *Recorder) Save(ctx context.Context, name string, run client.WorkflowRun, out any) {
	r.t.Helper()
	require.NoError(r.t, run.Get(ctx, out))
	var history historypb.History
	it := r.Client.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(r.t, err)
		history.Events = append(history.Events, e)
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&history)
	require.NoError(r.t, err)
	require.NoError(r.t, os.WriteFile(filepath.Join(r.dir, name+".json"), append(b, '\n'), 0o644))
}

// Rows are a saga's rows as the activities of a recording test keep them,
// by id: the test sets a row before a run starts or is signalled, and the
// activities, called on the worker's goroutines, read and change it. The
// zero Rows is empty and ready.
type Rows[T any] struct {
	mu   sync.Mutex
	rows map[string]T
}

// Set makes row the row id.
func (r *Rows[T]) Set(id string, row T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rows == nil {
		r.rows = map[string]T{}
	}
	r.rows[id] = row
}

// Get is the row id (the zero T if none was set).
func (r *Rows[T]) Get(id string) T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rows[id]
}

// Change makes the row id change's answer from it, and returns it.
func (r *Rows[T]) Change(id string, change func(T) T) T {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rows == nil {
		r.rows = map[string]T{}
	}
	row := change(r.rows[id])
	r.rows[id] = row
	return row
}
