package workflows

// SameArgsForTest is sameArgs, for the tests of package workflows_test.
func (s ScheduleSync) SameArgsForTest(stored, want []any) bool { return s.sameArgs(stored, want) }

// CatchUpPartsPerRun is catchUpPartsPerRun, for the catch-up's tests.
const CatchUpPartsPerRun = catchUpPartsPerRun
