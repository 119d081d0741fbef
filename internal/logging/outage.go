package logging

import (
	"log/slog"
	"time"
)

// Outage logs a loop's failing rounds without flooding the log: the first
// failure, then one line every Every while it lasts, and one line when a
// round succeeds again. The zero value logs every 10 s. Not safe for
// concurrent use: one loop owns it.
type Outage struct {
	Every time.Duration

	since, lastLogged time.Time
}

// Failed records a failed round and logs it if it is time to.
func (o *Outage) Failed(log *slog.Logger, msg string, err error, attrs ...any) {
	every := o.Every
	if every <= 0 {
		every = 10 * time.Second
	}
	if o.since.IsZero() {
		o.since = time.Now()
	}
	if time.Since(o.lastLogged) >= every {
		log.Error(msg, append([]any{"error", err, "failing_for", time.Since(o.since).Round(time.Second).String()}, attrs...)...)
		o.lastLogged = time.Now()
	}
}

// Succeeded records a successful round, and logs the end of an outage.
func (o *Outage) Succeeded(log *slog.Logger, msg string) {
	if o.since.IsZero() {
		return
	}
	log.Info(msg, "failed_for", time.Since(o.since).Round(time.Second).String())
	o.since, o.lastLogged = time.Time{}, time.Time{}
}
