package workflows

// SameArgsForTest is sameArgs, for the tests of package workflows_test.
func (s ScheduleSync) SameArgsForTest(stored, want []any) bool { return s.sameArgs(stored, want) }
