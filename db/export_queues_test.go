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
	queues := s.DueQueues()
	out := make([]DeclaredQueue, len(queues))
	for i, q := range queues {
		out[i] = DeclaredQueue{q, q.queue.Name, q.queue.Table, q.queue.Key}
	}
	return out
}

// QueueForTest builds the queue spec declares on s, without declaring it:
// a queue of a test's own table.
func QueueForTest(s *Store, spec QueueSpec) (DueQueue, error) {
	q, err := buildQueue(spec)
	return DueQueue{s, q}, err
}
