package db

// DeclaredQueue is a declared durable queue as the store builds it, and
// where its rows are.
type DeclaredQueue struct {
	Queue            DueQueue
	Name, Table, Key string
}

// DeclaredQueues is every durable queue declared (the list the store's
// queues are built from), as s builds them.
func DeclaredQueues(s *Store) []DeclaredQueue {
	out := make([]DeclaredQueue, len(dueQueues))
	for i, q := range dueQueues {
		out[i] = DeclaredQueue{DueQueue{s, q}, q.Name, q.Table, q.Key}
	}
	return out
}
