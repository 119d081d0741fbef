package activities

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"go.temporal.io/sdk/activity"

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

// CatchUpStore is what the PSP catch-up needs of the database: the inbox's
// receive path (the webhooks'), the refund notices' (db.NoteRefundNotices)
// and its covered window.
type CatchUpStore interface {
	Receive(ctx context.Context, n pix.Notification) (pix.Receipt, error)
	ReceiveBatch(ctx context.Context, ns []pix.Notification) ([]pix.Receipt, error)
	db.RefundNoter
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
	// how far back the first run lists (PSP_CATCHUP_LOOKBACK).
	Overlap, Lookback time.Duration
	// PerPage is paginacao.itensPorPagina (0: psp.MaxReceivedPerPage).
	PerPage int
	Logger  *slog.Logger
	// Metrics counts the PSP's refusals (pix_psp_attention_total); Found
	// what the catch-up found. nil counts nothing.
	Metrics *metrics.Worker
	Found   *metrics.CatchUp
	// Now is the clock (nil: time.Now).
	Now func() time.Time
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
// inbox refused it); Pages listed.
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
}

func (a *CatchUp) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// BeginCatchUp decides the window of a scheduled run: from the covered
// window's end less the overlap (or, before any window was covered, from
// the lookback) up to now, to the second.
func (a *CatchUp) BeginCatchUp(ctx context.Context) (CatchUpWindow, error) {
	covered, ok, err := a.Store.CatchUpCoveredUntil(ctx)
	if err != nil {
		return CatchUpWindow{}, technicalFailure(err)
	}
	now := a.now().Truncate(time.Second)
	w := CatchUpWindow{Start: now.Add(-a.Lookback), End: now}
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
	for page := progress.NextPage; ; page++ {
		got, err := a.PSP.ListReceived(ctx, psp.ReceivedQuery{Start: w.Start, End: w.End, Page: page, PerPage: perPage})
		if err != nil {
			if psp.Classify(err) == psp.AnswerTransient {
				return progress.Counts, pspError(err)
			}
			return progress.Counts, pspRequestRefused(ctx, a.Metrics, log.With("page", page), err,
				"the catch-up's window stays where it is and is listed again")
		}
		counts, err := a.storePage(ctx, log, page, got.Items)
		if err != nil {
			return progress.Counts, err
		}
		progress.Counts.Add(counts)
		progress.NextPage = page + 1
		activity.RecordHeartbeat(ctx, progress)
		if progress.NextPage >= got.Pages {
			break
		}
	}
	log.InfoContext(ctx, "psp catch-up window listed", "manual", w.Manual, "pages", progress.Counts.Pages, "listed", progress.Counts.Listed,
		"new", progress.Counts.New, "duplicate", progress.Counts.Duplicate, "mismatched", progress.Counts.Mismatched, "refused", progress.Counts.Refused)
	return progress.Counts, nil
}

// storePage stores one page's PIX, all in one transaction (ReceiveBatch,
// as a webhook's); when the inbox refuses one of them (a payload mismatch),
// which fails the whole batch, each is stored by itself, so that the
// refused one holds back none of the others.
func (a *CatchUp) storePage(ctx context.Context, log *slog.Logger, page int, items []json.RawMessage) (CatchUpCounts, error) {
	counts := CatchUpCounts{Pages: 1, Listed: len(items)}
	ns := make([]pix.Notification, 0, len(items))
	for i, raw := range items {
		n, err := notification.DecodeAPIPixItem(raw, "pix["+strconv.Itoa(i)+"]")
		if err != nil {
			counts.Refused++
			a.Found.Rejected(metrics.CatchUpInvalid)
			log.ErrorContext(ctx, "psp catch-up: a PIX the PSP listed is refused by our decoder; not stored, a human must look",
				"end_to_end_id", listedEndToEndID(raw), "page", page, "item", i, "error", err)
			continue
		}
		n.PSP = CatchUpPSP
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
		receipts = make([]pix.Receipt, len(ns))
		stored := ns[:0:0]
		for _, n := range ns {
			r, err := a.Store.Receive(ctx, n)
			switch {
			case err == nil:
				receipts[len(stored)] = r
				stored = append(stored, n)
			case pix.IsRefusal(err):
				a.rejected(ctx, log, &counts, page, n, err)
			default:
				return CatchUpCounts{}, technicalFailure(err)
			}
		}
		ns, receipts = stored, receipts[:len(stored)]
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
		case r.Redriven:
			counts.Duplicate++
			log.InfoContext(ctx, "psp catch-up: a failed PIX the PSP listed is re-driven, as by a redelivery", attrs...)
		default:
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
