package med_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// Review r14 L2: a "not yet" (med.NotYetType) that does not say the time
// left (no details) is answered by a wait of a minute (earlyTolerance, at
// most CreditPoll), as Finish's and the close's alike, never by a poll of
// the database every second. The database 5 minutes behind the run: a
// handful of asks a minute apart, then the step passes. Seen failing on
// the old run (a "not yet" every second: some 300 asks).
func TestANotYetWithoutTheTimeLeftWaitsAMinute(t *testing.T) {
	const behind = 5 * time.Minute
	for name, tc := range map[string]struct {
		report func() med.Report
		step   string
	}{
		"finish": {inParts, "FinishReport"},
		"close": {func() med.Report {
			r := inParts()
			r.ReturnedCents, r.Returns, r.FirstRtrID, r.RefundClosedAt = 0, 0, nil, nil
			r.ReturnUntil = ptr(start.Add(30 * time.Second))
			return r
		}, "CloseRefundRequest"},
	} {
		t.Run(name, func(t *testing.T) {
			r := tc.report()
			env, s := newRun(t, r)
			s.dbBehind, s.noLeft = behind, true

			env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})

			out := result(t, env)
			require.Equal(t, med.StatusEnded, out.Status)
			asks := s.called(tc.step)
			require.GreaterOrEqual(t, len(asks), 3, "not yet, ..., passed")
			require.LessOrEqual(t, len(asks), 8, "asked every second: %d asks", len(asks))
			for i := 1; i < len(asks); i++ {
				require.GreaterOrEqual(t, asks[i].Sub(asks[i-1]), time.Minute-time.Second, "ask %d", i)
			}
			require.False(t, asks[len(asks)-1].Before(r.ReturnUntil.Add(behind)), "passed before return_until by the database's clock")
			if name == "close" {
				require.Len(t, s.closings, 1)
				require.Equal(t, dict.Rejected, s.closings[0].Result)
			}
		})
	}
}
