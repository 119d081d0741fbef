package catchup

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v5"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/notification"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/saga/covered"
)

// PSPName is the psp of an inbox row the PSP catch-up stored first
// (pix.CatchUpPSP, which the credit reads).
const PSPName = pix.CatchUpPSP

// ErrTypePSPListingIncomplete: the PSP's listing of a window can't be
// taken as complete (fewer distinct PIX than its quantidadeTotalDeItens,
// listed again and still short; or more pages than a listing may take).
// The covered window stays; counted in pix_psp_attention_total; the run
// fails, and the next lists the window again.
const ErrTypePSPListingIncomplete = "PSPListingIncomplete"

// ActivityStore is what the PSP catch-up needs of the database: the
// listing's way into the inbox (db.Store.StoreListed: what is stored
// already is compared, not written), the refund notices'
// (db.NoteRefundNotices) and its covered window.
type ActivityStore interface {
	StoreListed(ctx context.Context, ns []pix.Notification) ([]db.ListedOutcome, error)
	db.RefundNoter
	Now(ctx context.Context) (time.Time, error)
	CoveredUntil(ctx context.Context) (until time.Time, ok bool, err error)
	Advance(ctx context.Context, from *time.Time, to time.Time) (moved bool, err error)
}

// Activities are the activities of the PSP catch-up (Workflow):
// the PSP's own record of the PIX it received, listed window by window
// into the inbox, so that a PIX whose webhook never came is credited all
// the same.
type Activities struct {
	Store ActivityStore
	PSP   psp.ReceivedLister
	// Overlap is how far before the covered window's end each run starts
	// listing (PSP_CATCHUP_OVERLAP: a PSP may list a PIX late); Lookback
	// how far back the first run lists (PSP_CATCHUP_LOOKBACK); Grace how
	// long before now a scheduled window ends (PSP_CATCHUP_GRACE, less than
	// Overlap): a PIX whose webhook is merely on its way is left to it,
	// and listed by the next run, which starts at End - Overlap.
	Overlap, Lookback, Grace time.Duration
	// PerPage is paginacao.itensPorPagina (0: psp.MaxReceivedPerPage).
	PerPage int
	// PartPages is how many pages one part of a window may take
	// (ListPSPPart; 0: MaxPages).
	PartPages int
	// PageRetryWait is the first wait before a page that got no answer is
	// asked again, doubling (0: a second); see PageTries.
	PageRetryWait time.Duration
	Logger        *slog.Logger
	// Metrics counts the PSP's refusals (pix_psp_attention_total); Found
	// what the catch-up found. nil counts nothing.
	Metrics *metrics.Worker
	Found   *Metrics
}

// Window is one window of the PSP's record to list: the PIX the PSP
// created from Start to End, both included. CoveredFrom is the covered
// window's end the run started from (or last recorded), which fences its
// advance: nil before any window was covered, and for an operator's window
// (Manual) that starts after the covered end, which then moves nothing.
type Window struct {
	Start, End  time.Time
	CoveredFrom *time.Time `json:",omitempty"`
	Manual      bool       `json:",omitempty"`
	// PartPages is how many pages its next part may take (0: PartPages,
	// the full size): the last part's Part.NextPartPages.
	PartPages int `json:",omitempty"`
}

// Part is what ListPSPPart listed: the leading part of a window,
// from its Start to Through (both included), every page of it stored.
type Part struct {
	Through time.Time
	Counts  Counts
	// NextPartPages is how many pages the next part may take
	// (Window.PartPages): smaller after a part some attempt could
	// not finish, growing back after one listed at once.
	NextPartPages int `json:",omitempty"`
}

// Counts is what a listing found: Listed PIX, of which New (stored
// first by the catch-up: a webhook that never came), Duplicate (stored
// already, changed nothing), Mismatched (stored already with other money
// fields: nothing changed) and Refused (not stored: our decoder refused
// it); Pages listed. A window listed again from its first page (a listing
// short of the PSP's quantidadeTotalDeItens) counts each pass.
type Counts struct {
	Pages, Listed, New, Duplicate, Mismatched, Refused int
}

// Add adds o's counts to c's.
func (c *Counts) Add(o Counts) {
	c.Pages += o.Pages
	c.Listed += o.Listed
	c.New += o.New
	c.Duplicate += o.Duplicate
	c.Mismatched += o.Mismatched
	c.Refused += o.Refused
}

// catchUpProgress is a listing's heartbeat: the part of the window it
// lists and its size, the next page to list, and what the pages before it
// found. A retry of the activity (the same window) lists the part again
// (a smaller one when this one was begun: see list).
type catchUpProgress struct {
	NextPage int
	Counts   Counts
	// PartPages is how many pages the part may take (ListPSPPart: halved
	// at each attempt that did not finish its part).
	PartPages int `json:",omitempty"`
	// PartEnd is the end of the part being listed, when it is not the
	// window's (ListPSPPart).
	PartEnd *time.Time `json:",omitempty"`
}

// relistPerPage is the page size of a listing again: another than the
// last one's, so that the PSP's pages fall elsewhere in its order.
func relistPerPage(last int) int {
	if last < psp.MaxReceivedPerPage {
		return psp.MaxReceivedPerPage
	}
	return max(1, last*2/3)
}

// MaxPages is how many pages one part of a window may take
// (Activities.PartPages' default): a window the PSP says holds more is split
// by time (ListPSPPart). At the spec's 1,000 PIX a page, a part is up to
// a million PIX; at a PSP's 2 a page, 2,000.
const MaxPages = 1000

// minPart is the shortest part a window is split into: a PSP may
// cut inicio and fim to the second (psp.ListReceived accepts it), so a
// part is whole seconds, and a part of one second is listed whole however
// many pages it takes.
const minPart = time.Second

// catchUpRelistings is how many times a listing that saw fewer distinct
// PIX than the PSP's quantidadeTotalDeItens is listed again from its first
// page before the run fails.
const catchUpRelistings = 2

// BeginCatchUp decides the window of a scheduled run: from the covered
// window's end less the overlap (or, before any window was covered, from
// the lookback) up to now less the grace, to the second. Now is the
// database's (Store.Now), the one clock of every worker: a worker whose
// clock runs ahead would record a covered end in the future.
func (a *Activities) BeginCatchUp(ctx context.Context) (Window, error) {
	// Whole seconds, the window never longer at its end than the clock
	// says: see WholeSeconds.
	w, err := covered.Begin(ctx, a.Store, covered.Settings{Overlap: a.Overlap, Lookback: a.Lookback, Grace: a.Grace}, time.Second)
	if err != nil {
		return Window{}, activities.TechnicalFailure(err)
	}
	if w.CoveredFrom != nil {
		a.Found.Covered(*w.CoveredFrom)
	}
	return Window{Start: w.Start, End: w.End, CoveredFrom: w.CoveredFrom}, nil
}

// WholeSeconds is w widened to whole seconds (its start down, its end up).
// Every window and part the catch-up lists, and so every covered end, is
// whole seconds: a PSP may read inicio and fim to the second (the API Pix
// says RFC 3339, which allows fractions, and psp.ListReceived accepts an
// answer about the window cut to the second), and a part ending at .5
// listed to its whole second by such a PSP while the next part begins at
// .5 would leave the half second between listed by neither.
func WholeSeconds(w Window) Window {
	w.Start = w.Start.Truncate(time.Second)
	if end := w.End.Truncate(time.Second); end.Before(w.End) {
		w.End = end.Add(time.Second)
	}
	return w
}

// BeginManualCatchUp decides whether an operator's window (pixctl psp
// catchup) may move the covered window: when it starts at or before the
// covered end, every PIX before its own end is then listed once it is, and
// its advance is fenced as a scheduled run's (CoveredFrom, the covered end
// read now). A window that starts after the covered end, or before any
// was covered (the lookback would be skipped), moves nothing.
func (a *Activities) BeginManualCatchUp(ctx context.Context, w Window) (Window, error) {
	covered, ok, err := a.Store.CoveredUntil(ctx)
	if err != nil {
		return Window{}, activities.TechnicalFailure(err)
	}
	w = WholeSeconds(w)
	w.Manual, w.CoveredFrom = true, nil
	if ok && !w.Start.After(covered) {
		w.CoveredFrom = &covered
	}
	return w, nil
}

// ListPSPPart lists the leading part of the window that one listing may
// take, and says where it ends (Through): the whole window when the PSP
// says it holds at most PartPages pages, else a part of it from its Start,
// cut by time in proportion to the pages the PSP says it holds (and a
// tenth less, as the PIX are not spread evenly), in whole seconds, asked
// again until it fits or is a second long (minPart). The workflow
// records each part's end as covered, then lists the rest: whatever the
// PSP's page size, its volume or the outage behind, every run moves the
// covered window forward (a window that could never be listed whole no
// longer holds it where it is). A part's page 0 that says it is too large
// is asked, not stored; the part's end is in the heartbeat, with the page,
// so that a retry resumes the same part.
func (a *Activities) ListPSPPart(ctx context.Context, w Window) (Part, error) {
	return a.list(ctx, w, true)
}

// ListPSPWindow lists the whole window (ListPSPPart's listing, never
// split; more than PartPages pages fail it): the activity of the runs
// begun by a release that listed a window in one part, kept so that such a
// run still open when the workers are upgraded ends as it began.
func (a *Activities) ListPSPWindow(ctx context.Context, w Window) (Counts, error) {
	part, err := a.list(ctx, w, false)
	return part.Counts, err
}

// list lists every page of the PSP's record of w's leading part (all of w
// unless split lets it cut w: see ListPSPPart) (GET /pix,
// paginacao.paginaAtual from 0 to quantidadeDePaginas-1) and stores each
// PIX through the inbox's listing path (db.Store.StoreListed): decoded as
// a webhook's item (notification.DecodeAPIPixItem), stored under its
// unique end_to_end_id when no webhook stored it, credited by the
// dispatcher once committed; compared, and nothing written, when stored
// already; and the final outcomes of its devolucoes noted for the refund
// sagas. A PIX stored with other money fields (a payload mismatch), or
// that our decoder refuses, is logged with its end_to_end_id, counted,
// and left: it holds back neither the page's other PIX nor the window. It
// heartbeats after each page stored, with its part and its size.
//
// The pages are not trusted to form one snapshot (a PSP whose order is not
// stable shows some PIX twice and others never): a listing from page 0
// that saw fewer distinct end_to_end_ids than the PSP's
// quantidadeTotalDeItens is listed again from page 0 (another page size), up to
// catchUpRelistings times, and then fails the run
// (ErrTypePSPListingIncomplete, counted in pix_psp_attention_total), so
// that nothing advances. A retry of an attempt that had begun its part
// lost the ids that attempt saw and can't judge its pages: it lists a part
// again from page 0 (half as large, when it may be cut), judged so; it
// never reports success on a listing it did not judge. An empty page once
// the items reach the total ends the listing, whatever
// quantidadeDePaginas says; an empty page while pages are said to be
// left, or a page count no page size could give, is unintelligible.
//
// The PSP's answers follow psp.Classify: no answer is PSPUnavailable
// (retried); a refused request (our credentials, a wrong URL) is
// PSPRequestRefused, counted in pix_psp_attention_total and retried, then
// the run fails. Either way nothing is advanced: the part is listed again.
func (a *Activities) list(ctx context.Context, w Window, split bool) (Part, error) {
	if split {
		w = WholeSeconds(w) // as Begin made it; so whatever started the run
	}
	info := activity.GetInfo(ctx)
	log := a.Logger.With("workflow_id", info.WorkflowExecution.ID, "attempt", info.Attempt,
		"window_start", w.Start.Format(time.RFC3339), "window_end", w.End.Format(time.RFC3339))
	var progress catchUpProgress
	if activity.HasHeartbeatDetails(ctx) {
		if err := activity.GetHeartbeatDetails(ctx, &progress); err != nil {
			progress = catchUpProgress{} // unreadable: list the window again from its first page
		}
	}
	configured := a.PerPage
	if configured <= 0 || configured > psp.MaxReceivedPerPage {
		configured = psp.MaxReceivedPerPage
	}
	full := cmp.Or(a.PartPages, MaxPages)
	budget := min(full, cmp.Or(progress.PartPages, w.PartPages, full))
	// An earlier attempt listed pages of its part and did not finish it
	// (the PSP too slow for one attempt, a worker that died): the pages it
	// stored stay stored, and, as the ids it saw are lost, its part is
	// listed again from page 0, judged; when it may be cut, as a part of
	// half as many pages, so that whatever the PSP's pace or the workers'
	// deaths, a part is listed within an attempt sooner or later.
	resumed := progress.NextPage > 0
	if resumed && split {
		budget = max(1, budget/2)
		log.InfoContext(ctx, "psp catch-up: an attempt did not finish its part; listing a part of half as many pages",
			"pages_listed", progress.NextPage, "part_pages", budget)
	}
	part := w
	if p := progress.PartEnd; split && !resumed && p != nil && p.After(w.Start) && !p.After(w.End) {
		part.End = *p // chosen by an earlier attempt, not begun
	}
	perPage := configured
	lst := listing{a: a, log: log, split: split, budget: budget}
	lst.reset(part)
	progress = catchUpProgress{Counts: progress.Counts, PartPages: budget}
	if split && part.End.Equal(w.End) {
		if err := lst.choose(ctx, configured, progress); err != nil {
			return Part{Counts: progress.Counts}, err
		}
	}
	if lst.part.End.Before(w.End) {
		progress.PartEnd = &lst.part.End
	}
	activity.RecordHeartbeat(ctx, progress) // a retry lists this part, from page 0
	for pass := 0; ; pass++ {
		// Only the first pass at the configured size may find the part
		// grew past a listing (the PSP's record grew since it was chosen):
		// a pass again at another page size never cuts it, so that a PSP
		// whose order is not stable can't keep a listing going.
		total, err := lst.pages(ctx, perPage, &progress, pass == 0 && perPage == configured)
		var tooLarge *partTooLarge
		if errors.As(err, &tooLarge) {
			if err := lst.choose(ctx, configured, progress); err != nil {
				return Part{Counts: progress.Counts}, err
			}
			perPage, pass = configured, -1
			progress = catchUpProgress{Counts: progress.Counts, PartPages: budget, PartEnd: &lst.part.End}
			activity.RecordHeartbeat(ctx, progress)
			continue
		}
		if err != nil {
			return Part{Counts: progress.Counts}, err
		}
		if lst.seen.count() >= total {
			break
		}
		if pass == catchUpRelistings {
			// A retry lists the part again from page 0, and judges again.
			activity.RecordHeartbeat(ctx, catchUpProgress{Counts: progress.Counts, PartPages: budget, PartEnd: progress.PartEnd}) // from page 0, the configured size
			return Part{Counts: progress.Counts}, activities.PSPNeedsAttention(ctx, a.Metrics, log, ErrTypePSPListingIncomplete, 0,
				fmt.Errorf("psp listed %d distinct PIX of the %d it says the window holds, in %d passes", lst.seen.count(), total, pass+1),
				"the catch-up's window stays where it is and is listed again")
		}
		perPage = relistPerPage(perPage)
		log.WarnContext(ctx, "psp catch-up: the listing saw fewer PIX than the PSP says the window holds (its order is not stable?); listing it again from page 0",
			"distinct", lst.seen.count(), "total", total, "pass", pass+1, "per_page", perPage)
		progress.NextPage = 0
		lst.seen.nextPass()
	}
	c := progress.Counts
	log.InfoContext(ctx, "psp catch-up part listed", "manual", w.Manual, "through", lst.part.End.Format(time.RFC3339), "pages", c.Pages,
		"listed", c.Listed, "new", c.New, "duplicate", c.Duplicate, "mismatched", c.Mismatched, "refused", c.Refused)
	// The next part may be as large again, up to the full size, when this
	// one was listed at its first try.
	next := budget
	if !resumed {
		next = min(full, 2*budget)
	}
	return Part{Through: lst.part.End, Counts: c, NextPartPages: next}, nil
}

// partTooLarge: a part's page 0 says it holds more pages than a listing
// takes (listing.pages), and it can be split.
type partTooLarge struct{ pages int }

func (e *partTooLarge) Error() string { return fmt.Sprintf("the part holds %d pages", e.pages) }

// listing is one listing of a part of a window: the part, and the
// end_to_end_ids its passes saw.
type listing struct {
	a      *Activities
	log    *slog.Logger
	split  bool
	budget int // pages a part may take
	part   Window
	seen   listingSeen
	// first is the part's page 0 at the configured size, when choose asked
	// it: the listing's first page.
	first *psp.ReceivedPage
}

// reset starts the listing of part, nothing seen.
func (l *listing) reset(part Window) {
	l.part, l.seen, l.first = part, listingSeen{ids: map[string]struct{}{}}, nil
}

// partPages is how many pages a part may take.
func (l *listing) partPages() int { return l.budget }

// splittable is whether the part may still be cut.
func (l *listing) splittable() bool { return l.split && l.part.End.Sub(l.part.Start) > minPart }

// maxPages bounds the pages a PSP may say a part holds past its page 0 (a
// PSP that keeps answering pages, or whose record grows under the
// listing): twice partPages for a part that may still be cut (a listing
// again may ask another page size), and for a window listed whole (never
// split: ListPSPWindow) partPages itself. A part of a second has no bound
// but what the PSP holds.
func (l *listing) maxPages() int {
	switch {
	case !l.split:
		return l.partPages()
	case l.splittable():
		return 2 * l.partPages()
	}
	return math.MaxInt
}

// choose cuts the listing's part down to what one listing takes: the part
// itself when the PSP says it holds at most partPages pages (or when it
// can't be cut, or the PSP's answer can't be read: the listing then says
// what is wrong), else its leading part that holds from half of partPages
// to partPages pages (or the longest that fits, to the second; or its
// first second, listed whole however many pages it holds). It asks page 0
// of candidate parts, nothing stored: cut in proportion to the pages the
// PSP says the shortest part too large and the longest part that fits
// hold, each ask narrowing the range by an eighth at least, so that a
// burst after a long quiet stretch costs a few asks, not a part for each
// stretch of quiet.
func (l *listing) choose(ctx context.Context, perPage int, progress catchUpProgress) error {
	start, budget := l.part.Start, l.partPages()
	asked := map[time.Time]psp.ReceivedPage{}
	ask := func(end time.Time) (pages int, readable bool, err error) {
		got, err := l.ask(ctx, psp.ReceivedQuery{Start: start, End: end, Page: 0, PerPage: perPage}, progress)
		if err != nil {
			return 0, false, err
		}
		activity.RecordHeartbeat(ctx, progress)
		asked[end] = got
		return got.Pages, intelligible(got, perPage), nil
	}
	pages, readable, err := ask(l.part.End)
	if err != nil || !readable || pages <= budget || !l.splittable() {
		l.keep(asked[l.part.End])
		return err
	}
	lo, loPages, hi, hiPages := start, 0, l.part.End, pages
	for hi.Sub(lo) > minPart {
		cand := between(lo, loPages, hi, hiPages, budget)
		pages, readable, err := ask(cand)
		switch {
		case err != nil:
			return err
		case !readable || (pages <= budget && 2*pages >= budget):
			lo = cand
			hi = lo
		case pages > budget:
			hi, hiPages = cand, pages
		default:
			lo, loPages = cand, pages
		}
	}
	end := lo
	if !lo.After(start) {
		end = start.Add(minPart) // too large however short: a second, listed whole
	}
	l.log.InfoContext(ctx, "psp catch-up: the window holds more pages than one listing takes; listing it part by part",
		"pages", hiPages, "part_pages", budget, "part_end", end.Format(time.RFC3339))
	l.reset(Window{Start: start, End: end})
	l.keep(asked[end])
	return nil
}

// keep keeps page, page 0 of the listing's part as choose asked it, to be
// stored as the listing's first page rather than asked again.
func (l *listing) keep(page psp.ReceivedPage) {
	if page.Pages > 0 {
		l.first = &page
	}
}

// between is the next candidate end of choose, strictly between lo (the
// longest end known to fit, holding loPages) and hi (the shortest known
// too large, hiPages): where three quarters
// of budget pages would fall were the PIX between them spread evenly,
// kept an eighth of the range away from either end; whole seconds
// (WholeSeconds).
func between(lo time.Time, loPages int, hi time.Time, hiPages, budget int) time.Time {
	f := (0.75*float64(budget) - float64(loPages)) / float64(hiPages-loPages)
	f = min(max(f, 1.0/8), 7.0/8)
	cand := lo.Add(time.Duration(f * float64(hi.Sub(lo)))).Truncate(minPart)
	if !cand.After(lo) {
		cand = lo.Add(minPart)
	}
	if !cand.Before(hi) {
		cand = hi.Add(-minPart)
	}
	return cand
}

// intelligible is whether a page's counts could be true: no more pages
// than items (at least one page), and enough pages for the items at the
// size asked.
func intelligible(got psp.ReceivedPage, perPage int) bool {
	return got.Pages <= max(1, got.TotalItems) && got.Pages >= (got.TotalItems+perPage-1)/perPage
}

// ask asks the PSP for one page (listPage: asked again while it gets no
// answer), its errors as the activity returns them: no answer
// PSPUnavailable (retried), a refused request PSPRequestRefused (counted).
func (l *listing) ask(ctx context.Context, q psp.ReceivedQuery, progress catchUpProgress) (psp.ReceivedPage, error) {
	got, err := l.a.listPage(ctx, q, progress)
	switch {
	case err == nil:
		return got, nil
	case psp.Classify(err) == psp.AnswerTransient:
		return got, activities.PSPError(err)
	}
	return got, activities.PSPRequestRefused(ctx, l.a.Metrics, l.log.With("page", q.Page), err,
		"the catch-up's window stays where it is and is listed again")
}

// listingSeen is what a listing saw: the distinct end_to_end_ids of its
// passes, and the most items of one pass that had none we could read.
type listingSeen struct {
	ids                  map[string]struct{}
	unnamed, passUnnamed int
}

func (s *listingSeen) add(endToEndID string) {
	if endToEndID == "" {
		s.passUnnamed++
		return
	}
	s.ids[endToEndID] = struct{}{}
}

func (s *listingSeen) nextPass() {
	s.unnamed, s.passUnnamed = max(s.unnamed, s.passUnnamed), 0
}

func (s *listingSeen) count() int { return len(s.ids) + max(s.unnamed, s.passUnnamed) }

// pages lists the part's pages from progress.NextPage to its last,
// storing each (storePage) and heartbeating progress, and returns the last
// page's quantidadeTotalDeItens. A page 0 that says the part holds more
// than partPages pages, when mayCut and the part may be cut, is a
// *partTooLarge, nothing stored (the PSP's record grew since the part was
// chosen).
func (l *listing) pages(ctx context.Context, perPage int, progress *catchUpProgress, mayCut bool) (total int, err error) {
	a, w := l.a, l.part
	items := progress.NextPage * perPage // what the pages before held, at most
	for page := progress.NextPage; ; page = progress.NextPage {
		if page >= l.maxPages() {
			err := fmt.Errorf("psp catch-up: the window %s..%s has more than %d pages", w.Start.Format(time.RFC3339), w.End.Format(time.RFC3339), l.maxPages())
			a.Metrics.PSPNeedsAttention(ErrTypePSPListingIncomplete, 0)
			l.log.ErrorContext(ctx, "psp catch-up: too many pages; the covered window stays where it is and the next run lists it again", "error", err)
			return 0, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypePSPListingIncomplete, err)
		}
		got, err := l.first, error(nil)
		l.first = nil
		if got == nil || page != 0 || got.Page != 0 {
			var asked psp.ReceivedPage
			asked, err = l.ask(ctx, psp.ReceivedQuery{Start: w.Start, End: w.End, Page: page, PerPage: perPage}, *progress)
			got = &asked
		}
		if err != nil {
			return 0, err
		}
		readable := intelligible(*got, perPage)
		if page == 0 && mayCut && readable && got.Pages > l.partPages() && l.splittable() {
			return 0, &partTooLarge{pages: got.Pages}
		}
		counts, err := a.storePage(ctx, l.log, page, got.Items, &l.seen)
		if err != nil {
			return 0, err
		}
		progress.Counts.Add(counts)
		progress.NextPage = page + 1
		activity.RecordHeartbeat(ctx, *progress)
		items += len(got.Items)
		switch {
		case len(got.Items) == 0 && items >= got.TotalItems:
			return got.TotalItems, nil // past the last PIX, whatever quantidadeDePaginas says
		case !readable:
			return 0, activities.PSPError(fmt.Errorf("%w: unintelligible answer: GET /pix page %d says %d pages of %d items, asked %d a page",
				psp.ErrTransient, page, got.Pages, got.TotalItems, perPage))
		case got.Pages > l.maxPages():
			progress.NextPage = l.maxPages() // fails above, visibly, at once
		case len(got.Items) == 0 && progress.NextPage < got.Pages:
			// A PIX never leaves the PSP's record: pages said to be left
			// after an empty one can't be believed, and can't be listed
			// for ever.
			return 0, activities.PSPError(fmt.Errorf("%w: unintelligible answer: GET /pix page %d of %d is empty, %d of %d items listed",
				psp.ErrTransient, page, got.Pages, items, got.TotalItems))
		case progress.NextPage >= got.Pages:
			return got.TotalItems, nil
		}
	}
}

// PageTries is how many times one attempt asks for a page that gets
// no answer before the attempt fails: a listing resumed by a retry must
// list the window whole again before it is judged (listPages), so a PSP
// that blips now and then must cost a page, not the pass.
const PageTries = 4

// listPage asks the PSP for one page, asking again, after a wait that
// doubles, while it gets no answer (up to PageTries); an answer that
// refuses is returned at once. It heartbeats progress (unchanged: the page
// is still the next to list) before each wait, so that the listing's
// heartbeat timeout bounds one ask and one wait, not a page's every try.
func (a *Activities) listPage(ctx context.Context, q psp.ReceivedQuery, progress catchUpProgress) (psp.ReceivedPage, error) {
	wait := backoff.NewExponentialBackOff()
	wait.InitialInterval, wait.Multiplier = cmp.Or(a.PageRetryWait, time.Second), 2
	return backoff.Retry(ctx, func() (psp.ReceivedPage, error) {
		got, err := a.PSP.ListReceived(ctx, q)
		if err != nil && psp.Classify(err) != psp.AnswerTransient {
			return got, backoff.Permanent(err)
		}
		return got, err
	}, backoff.WithBackOff(wait), backoff.WithMaxTries(PageTries), backoff.WithMaxElapsedTime(0),
		backoff.WithNotify(func(error, time.Duration) { activity.RecordHeartbeat(ctx, progress) }))
}

// storePage stores one page's PIX through the inbox's listing path
// (db.Store.StoreListed: one read of what is stored of them, one insert of
// those stored nowhere; a PIX stored already is compared, nothing
// written). A PIX stored with other money fields (a payload mismatch) is
// logged, counted and left; it holds back none of the others.
func (a *Activities) storePage(ctx context.Context, log *slog.Logger, page int, items []json.RawMessage, seen *listingSeen) (Counts, error) {
	counts := Counts{Pages: 1, Listed: len(items)}
	ns := make([]pix.Notification, 0, len(items))
	for i, raw := range items {
		n, err := notification.DecodeAPIPixItem(raw, "pix["+strconv.Itoa(i)+"]")
		if err != nil {
			id := listedEndToEndID(raw)
			seen.add(id)
			counts.Refused++
			a.Found.Rejected(ReasonInvalid)
			log.ErrorContext(ctx, "psp catch-up: a PIX the PSP listed is refused by our decoder; not stored, a human must look",
				"end_to_end_id", id, "page", page, "item", i, "error", err)
			continue
		}
		seen.add(n.EndToEndID)
		n.PSP, n.Listed = PSPName, true
		ns = append(ns, n)
	}
	if len(ns) == 0 {
		return counts, nil
	}
	outcomes, err := a.Store.StoreListed(ctx, ns)
	if err != nil {
		return Counts{}, activities.TechnicalFailure(err)
	}
	for i, o := range outcomes {
		n := ns[i]
		attrs := []any{"end_to_end_id", n.EndToEndID, "txid", n.TxID, "pix_key", n.PixKey, "amount_cents", n.AmountCents, "page", page}
		switch {
		case o.Mismatch():
			counts.Mismatched++
			a.Found.Rejected(ReasonPayloadMismatch)
			log.ErrorContext(ctx, "psp catch-up: the PSP's record of a PIX differs from the one stored (payload mismatch); never credited twice, a human must look",
				append(attrs, "differs", o.Differs, "status", o.Status)...)
		case o.New:
			counts.New++
			a.Found.Found(n.TxID != "")
			if n.TxID != "" {
				// The API Pix notifies every PIX of a charge: its webhook was lost.
				log.WarnContext(ctx, "psp catch-up: a PIX of a charge the PSP never notified to us, stored", attrs...)
			} else {
				log.InfoContext(ctx, "psp catch-up: a PIX the PSP never notified to us, stored", attrs...)
			}
		default: // listed, a stored row is left as it is (never re-driven: pix.Notification.Listed)
			counts.Duplicate++
		}
	}
	if err := db.NoteRefundNotices(ctx, a.Store, log, ns); err != nil {
		return Counts{}, activities.TechnicalFailure(err)
	}
	return counts, nil
}

// listedEndToEndID is the endToEndId of an item the decoder refused, for
// its log line, when it has one that reads as such.
func listedEndToEndID(raw json.RawMessage) string {
	var item struct {
		EndToEndID string `json:"endToEndId"`
	}
	if json.Unmarshal(raw, &item) != nil || !pix.ValidEndToEndID(item.EndToEndID) {
		return ""
	}
	return item.EndToEndID
}

// AdvanceCatchUp records that a window (or its leading part) is covered,
// once every page of it was stored: the covered window's end moves to
// w.End, only from w.CoveredFrom (a late run changes nothing: moved is
// false). An operator's window moves it only when it started at or
// before the covered end (BeginManualCatchUp set CoveredFrom).
func (a *Activities) AdvanceCatchUp(ctx context.Context, w Window) (moved bool, err error) {
	if w.Manual && w.CoveredFrom == nil {
		return false, nil
	}
	if err := covered.CheckPart(w.Start, w.CoveredFrom); err != nil {
		// A part that starts after the covered end would move it over what
		// was never listed: no run of this workflow asks that.
		err = fmt.Errorf("psp catch-up: %w", err)
		a.Logger.ErrorContext(ctx, "psp catch-up: an advance over a gap refused", "error", err)
		return false, temporal.NewNonRetryableApplicationError(err.Error(), activities.ErrTypeTechnicalFailure, err)
	}
	moved, err = a.Store.Advance(ctx, w.CoveredFrom, w.End)
	if err != nil {
		return false, activities.TechnicalFailure(err)
	}
	if !moved {
		a.Logger.WarnContext(ctx, "psp catch-up: the covered window moved since this run began; this run's end is not recorded (another run covered it)",
			"window_end", w.End.Format(time.RFC3339), "workflow_id", activity.GetInfo(ctx).WorkflowExecution.ID)
		return false, nil
	}
	a.Found.Covered(w.End)
	return true, nil
}
