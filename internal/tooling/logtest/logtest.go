package logtest

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
)

// Lines collects the log lines written to it; safe for concurrent use.
type Lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Logger is a JSON logger that writes to l.
func (l *Lines) Logger() *slog.Logger { return slog.New(slog.NewJSONHandler(l, nil)) }

func (l *Lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String is every line written so far.
func (l *Lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Count is how many JSON lines have msg as their message.
func (l *Lines) Count(msg string) int {
	n := 0
	for line := range strings.Lines(l.String()) {
		var entry struct{ Msg string }
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == msg {
			n++
		}
	}
	return n
}
