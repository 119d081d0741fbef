package db

// maintenanceSQL holds the statements of queries/maintenance.sql: the
// reconciliation's check of the inbox's live edge. (The retention's
// batched deletes are saga/retention's.)
var maintenanceSQL struct {
	CreditWithoutDone string
}

func init() { bindQueries("maintenance.sql", &maintenanceSQL) }
