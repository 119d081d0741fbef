package med

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/pixbank/pix/internal/dict"
)

// throttle paces one walk of a list (a stage of a part, its 429s' walks
// again included) by the bank's bucket of its policy: the first page goes
// unasked; before the second the bucket is read once (getPolicy, a token of
// POLICIES_READ) and its tokens then counted here, one spent a page,
// refilled at the rate the reading says (RefillTokens per RefillPeriodSec;
// the specification's table when it says none). A reading below none (the
// debt the specification's "subtrai 1" allows) or above the capacity is
// counted from within [0, Capacity]. A page asked while the count is at or
// below the reserve (listReserveShare) waits the time the refill takes to
// bring the count above it (the tokens it is short of, each one token's
// refill), at most Lister.BucketWait (maxBucketWait), and is asked then
// whatever the count: below the reserve a page spends less than its wait
// refills (from 0 of 200, a page every 5 s, 30% of the refill), so the
// reserve comes back while the list goes on, slowed; it never stops, never
// ends a part early. A 429 the walk meets empties the count. A read that
// fails, or is not a bucket's state (no capacity, no refill), throttles
// nothing (the 429s are waited out as ever): counted
// (pix_med_dict_bucket_read_failed_total), the gauge of its tokens NaN, a
// WARN; a read cut by the walk's context is the attempt's end, none of these.
type throttle struct {
	l      *Lister
	ctx    context.Context
	policy string
	// now is the clock the tokens are counted by; sleep waits a page's
	// time, heartbeating (its error the context's).
	now   func() time.Time
	sleep func(time.Duration) error
	pages int
	read  bool // the bucket was read, or its read failed
	paced bool // the reading is a bucket's state: the pages are throttled
	// tokens as counted at, of capacity; reserve; every, one token's
	// refill; wait, the bound of one page's wait.
	tokens, capacity, reserve float64
	at                        time.Time
	every, wait               time.Duration
}

func (l *Lister) throttle(ctx context.Context, p *listProgress) *throttle {
	return &throttle{l: l, ctx: ctx, policy: listPolicies[p.Stage], now: time.Now,
		sleep: func(d time.Duration) error { return sleep(ctx, d, func() { activity.RecordHeartbeat(ctx, *p) }) }}
}

// page is asked before each page the walk requests (the dict queries'
// Paging): it waits, if it must, heartbeating; its error is the context's.
func (t *throttle) page() error {
	if t.pages++; t.pages == 1 {
		return nil
	}
	if !t.read {
		t.read, t.paced = true, t.readBucket()
	}
	if !t.paced {
		return nil
	}
	t.refill()
	if t.tokens <= t.reserve {
		short := math.Floor(t.reserve) + 1 - t.tokens
		d := min(time.Duration(short*float64(t.every)), t.wait)
		listThrottledTotal.WithLabelValues(t.policy).Inc()
		if err := t.sleep(d); err != nil {
			return err
		}
		t.refill()
	}
	t.tokens = max(t.tokens-1, 0)
	return nil
}

// refill counts the tokens the bucket got back since the last count.
func (t *throttle) refill() {
	now := t.now()
	t.tokens = min(t.tokens+float64(now.Sub(t.at))/float64(t.every), t.capacity)
	t.at = now
}

// readBucket reads the bucket (its tokens the gauge
// pix_med_dict_bucket_available_tokens) and says whether it is a bucket's
// state to count by.
func (t *throttle) readBucket() bool {
	b, err := t.l.DICT.Bucket(t.ctx, t.policy)
	var every time.Duration
	if b.RefillTokens > 0 && b.RefillPeriodSec > 0 {
		every = time.Duration(b.RefillPeriodSec) * time.Second / time.Duration(b.RefillTokens)
	} else {
		every = dict.RefillInterval(t.policy)
	}
	if err == nil && (b.Capacity <= 0 || every <= 0) {
		err = fmt.Errorf("dict getPolicy %s: %d tokens of %d, refilled %d every %d s: not a bucket's state",
			t.policy, b.AvailableTokens, b.Capacity, b.RefillTokens, b.RefillPeriodSec)
	}
	if err != nil && t.ctx.Err() != nil {
		return false // the attempt's end, not the bucket's
	}
	if err != nil {
		bucketReadFailedTotal.WithLabelValues(t.policy).Inc()
		bucketTokens.WithLabelValues(t.policy).Set(math.NaN())
		t.l.Log.WarnContext(t.ctx, "med lister: the DICT's bucket of a list can't be read; the list goes on unthrottled (its 429s waited out)",
			"policy", t.policy, "error", err)
		return false
	}
	bucketTokens.WithLabelValues(t.policy).Set(float64(b.AvailableTokens))
	t.tokens, t.capacity, t.reserve = float64(min(max(b.AvailableTokens, 0), b.Capacity)), float64(b.Capacity), float64(b.Capacity/listReserveShare)
	t.at, t.every = t.now(), every
	t.wait = cmp.Or(t.l.BucketWait, maxBucketWait)
	return true
}

// rateLimited is told of a 429 the walk met: the bucket is empty, whatever
// the count says, which starts again from none, now.
func (t *throttle) rateLimited() {
	if t.paced {
		t.tokens, t.at = 0, t.now()
	}
}
