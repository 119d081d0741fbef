package connlimit

// IdleConns is the number of connections marked idle on all l's
// listeners: tests wait on it, for the server marks a connection idle
// after its client may already have read the answer.
func (l *Limiter) IdleConns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, b := range l.budgets {
		b.mu.Lock()
		n += len(b.idle)
		b.mu.Unlock()
	}
	return n
}
