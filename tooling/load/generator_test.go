package load

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRoundRobinTakesTurns(t *testing.T) {
	t.Parallel()
	r := newRoundRobin([]string{"a", "b", "c"})
	var got []string
	for range 7 {
		got = append(got, r.next())
	}
	require.Equal(t, []string{"a", "b", "c", "a", "b", "c", "a"}, got)

	// Concurrent callers share the turns evenly.
	r = newRoundRobin([]string{"a", "b"})
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				u := r.next()
				mu.Lock()
				counts[u]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Equal(t, map[string]int{"a": 400, "b": 400}, counts)
}

// fakeAPI answers every webhook 202 as a first delivery (the first time an
// end_to_end_id is seen by any replica) or a duplicate, and counts what it
// was sent; failFirst answers the first n requests 503.
type fakeAPI struct {
	srv       *httptest.Server
	requests  atomic.Int64
	failFirst int64
}

func newFakeAPIs(t *testing.T, n int, failFirst int64) ([]*fakeAPI, []string) {
	var mu sync.Mutex
	seen := map[string]bool{}
	var apis []*fakeAPI
	var urls []string
	for range n {
		a := &fakeAPI{failFirst: failFirst}
		a.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if a.requests.Add(1) <= a.failFirst {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			id := r.Header.Get("webhook-id")
			mu.Lock()
			dup := seen[id]
			seen[id] = true
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, `{"duplicate":%t}`, dup)
		}))
		t.Cleanup(a.srv.Close)
		apis = append(apis, a)
		urls = append(urls, a.srv.URL)
	}
	return apis, urls
}

// RunN sends exactly n arrivals, spread over the replicas in turn, and a
// resend goes to the next replica, as behind a round-robin balancer.
func TestRunNSpreadsExactlyNArrivalsOverTheReplicas(t *testing.T) {
	t.Parallel()
	apis, urls := newFakeAPIs(t, 2, 0)
	s, err := NewSession(Options{APIURLs: urls, RunID: "RUNID00001", Accounts: 3, Seed: 1, SigningKey: []byte("0123456789abcdef0123456789abcdef")})
	require.NoError(t, err)
	defer s.Close()
	step, err := s.RunN(context.Background(), 2000, 40)
	require.NoError(t, err)
	require.EqualValues(t, 40, step.Arrivals)
	require.EqualValues(t, 40, step.Requests)
	require.EqualValues(t, 40, step.Acked)
	require.EqualValues(t, 20, apis[0].requests.Load())
	require.EqualValues(t, 20, apis[1].requests.Load())
	sent, acked := s.Progress()
	require.Equal(t, 40, sent)
	require.Equal(t, 40, acked)
}

func TestResendsGoToTheNextReplica(t *testing.T) {
	t.Parallel()
	// Replica 0 refuses its first request: the PIX is resent, to replica 1.
	apis, urls := newFakeAPIs(t, 2, 0)
	apis[0].failFirst = 1
	s, err := NewSession(Options{APIURLs: urls, RunID: "RUNID00002", Accounts: 1, Seed: 1, RetryUnacked: true, RetryFor: time.Minute})
	require.NoError(t, err)
	defer s.Close()
	step, err := s.RunN(context.Background(), 100, 1)
	require.NoError(t, err)
	require.EqualValues(t, 2, step.Requests)
	require.EqualValues(t, 1, step.Acked)
	require.Equal(t, map[string]int64{"http 503": 1}, step.Errors)
	require.EqualValues(t, 1, apis[0].requests.Load())
	require.EqualValues(t, 1, apis[1].requests.Load())
}

func TestOneAPIURLStillWorks(t *testing.T) {
	t.Parallel()
	apis, urls := newFakeAPIs(t, 1, 0)
	s, err := NewSession(Options{APIURL: urls[0], RunID: "RUNID00003", Accounts: 1, Seed: 1})
	require.NoError(t, err)
	defer s.Close()
	step, err := s.Run(context.Background(), 200, 50*time.Millisecond)
	require.NoError(t, err)
	require.Positive(t, step.Arrivals)
	require.Equal(t, step.Requests, apis[0].requests.Load())
}

func TestOpenModelNStopsAtItsLimit(t *testing.T) {
	t.Parallel()
	var n int
	got := openModelN(context.Background(), time.Now(), 1e6, time.Hour, 25, func(time.Time) { n++ })
	require.EqualValues(t, 25, got)
	require.Equal(t, 25, n)
}
