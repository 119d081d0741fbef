package activities

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v5"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/notification"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
)

// CatchUpPSP is the psp of an inbox row the PSP catch-up stored first: no
// webhook told us of the PIX; we found it in the PSP's own record (GET
// /pix of the PSP at PSP_URL). `psp = 'catchup'` finds every PIX whose
// webhook never came. A row a webhook stored first keeps its PSP's name.
const CatchUpPSP = "catchup"

// ErrTypePSPListingIncomplete: the PSP's listing of a window can't be
// taken as complete (fewer distinct PIX than its quantidadeTotalDeItens,
// listed again and still short; or more than MaxCatchUpPages pages). The
// covered window stays; counted in pix_psp_attention_total; the run fails.
const ErrTypePSPListingIncomplete = "PSPListingIncomplete"

// CatchUpStore is what the PSP catch-up needs of the database: the inbox's
// receive path (the webhooks'), the refund notices' (db.NoteRefundNotices)
// and its covered window.
type CatchUpStore interface {
	Receive(ctx context.Context, n pix.Notification) (pix.Receipt, error)
	ReceiveBatch(ctx context.Context, ns []pix.Notification) ([]pix.Receipt, error)
	db.RefundNoter
	CatchUpNow(ctx context.Context) (time.Time, error)
	CatchUpCoveredUntil(ctx context.Context) (until time.Time, ok bool, err error)
	AdvanceCatchUp(ctx context.Context, from *time.Time, to time.Time) (moved bool, err error)
}

// CatchUp are the activities of the PSP catch-up (workflows.PSPCatchUp):
// the PSP's own record of the PIX it received, listed window by window
// into the inbox, so that a PIX whose webhook never came is credited all
// the same.
type CatchUp struct {
	Store CatchUpStore
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
	// PageRetryWait is the first wait before a page that got no answer is
	// asked again, doubling (0: a second); see CatchUpPageTries.
	PageRetryWait time.Duration
	Logger        *slog.Logger
	// Metrics counts the PSP's refusals (pix_psp_attention_total); Found
	// what the catch-up found. nil counts nothing.
	Metrics *metrics.Worker
	Found   *metrics.CatchUp
}

// CatchUpWindow is one window of the PSP's record to list: the PIX the PSP
// created from Start to End, both included. CoveredFrom is the covered
// window's end the scheduled run started from, which fences its advance
// (nil: none was covered yet). Manual is a window an operator asked for
// (pixctl psp catchup): it never moves the covered window.
type CatchUpWindow struct {
	Start, End  time.Time
	CoveredFrom *time.Time `json:",omitempty"`
	Manual      bool       `json:",omitempty"`
}

// CatchUpCounts is what a listing found: Listed PIX, of which New (stored
// first by the catch-up: a webhook that never came), Duplicate (stored
// already, changed nothing), Mismatched (stored already with other money
// fields: nothing changed) and Refused (not stored: our decoder or the
// inbox refused it); Pages listed. A window listed again from its first
// page (a listing short of the PSP's quantidadeTotalDeItens) counts each
// pass.
type CatchUpCounts struct {
	Pages, Listed, New, Duplicate, Mismatched, Refused int
}

// Add adds o's counts to c's.
func (c *CatchUpCounts) Add(o CatchUpCounts) {
	c.Pages += o.Pages
	c.Listed += o.Listed
	c.New += o.New
	c.Duplicate += o.Duplicate
	c.Mismatched += o.Mismatched
	c.Refused += o.Refused
}

// catchUpProgress is ListPSPWindow's heartbeat: the next page to list,
// and what the pages before it found. A retry of the activity (the same
// window) resumes there.
type catchUpProgress struct {
	NextPage int
	Counts   CatchUpCounts
	// PerPage is the page size of NextPage when it is not the configured
	// one (a listing again from page 0 changes it: see relistPerPage).
	PerPage int `json:",omitempty"`
}

// relistPerPage is the page size of a listing again: another than the
// last one's, so that the PSP's pages fall elsewhere in its order.
func relistPerPage(last int) int {
	if last < psp.MaxReceivedPerPage {
		return psp.MaxReceivedPerPage
	}
	return max(1, last*2/3)
}

// MaxCatchUpPages bounds the pages of one window's listing: a PSP that
// says more (or keeps answering pages) fails the run visibly, and the
// covered window stays; an operator lists such a window in smaller parts
// (pixctl psp catchup).
const MaxCatchUpPages = 1000

// catchUpRelistings is how many times a listing that saw fewer distinct
// PIX than the PSP's quantidadeTotalDeItens is listed again from its first
// page before the run fails.
const catchUpRelistings = 2

// BeginCatchUp decides the window of a scheduled run: from the covered
// window's end less the overlap (or, before any window was covered, from
// the lookback) up to now less the grace, to the second. Now is the
// database's (CatchUpNow), the one clock of every worker: a worker whose
// clock runs ahead would record a covered end in the future.
func (a *CatchUp) BeginCatchUp(ctx context.Context) (CatchUpWindow, error) {
	covered, ok, err := a.Store.CatchUpCoveredUntil(ctx)
	if err != nil {
		return CatchUpWindow{}, technicalFailure(err)
	}
	now, err := a.Store.CatchUpNow(ctx)
	if err != nil {
		return CatchUpWindow{}, technicalFailure(err)
	}
	now = now.Truncate(time.Second)
	w := CatchUpWindow{Start: now.Add(-a.Lookback), End: now.Add(-a.Grace)}
	if ok {
		a.Found.Covered(covered)
		w.Start, w.CoveredFrom = covered.Add(-a.Overlap), &covered
	}
	return w, nil
}

// ListPSPWindow lists every page of the PSP's record of the window (GET
// /pix, paginacao.paginaAtual from 0 to quantidadeDePaginas-1) and stores
// each PIX through the webhooks' receive path: decoded as a webhook's item
// (notification.DecodeAPIPixItem), stored under its unique end_to_end_id
// (a PIX stored already is a duplicate and changes nothing), credited by
// the dispatcher once committed, and the final outcomes of its devolucoes
// noted for the refund sagas. A PIX the inbox holds with other money
// fields (a payload mismatch), or that our decoder refuses, is logged with
// its end_to_end_id, counted, and left: it holds back neither the page's
// other PIX nor the window. It heartbeats after each page stored; a retry
// resumes after the last one.
//
// The pages are not trusted to form one snapshot (a PSP whose order is not
// stable shows some PIX twice and others never): a listing from page 0
// that saw fewer distinct end_to_end_ids than the PSP's
// quantidadeTotalDeItens is listed again from page 0 (another page size), up to
// catchUpRelistings times, and then fails the run
// (ErrTypePSPListingIncomplete, counted in pix_psp_attention_total), so
// that nothing advances. A retry resumed from the heartbeat lost the
// earlier pages' ids and can't tell: it lists its remaining pages, then
// the window again from page 0, judged so; it never reports success on a
// listing it did not judge. An empty page
// once the items reach the total ends the listing, whatever
// quantidadeDePaginas says; a page count no page size could give is
// unintelligible; more than MaxCatchUpPages pages fail the run.
//
// The PSP's answers follow psp.Classify: no answer is PSPUnavailable
// (retried); a refused request (our credentials, a wrong URL) is
// PSPRequestRefused, counted in pix_psp_attention_total and retried, then
// the run fails. Either way nothing is advanced: the window is listed again.
func (a *CatchUp) ListPSPWindow(ctx context.Context, w CatchUpWindow) (CatchUpCounts, error) {
	info := activity.GetInfo(ctx)
	log := a.Logger.With("workflow_id", info.WorkflowExecution.ID, "attempt", info.Attempt,
		"window_start", w.Start.Format(time.RFC3339), "window_end", w.End.Format(time.RFC3339))
	var progress catchUpProgress
	if activity.HasHeartbeatDetails(ctx) {
		if err := activity.GetHeartbeatDetails(ctx, &progress); err != nil {
			progress = catchUpProgress{} // unreadable: list the window again from its first page
		}
	}
	perPage := a.PerPage
	if perPage <= 0 || perPage > psp.MaxReceivedPerPage {
		perPage = psp.MaxReceivedPerPage
	}
	if progress.PerPage > 0 && progress.PerPage <= psp.MaxReceivedPerPage {
		perPage = progress.PerPage // NextPage counts pages of that size
	}
	seen := listingSeen{ids: map[string]struct{}{}}
	if progress.NextPage > 0 {
		// Resumed from a heartbeat: the ids of the pages before NextPage
		// are lost, so this listing can't be judged. Its last pages are
		// stored all the same (an attempt that fails again leaves them
		// stored); then the window is listed from page 0, judged below.
		if _, err := a.listPages(ctx, log, w, perPage, &progress, &seen); err != nil {
			return progress.Counts, err
		}
		log.InfoContext(ctx, "psp catch-up: a listing resumed from its heartbeat can't be judged; listing the window again from page 0",
			"pages", progress.Counts.Pages, "per_page", perPage)
		progress.NextPage = 0
		activity.RecordHeartbeat(ctx, progress) // a retry from here lists from page 0, and judges
		seen.nextPass()
	}
	for pass := 0; ; pass++ {
		total, err := a.listPages(ctx, log, w, perPage, &progress, &seen)
		if err != nil {
			return progress.Counts, err
		}
		if seen.count() >= total {
			break
		}
		if pass == catchUpRelistings {
			// A retry lists the window again from page 0, and judges again.
			activity.RecordHeartbeat(ctx, catchUpProgress{Counts: progress.Counts}) // from page 0, the configured size
			return progress.Counts, pspNeedsAttention(ctx, a.Metrics, log, ErrTypePSPListingIncomplete, 0,
				fmt.Errorf("psp listed %d distinct PIX of the %d it says the window holds, in %d passes", seen.count(), total, pass+1),
				"the catch-up's window stays where it is and is listed again")
		}
		perPage = relistPerPage(perPage)
		log.WarnContext(ctx, "psp catch-up: the listing saw fewer PIX than the PSP says the window holds (its order is not stable?); listing it again from page 0",
			"distinct", seen.count(), "total", total, "pass", pass+1, "per_page", perPage)
		progress.NextPage, progress.PerPage = 0, perPage
		seen.nextPass()
	}
	log.InfoContext(ctx, "psp catch-up window listed", "manual", w.Manual, "pages", progress.Counts.Pages, "listed", progress.Counts.Listed,
		"new", progress.Counts.New, "duplicate", progress.Counts.Duplicate, "mismatched", progress.Counts.Mismatched, "refused", progress.Counts.Refused)
	return progress.Counts, nil
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

// listPages lists the window's pages from progress.NextPage to its last,
// storing each (storePage) and heartbeating progress, and returns the last
// page's quantidadeTotalDeItens.
func (a *CatchUp) listPages(ctx context.Context, log *slog.Logger, w CatchUpWindow, perPage int, progress *catchUpProgress, seen *listingSeen) (total int, err error) {
	items := progress.NextPage * perPage // what the pages before held, at most
	for page := progress.NextPage; ; page = progress.NextPage {
		if page >= MaxCatchUpPages {
			err := fmt.Errorf("psp catch-up: the window %s..%s has more than %d pages", w.Start.Format(time.RFC3339), w.End.Format(time.RFC3339), MaxCatchUpPages)
			a.Metrics.PSPNeedsAttention(ErrTypePSPListingIncomplete, 0)
			log.ErrorContext(ctx, "psp catch-up: too many pages; the covered window stays where it is: list it in smaller windows (pixctl psp catchup)", "error", err)
			return 0, temporal.NewNonRetryableApplicationError(err.Error(), ErrTypePSPListingIncomplete, err)
		}
		got, err := a.listPage(ctx, psp.ReceivedQuery{Start: w.Start, End: w.End, Page: page, PerPage: perPage}, *progress)
		if err != nil {
			if psp.Classify(err) == psp.AnswerTransient {
				return 0, pspError(err)
			}
			return 0, pspRequestRefused(ctx, a.Metrics, log.With("page", page), err,
				"the catch-up's window stays where it is and is listed again")
		}
		counts, err := a.storePage(ctx, log, page, got.Items, seen)
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
		case got.Pages > max(1, got.TotalItems) || got.Pages < (got.TotalItems+perPage-1)/perPage:
			return 0, pspError(fmt.Errorf("%w: unintelligible answer: GET /pix page %d says %d pages of %d items, asked %d a page",
				psp.ErrTransient, page, got.Pages, got.TotalItems, perPage))
		case got.Pages > MaxCatchUpPages:
			progress.NextPage = MaxCatchUpPages // fails above, visibly, at once
		case progress.NextPage >= got.Pages:
			return got.TotalItems, nil
		}
	}
}

// CatchUpPageTries is how many times one attempt asks for a page that gets
// no answer before the attempt fails: a listing resumed by a retry must
// list the window whole again before it is judged (listPages), so a PSP
// that blips now and then must cost a page, not the pass.
const CatchUpPageTries = 4

// listPage asks the PSP for one page, asking again, after a wait that
// doubles, while it gets no answer (up to CatchUpPageTries); an answer that
// refuses is returned at once. It heartbeats progress (unchanged: the page
// is still the next to list) before each wait, so that the listing's
// heartbeat timeout bounds one ask and one wait, not a page's every try.
func (a *CatchUp) listPage(ctx context.Context, q psp.ReceivedQuery, progress catchUpProgress) (psp.ReceivedPage, error) {
	wait := backoff.NewExponentialBackOff()
	wait.InitialInterval, wait.Multiplier = cmp.Or(a.PageRetryWait, time.Second), 2
	return backoff.Retry(ctx, func() (psp.ReceivedPage, error) {
		got, err := a.PSP.ListReceived(ctx, q)
		if err != nil && psp.Classify(err) != psp.AnswerTransient {
			return got, backoff.Permanent(err)
		}
		return got, err
	}, backoff.WithBackOff(wait), backoff.WithMaxTries(CatchUpPageTries), backoff.WithMaxElapsedTime(0),
		backoff.WithNotify(func(error, time.Duration) { activity.RecordHeartbeat(ctx, progress) }))
}

// storePage stores one page's PIX, all in one transaction (ReceiveBatch,
// as a webhook's); when the inbox refuses one of them (a payload mismatch),
// which fails the whole batch, each is stored by itself, so that the
// refused one holds back none of the others.
func (a *CatchUp) storePage(ctx context.Context, log *slog.Logger, page int, items []json.RawMessage, seen *listingSeen) (CatchUpCounts, error) {
	counts := CatchUpCounts{Pages: 1, Listed: len(items)}
	ns := make([]pix.Notification, 0, len(items))
	for i, raw := range items {
		n, err := notification.DecodeAPIPixItem(raw, "pix["+strconv.Itoa(i)+"]")
		if err != nil {
			id := listedEndToEndID(raw)
			seen.add(id)
			counts.Refused++
			a.Found.Rejected(metrics.CatchUpInvalid)
			log.ErrorContext(ctx, "psp catch-up: a PIX the PSP listed is refused by our decoder; not stored, a human must look",
				"end_to_end_id", id, "page", page, "item", i, "error", err)
			continue
		}
		seen.add(n.EndToEndID)
		n.PSP, n.Listed = CatchUpPSP, true
		ns = append(ns, n)
	}
	if len(ns) == 0 {
		return counts, nil
	}
	receipts, err := a.Store.ReceiveBatch(ctx, ns)
	var item *pix.ItemError
	switch {
	case err == nil:
	case errors.As(err, &item) && pix.IsRefusal(err):
		var stored []pix.Notification
		receipts = nil
		for _, n := range ns {
			r, err := a.Store.Receive(ctx, n)
			switch {
			case err == nil:
				stored, receipts = append(stored, n), append(receipts, r)
			case pix.IsRefusal(err):
				a.rejected(ctx, log, &counts, page, n, err)
			default:
				return CatchUpCounts{}, technicalFailure(err)
			}
		}
		ns = stored
	default:
		return CatchUpCounts{}, technicalFailure(err)
	}
	for i, r := range receipts {
		n := ns[i]
		attrs := []any{"end_to_end_id", n.EndToEndID, "txid", n.TxID, "pix_key", n.PixKey, "amount_cents", n.AmountCents, "page", page}
		switch {
		case !r.Duplicate:
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
		return CatchUpCounts{}, technicalFailure(err)
	}
	return counts, nil
}

// rejected logs and counts a PIX the inbox refused.
func (a *CatchUp) rejected(ctx context.Context, log *slog.Logger, counts *CatchUpCounts, page int, n pix.Notification, err error) {
	attrs := []any{"end_to_end_id", n.EndToEndID, "txid", n.TxID, "pix_key", n.PixKey, "amount_cents", n.AmountCents, "page", page, "error", err}
	if errors.Is(err, pix.ErrPayloadMismatch) {
		counts.Mismatched++
		a.Found.Rejected(metrics.CatchUpPayloadMismatch)
		log.ErrorContext(ctx, "psp catch-up: the PSP's record of a PIX differs from the one stored (payload mismatch); never credited twice, a human must look", attrs...)
		return
	}
	counts.Refused++
	a.Found.Rejected(metrics.CatchUpRefused)
	log.ErrorContext(ctx, "psp catch-up: the inbox refused a PIX the PSP listed; not stored, a human must look", attrs...)
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

// AdvanceCatchUp records that the scheduled run's window is covered, once
// every page of it was stored: the covered window's end moves to w.End,
// only from w.CoveredFrom (a late run changes nothing: moved is false). A
// manual window moves nothing.
func (a *CatchUp) AdvanceCatchUp(ctx context.Context, w CatchUpWindow) (moved bool, err error) {
	if w.Manual {
		return false, nil
	}
	moved, err = a.Store.AdvanceCatchUp(ctx, w.CoveredFrom, w.End)
	if err != nil {
		return false, technicalFailure(err)
	}
	if !moved {
		a.Logger.WarnContext(ctx, "psp catch-up: the covered window moved since this run began; this run's end is not recorded (another run covered it)",
			"window_end", w.End.Format(time.RFC3339), "workflow_id", activity.GetInfo(ctx).WorkflowExecution.ID)
		return false, nil
	}
	a.Found.Covered(w.End)
	return true, nil
}
