package groupcommit

// QueueLen is how many calls wait in g's channel, abandoned ones included.
func QueueLen[C any](g *Committer[C]) int { return len(g.queue) }
