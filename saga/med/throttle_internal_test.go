package med

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/pixbank/pix/internal/dict"
)

// simBucket is a DICT whose one bucket is simulated on the fake clock of
// the throttle under test: it refills refill tokens every period, each page
// sent spends one (a 429 below none: debt counted, as the specification's
// "subtrai 1" allows); Bucket reads it as it is (or reading, when set), or
// fails with err.
type simBucket struct {
	DICTLister
	clock    *time.Time
	at       time.Time
	tokens   float64
	capacity float64
	every    time.Duration
	reading  *dict.Bucket
	err      error
}

func (b *simBucket) advance() {
	b.tokens = min(b.tokens+float64(b.clock.Sub(b.at))/float64(b.every), b.capacity)
	b.at = *b.clock
}

func (b *simBucket) Bucket(ctx context.Context, policy string) (dict.Bucket, error) {
	if b.err != nil {
		return dict.Bucket{}, b.err
	}
	if b.reading != nil {
		return *b.reading, nil
	}
	b.advance()
	return dict.Bucket{Name: policy, AvailableTokens: int64(math.Floor(b.tokens)), Capacity: int64(b.capacity),
		RefillTokens: int64(time.Minute / b.every), RefillPeriodSec: 60}, nil
}

// send is a page sent: a token spent.
func (b *simBucket) send() {
	b.advance()
	b.tokens--
}

// throttleFixture is a throttle of a policy of its test's own (its
// counters apart) on a fake clock: its sleep moves the clock on and
// records the waits; b is its bucket, 40 a minute of 200, at tokens.
type throttleFixture struct {
	t     *testing.T
	clock time.Time
	waits []time.Duration
	b     *simBucket
	th    *throttle
}

func newThrottleFixture(t *testing.T, tokens float64, bucketWait time.Duration) *throttleFixture {
	f := &throttleFixture{t: t, clock: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
	f.b = &simBucket{clock: &f.clock, at: f.clock, tokens: tokens, capacity: 200, every: 1500 * time.Millisecond}
	l := &Lister{DICT: f.b, BucketWait: bucketWait, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	f.th = &throttle{l: l, ctx: context.Background(), policy: "TEST_" + t.Name(), now: func() time.Time { return f.clock },
		sleep: func(d time.Duration) error {
			f.waits = append(f.waits, d)
			f.clock = f.clock.Add(d)
			return nil
		}}
	return f
}

// page asks the throttle for a page, sends it and returns its wait.
func (f *throttleFixture) page() time.Duration {
	f.t.Helper()
	n := len(f.waits)
	if err := f.th.page(); err != nil {
		f.t.Fatal(err)
	}
	f.b.send()
	if len(f.waits) == n {
		return 0
	}
	return f.waits[n]
}

// Attack review MED-1: at or below the reserve the lister spent the whole
// refill (a page per token's refill, a token a page), so the reserve left
// to the 72 hours' expiry never came back. Now a page below the reserve
// waits the time the refill takes to bring the count above it, at most
// maxBucketWait: from 0 of 200 (40 a minute) a page every 5 s spends 30%
// of the refill and the bucket (as the DICT counts it, simulated) climbs
// back to its reserve within about 90 s, the lister never stopped.
// Before, it stayed at 0 for ever (a page every 1.5 s).
func TestTheThrottleRebuildsTheReserve(t *testing.T) {
	f := newThrottleFixture(t, 1, 0)
	start := f.clock
	for i := 0; f.b.tokens < 40-1e-6; i++ { // (the float sums of the refill)
		if i == 40 {
			t.Fatalf("after %d pages, %s, the bucket is at %.1f, not back to its reserve (40): waits %v", i, f.clock.Sub(start), f.b.tokens, f.waits)
		}
		if d := f.page(); i > 0 && d == 0 {
			t.Fatalf("page %d went unthrottled at %.1f tokens", i+1, f.b.tokens)
		}
	}
	if f.b.tokens < 0 {
		t.Fatalf("the bucket in debt: %.1f", f.b.tokens)
	}
	if took := f.clock.Sub(start); took > 100*time.Second {
		t.Errorf("the reserve came back in %s, not within 100 s", took)
	}
	if f.waits[0] != maxBucketWait {
		t.Errorf("the first wait at 0 of 200: %s, not maxBucketWait (%s)", f.waits[0], maxBucketWait)
	}
	// Above the reserve again, the pages go at the refill's pace: the
	// bucket stays at its reserve, never below.
	for range 100 {
		f.page()
		if f.b.tokens < 39 {
			t.Fatalf("the bucket fell to %.1f, under its reserve", f.b.tokens)
		}
	}
}

// One page's wait is the time the refill takes to bring the count above
// the reserve (short tokens, each one token's refill), bounded by
// Lister.BucketWait, by default maxBucketWait (5 s, even for a bucket that
// refills more slowly); above the reserve, none. At the reserve itself
// (<=, not <) a page waits one token's refill.
func TestAPagesWaitIsWhatItIsShortOf(t *testing.T) {
	for _, c := range []struct {
		name       string
		tokens     int64
		every      time.Duration
		bucketWait time.Duration
		want       time.Duration
	}{
		{"above the reserve", 41, 1500 * time.Millisecond, 0, 0},
		{"at the reserve", 40, 1500 * time.Millisecond, 0, 1500 * time.Millisecond},
		{"two short", 39, 1500 * time.Millisecond, 0, 3 * time.Second},
		{"empty: the default bound", 0, 1500 * time.Millisecond, 0, maxBucketWait},
		{"empty, bounded by BucketWait", 0, 1500 * time.Millisecond, time.Minute, time.Minute},
		{"empty, BucketWait beyond: short*every", 0, 1500 * time.Millisecond, time.Hour, 41 * 1500 * time.Millisecond},
		{"a slow refill at the reserve: the default bound", 40, 10 * time.Second, 0, maxBucketWait},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newThrottleFixture(t, 0, c.bucketWait)
			f.b.reading = &dict.Bucket{AvailableTokens: c.tokens, Capacity: 200, RefillTokens: 1, RefillPeriodSec: int64(c.every / time.Second)}
			if c.every < time.Second {
				t.Fatal("every in whole seconds")
			}
			if c.every == 1500*time.Millisecond {
				f.b.reading.RefillTokens, f.b.reading.RefillPeriodSec = 40, 60
			}
			f.page()
			if d := f.page(); d != c.want {
				t.Errorf("waited %s, want %s", d, c.want)
			}
		})
	}
}

// The count refills at the reading's rate and spends one token a page:
// read at 100 (101 before the first page), the second page leaves 99; 1.5
// s later (one token) the third leaves 99 again; at once, the fourth 98.
func TestTheCountRefillsAndSpendsOneAPage(t *testing.T) {
	f := newThrottleFixture(t, 101, 0)
	f.page()
	f.page()
	if f.th.tokens != 99 {
		t.Fatalf("after the second page: %.2f tokens, want 99", f.th.tokens)
	}
	f.clock = f.clock.Add(1500 * time.Millisecond)
	f.page()
	if f.th.tokens != 99 {
		t.Fatalf("after a token's refill and a page: %.2f tokens, want 99", f.th.tokens)
	}
	f.page()
	if f.th.tokens != 98 {
		t.Fatalf("after a page at once: %.2f tokens, want 98", f.th.tokens)
	}
	f.clock = f.clock.Add(time.Hour)
	f.page()
	if f.th.tokens != 199 {
		t.Fatalf("after an hour and a page: %.2f tokens, want 199 (the capacity, less one)", f.th.tokens)
	}
}

// A page's wait ends with its context, its error the context's, at once.
func TestAPagesWaitEndsWithItsContext(t *testing.T) {
	f := newThrottleFixture(t, 1, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	f.th.ctx = ctx
	f.th.sleep = func(d time.Duration) error { return sleep(ctx, d, func() {}) }
	f.page()
	time.AfterFunc(20*time.Millisecond, cancel)
	begun := time.Now()
	if err := f.th.page(); !errors.Is(err, context.Canceled) {
		t.Fatalf("the page's wait: %v, want context.Canceled", err)
	}
	if took := time.Since(begun); took > 5*time.Second {
		t.Fatalf("the wait ended %s after it began, not at its context's end", took)
	}
}

// Attack review LOW-1: a reading of tokens below none (the debt the
// specification's "subtrai 1" allows) or above the capacity throttled
// nothing, counted as a failed read. It is the bucket's state: clamped to
// [0, Capacity] and throttled by, no failure counted. A capacity of none
// is no bucket's state: a failure, the list unthrottled.
func TestABucketInDebtOrOverfullIsThrottledBy(t *testing.T) {
	for _, c := range []struct {
		name          string
		tokens, cap   int64
		paced         bool
		counted, want float64
	}{
		{"in debt", -7, 200, true, 0, 0},
		{"over its capacity", 250, 200, true, 0, 200},
		{"no capacity", 5, 0, false, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newThrottleFixture(t, 0, 0)
			f.b.reading = &dict.Bucket{AvailableTokens: c.tokens, Capacity: c.cap, RefillTokens: 40, RefillPeriodSec: 60}
			failed := testutil.ToFloat64(bucketReadFailedTotal.WithLabelValues(f.th.policy))
			f.page()
			d := f.page()
			if f.th.paced != c.paced {
				t.Fatalf("paced %v, want %v", f.th.paced, c.paced)
			}
			if got := testutil.ToFloat64(bucketReadFailedTotal.WithLabelValues(f.th.policy)) - failed; got != c.counted {
				t.Errorf("%v failed reads counted, want %v", got, c.counted)
			}
			if !c.paced {
				if d != 0 || !math.IsNaN(testutil.ToFloat64(bucketTokens.WithLabelValues(f.th.policy))) {
					t.Errorf("unread bucket: waited %s, gauge %v", d, testutil.ToFloat64(bucketTokens.WithLabelValues(f.th.policy)))
				}
				return
			}
			if c.want == 0 && d != maxBucketWait {
				t.Errorf("a bucket in debt: waited %s, want %s", d, maxBucketWait)
			}
			if want := min(c.want+float64(d)/float64(1500*time.Millisecond), 200) - 1; math.Abs(f.th.tokens-want) > 1e-9 {
				t.Errorf("counted %.2f tokens, want %.2f", f.th.tokens, want)
			}
		})
	}
}

// Attack review LOW-3: a read of the bucket cut by the walk's context (a
// cancelled or timed-out attempt) was counted as a failed read, the gauge
// NaN, a WARN. It is the attempt's end, not the bucket's: none of these.
// A read that fails on a live context is counted.
func TestABucketReadCutByItsContextIsNoFailure(t *testing.T) {
	f := newThrottleFixture(t, 0, 0)
	bucketTokens.WithLabelValues(f.th.policy).Set(3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.th.ctx = ctx
	f.b.err = context.Canceled
	failed := testutil.ToFloat64(bucketReadFailedTotal.WithLabelValues(f.th.policy))
	f.page()
	f.page()
	if got := testutil.ToFloat64(bucketReadFailedTotal.WithLabelValues(f.th.policy)) - failed; got != 0 {
		t.Errorf("a read cut by its context counted as %v failures", got)
	}
	if g := testutil.ToFloat64(bucketTokens.WithLabelValues(f.th.policy)); g != 3 {
		t.Errorf("the gauge %v, want the last reading (3)", g)
	}

	f = newThrottleFixture(t, 0, 0)
	f.b.err = errors.New("dict getPolicy: 503")
	failed = testutil.ToFloat64(bucketReadFailedTotal.WithLabelValues(f.th.policy))
	f.page()
	f.page()
	if got := testutil.ToFloat64(bucketReadFailedTotal.WithLabelValues(f.th.policy)) - failed; got != 1 {
		t.Errorf("a read that failed on a live context counted %v times, want 1", got)
	}
}

// Attack review LOW-4: a 429 says the bucket is empty whatever the count
// says: the count starts again from none, now.
func TestA429EmptiesTheCount(t *testing.T) {
	f := newThrottleFixture(t, 200, 0)
	f.page()
	f.page()
	f.clock = f.clock.Add(time.Second)
	f.th.rateLimited()
	if f.th.tokens != 0 || !f.th.at.Equal(f.clock) {
		t.Fatalf("after a 429: %.2f tokens at %s, want none at %s", f.th.tokens, f.th.at, f.clock)
	}
	if d := f.page(); d != maxBucketWait {
		t.Fatalf("the page after a 429 waited %s, want %s", d, maxBucketWait)
	}
}
