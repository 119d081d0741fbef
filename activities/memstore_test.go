package activities_test

import (
	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/db"
)

// The stores of the unit tier: *db.Store satisfies what the activities
// need, and so do the tests' in-memory fakes. (The devolução's are its own:
// saga/refund.)
var _ activities.Store = (*db.Store)(nil)
