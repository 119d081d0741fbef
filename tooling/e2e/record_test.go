//go:build e2e

package e2e

import (
	"os"
	"path/filepath"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// recordDirEnv names the folder a run of the e2e tests writes the histories
// of the runs they mark into (recordHistory), for the replay tests of
// workflows/replay_test.go (the devolução's are kept in
// saga/refund/testdata). Unset, nothing is written. Set, the stacks run
// without payload encryption, so that the histories are recorded in plain
// text as those tests expect (they encrypt copies themselves):
//
//	cd tooling && PIX_RECORD_HISTORIES=$PWD/../saga/refund/testdata go test -tags e2e ./e2e -run 'TestRefundReturnedOnThePSPNotice|TestRefundNotMadeIsReversedOnce/not_done'
const recordDirEnv = "PIX_RECORD_HISTORIES"

func recordingHistories() bool { return os.Getenv(recordDirEnv) != "" }

// recordHistory writes the history of the run of workflowID as <name>.json
// into PIX_RECORD_HISTORIES, in the JSON of `temporal workflow show -o
// json`, when that variable is set.
func (s *stack) recordHistory(workflowID, name string) {
	s.t.Helper()
	dir := os.Getenv(recordDirEnv)
	if dir == "" {
		return
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&historypb.History{Events: s.history(workflowID)})
	require.NoError(s.t, err)
	require.NoError(s.t, os.WriteFile(filepath.Join(dir, name+".json"), append(b, '\n'), 0o644))
	s.t.Logf("recorded the history of %s in %s", workflowID, filepath.Join(dir, name+".json"))
}
