package app

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/internal/config"
)

// awayTemporal answers GetSearchAttributes "unavailable" its first away
// calls, then answers.
type awayTemporal struct {
	client.Client
	away  int32
	calls atomic.Int32
}

func (f *awayTemporal) GetSearchAttributes(context.Context) (*workflowservice.GetSearchAttributesResponse, error) {
	if f.calls.Add(1) <= f.away {
		return nil, serviceerror.NewUnavailable("connection refused")
	}
	return &workflowservice.GetSearchAttributesResponse{}, nil
}

// A worker started while Temporal is away asks again (after 1 s, doubling)
// until it answers, and gives up only when it is stopped.
func TestWaitForTemporal(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))

	once := &awayTemporal{away: 1}
	a := &App{Log: quiet, Temporal: once, Cfg: config.Default()}
	start := time.Now()
	if !a.waitForTemporal(t.Context()) {
		t.Fatal("Temporal answered at the second call: not waited for")
	}
	if took := time.Since(start); once.calls.Load() != 2 || took < 900*time.Millisecond || took > 3*time.Second {
		t.Errorf("Temporal away once: %d calls in %v, want 2 about 1 s apart", once.calls.Load(), took)
	}

	gone := &awayTemporal{away: 1 << 30}
	a = &App{Log: quiet, Temporal: gone, Cfg: config.Default()}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start = time.Now()
	if a.waitForTemporal(ctx) {
		t.Fatal("Temporal never answers: reported up")
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("stopped while waiting: returned after %v", took)
	}
}
