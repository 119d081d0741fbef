package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/saga/catchup"
)

// The catch-up under load: a burst of burstPIX PIX arrives at the PSP
// while it lists at most burstPageSize of them a page of GET /pix and
// drops every webhook, so that the catch-up alone can credit them, from a
// window of burstPIX/burstPageSize pages at least. Every one must be
// credited, and the catch-up's covered end be back, within burstDeadline
// of the burst; burstSenders post the burst to the simulator at once.
const (
	burstPIX      = 3000
	burstPageSize = 2
	burstSenders  = 8
	burstDeadline = 5 * time.Minute
)

// burstBehind is how far behind the database's now the covered end may be
// once the catch-up is back: each run lists from the covered end less the
// overlap up to now less the grace, one run an interval.
const burstBehind = pspCatchUpOverlap + pspCatchUpGrace + pspCatchUpInterval

// burstTimes are what the burst case learned for its check: when the burst
// began and when the simulator held all of it; when every PIX of it was
// credited, and when the covered end was back (burstCaughtUp), zero if not
// within burstDeadline; and how many pages of GET /pix the PSP answered
// under its limit.
type burstTimes struct {
	began, posted, credited, covered time.Time
	pages                            int
	// coveredBefore is the covered end when the burst began, and how far
	// behind the database's now it was.
	coveredBefore time.Time
	behindBefore  time.Duration
}

// burstCaughtUp reports whether the covered end is back after a burst
// whose PIX the simulator held by posted: past them all, and no further
// behind now (the database's) than burstBehind.
func burstCaughtUp(covered, now, posted time.Time) bool {
	return !covered.Before(posted) && !covered.Before(now.Add(-burstBehind))
}

// catchUpBurst has the PSP list burstPageSize PIX a page and drop its
// webhooks (PUT /sim/list-page-size, PUT /sim/webhook-drop), tells it of
// the burst (postBurst), and waits, up to burstDeadline from the burst's
// start, until every PIX of it is credited and the covered end is back,
// noting when each happened; then both faults end, whatever became of the
// case.
func catchUpBurst(ctx context.Context, r *caseRun) (healed time.Time, note string, err error) {
	sim := r.st.psp
	if err := sim.send(ctx, http.MethodPut, "/sim/list-page-size", pspsim.ListPageSize{Max: burstPageSize}, http.StatusNoContent, nil); err != nil {
		return time.Now(), "", err
	}
	defer func() {
		off := context.WithoutCancel(ctx)
		err = errors.Join(err, sim.send(off, http.MethodDelete, "/sim/webhook-drop", nil, http.StatusNoContent, nil),
			sim.send(off, http.MethodDelete, "/sim/list-page-size", nil, http.StatusNoContent, nil))
		healed = time.Now()
	}()
	// Dropped past the deadline: cleared above.
	drop := map[string]any{"for": pspsim.Duration(burstDeadline + time.Minute)}
	if err := sim.send(ctx, http.MethodPut, "/sim/webhook-drop", drop, http.StatusNoContent, nil); err != nil {
		return time.Now(), "", err
	}
	b := &r.burst
	if b.coveredBefore, b.behindBefore, err = waitCovered(ctx, r, catchUpWindow, time.Minute); err != nil {
		return time.Now(), "", fmt.Errorf("before the burst: %w", err)
	}
	b.began = time.Now()
	if r.simPix, err = postBurst(ctx, r); err != nil {
		return time.Now(), "", err
	}
	b.posted = time.Now()
	for deadline := b.began.Add(burstDeadline); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if err := burstProgress(ctx, r); err != nil {
			return time.Now(), "", err
		}
		if !b.credited.IsZero() && !b.covered.IsZero() {
			break
		}
	}
	var faults pspsim.FaultsView
	if err := sim.get(ctx, "/sim/faults", &faults); err != nil {
		return time.Now(), "", err
	}
	if faults.ListPageSize != nil {
		b.pages = faults.ListPageSize.Pages
	}
	took := b.posted.Sub(b.began)
	return time.Now(), fmt.Sprintf("%d PIX at the PSP in %s (%.0f/s), listed %d a page, their webhooks dropped; %d pages of GET /pix answered",
		len(r.simPix), took.Round(100*time.Millisecond), float64(len(r.simPix))/took.Seconds(), burstPageSize, b.pages), nil
}

// waitCovered waits until the lister of window (covered_windows' name)
// has covered a window (its first run after the worker's first start takes
// a few seconds: a case run alone may begin before it), up to within, and
// returns its covered end and how far behind the database's now it is.
func waitCovered(ctx context.Context, r *caseRun, window string, within time.Duration) (covered time.Time, behind time.Duration, err error) {
	for deadline := time.Now().Add(within); ; time.Sleep(500 * time.Millisecond) {
		covered, now, err := coveredEnd(ctx, r, window)
		switch {
		case err == nil:
			return covered, now.Sub(covered), nil
		case !errors.Is(err, pgx.ErrNoRows) || !time.Now().Before(deadline):
			return time.Time{}, 0, err
		}
	}
}

// burstProgress notes when every PIX of the burst is first seen credited,
// and when the covered end is first seen back.
func burstProgress(ctx context.Context, r *caseRun) error {
	b := &r.burst
	if b.credited.IsZero() {
		rows, err := simPixRows(ctx, r)
		if err != nil {
			return err
		}
		if credited(rows) == len(r.simPix) {
			b.credited = time.Now()
		}
	}
	if b.covered.IsZero() {
		covered, now, err := catchUpCovered(ctx, r)
		if err != nil {
			return err
		}
		if burstCaughtUp(covered, now, b.posted) {
			b.covered = time.Now()
		}
	}
	return nil
}

// postBurst tells the simulator of burstPIX PIX (postSimPix), burstSenders
// at a time, as fast as the loopback takes them. The first error stops
// the others.
func postBurst(ctx context.Context, r *caseRun) ([]simPix, error) {
	out := make([]simPix, burstPIX)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(burstSenders)
	for n := 1; n <= burstPIX && gctx.Err() == nil; n++ {
		g.Go(func() (err error) {
			out[n-1], err = postSimPix(gctx, r, n)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// credited counts the PIX of rows credited at least once.
func credited(rows map[string]simPixRow) int {
	n := 0
	for _, row := range rows {
		if row.credits > 0 {
			n++
		}
	}
	return n
}

// catchUpBurstCheck holds the burst against our books and the catch-up's
// covered end, after the common checks (the load's PIX, every balance
// reconciled, the events once and in order):
//
//   - every PIX of the burst credited exactly once (simPixBooked: its inbox
//     row done, to its key's account, with its valor), each stored first by
//     the catch-up (psp 'catchup'): none by a webhook, all dropped;
//   - all credited within burstDeadline of the burst's start;
//   - the covered end back within burstDeadline (burstCaughtUp: past the
//     burst, at most burstBehind behind now), and still so at the check;
//   - the page limit bit: the PSP answered at least
//     burstPIX/burstPageSize pages of GET /pix under it, what a listing of
//     the burst takes.
//
// The note says how long the credits and the covered end took.
func catchUpBurstCheck(ctx context.Context, r *caseRun, o *outcome) []string {
	b := r.burst
	rows, err := simPixRows(ctx, r)
	if err != nil {
		return []string{err.Error()}
	}
	bad := flagged{}
	once := 0
	for _, p := range r.simPix {
		row, ok := rows[p.endToEndID]
		if !simPixBooked(p, row, ok, bad) {
			continue
		}
		once++
		if row.psp != catchup.PSPName {
			bad.flag("PIX of the burst stored first by another than the catch-up (their webhooks were dropped)",
				fmt.Sprintf("%s (psp %q)", p.endToEndID, row.psp))
		}
	}
	v := bad.verdicts()
	if len(r.simPix) != burstPIX {
		v = append(v, fmt.Sprintf("%d PIX of the burst at the PSP, not %d", len(r.simPix), burstPIX))
	}
	if b.credited.IsZero() {
		v = append(v, fmt.Sprintf("not every PIX of the burst credited within %s of it: %d of %d credited once by the deadline",
			burstDeadline, once, len(r.simPix)))
	}
	covered, now, err := catchUpCovered(ctx, r)
	at := func(t time.Time) string { return t.UTC().Format("15:04:05.000") }
	behind := fmt.Sprintf("covered_until %s (%s when the burst began), the burst's last PIX by %s, the database's now %s: %s behind it, at most %s allowed",
		at(covered), at(b.coveredBefore), at(b.posted), at(now), now.Sub(covered).Round(100*time.Millisecond), burstBehind)
	switch {
	case err != nil:
		v = append(v, err.Error())
	case b.covered.IsZero():
		v = append(v, fmt.Sprintf("the catch-up's covered end not back within %s of the burst: %s", burstDeadline, behind))
	case !burstCaughtUp(covered, now, b.posted):
		v = append(v, "the catch-up's covered end was back, then fell behind again: "+behind)
	}
	if least := burstPIX / burstPageSize; b.pages < least {
		v = append(v, fmt.Sprintf("the PSP answered %d pages of GET /pix of at most %d PIX; a listing of the burst takes %d at least", b.pages, burstPageSize, least))
	}
	since := func(t time.Time) string {
		if t.IsZero() {
			return "not within " + burstDeadline.String()
		}
		return "+" + t.Sub(b.began).Round(100*time.Millisecond).String()
	}
	o.note += fmt.Sprintf("; from the burst's start: every PIX of it credited %s, the covered end back %s (%s behind now at the burst, %s at the check)",
		since(b.credited), since(b.covered), b.behindBefore.Round(100*time.Millisecond), now.Sub(covered).Round(100*time.Millisecond))
	return v
}
