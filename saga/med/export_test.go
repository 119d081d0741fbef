package med

import "context"

// SetRetried makes the activities see every call as an attempt after a
// first (true) or as the first (false), as Temporal's retries would.
func SetRetried(v bool) { retried = func(context.Context) bool { return v } }
