package dispatch

import (
	"context"
	"log/slog"
	"time"

	"github.com/pixbank/pix/db"
)

// Notifier tells the dispatchers, wherever they run, that rows came due:
// the API kicks it after each commit that made a row due, and it sends
// NOTIFY on db.DueChannel, coalescing the kicks that arrive while one
// notification is being sent. The acknowledgement never waits for it.
type Notifier struct {
	store *db.Store
	log   *slog.Logger
	kick  chan struct{}
}

// NewNotifier returns a Notifier; Run drives it.
func NewNotifier(store *db.Store, log *slog.Logger) *Notifier {
	return &Notifier{store: store, log: log, kick: make(chan struct{}, 1)}
}

// Kick asks for a notification. It never blocks.
func (n *Notifier) Kick() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// notifyEvery is the least time between two notifications: the first kick
// after a quiet spell is sent at once (idle latency), a stream of kicks
// becomes one notification per interval (PostgreSQL's work at high ingest).
const notifyEvery = 5 * time.Millisecond

// Run sends notifications until ctx ends. A failed notification is only
// logged: the dispatchers also poll.
func (n *Notifier) Run(ctx context.Context) error {
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-n.kick:
		}
		if wait := time.Until(last.Add(notifyEvery)); wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
			// Kicks that came meanwhile are answered by this notification.
			select {
			case <-n.kick:
			default:
			}
		}
		last = time.Now()
		if err := n.store.NotifyDue(ctx); err != nil && ctx.Err() == nil {
			n.log.Warn("could not notify the dispatchers; they will poll", "error", err)
		}
	}
}
