package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/tooling/load"
)

// transferRow is one of the run's transfers as our books hold it.
type transferRow struct {
	id, endToEndID, accountID, pixKey, status, idempotencyKey string
	amountCents                                               int64
	createdAt                                                 time.Time
	finalAt                                                   *time.Time
	// refund is the pix_transfer_refunds row's amount, 0 when none.
	refund int64
}

// transfersOf reads the transfers debited from the run's accounts.
func transfersOf(ctx context.Context, pool *pgxpool.Pool, runID string) ([]transferRow, error) {
	rows, err := pool.Query(ctx, `
		SELECT t.id::text, t.end_to_end_id, t.account_id, t.pix_key, t.status, COALESCE(t.idempotency_key::text, ''),
		       t.amount_cents, t.created_at, COALESCE(t.settled_at, t.refunded_at), COALESCE(r.amount_cents, 0)
		FROM pix_transfers t LEFT JOIN pix_transfer_refunds r ON r.transfer_id = t.id
		WHERE starts_with(t.account_id, $1) ORDER BY t.created_at`, "load-"+runID+"-")
	if err != nil {
		return nil, fmt.Errorf("read transfers: %w", err)
	}
	var out []transferRow
	var t transferRow
	_, err = pgx.ForEachRow(rows, []any{&t.id, &t.endToEndID, &t.accountID, &t.pixKey, &t.status, &t.idempotencyKey,
		&t.amountCents, &t.createdAt, &t.finalAt, &t.refund}, func() error {
		out = append(out, t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read transfers: %w", err)
	}
	return out, nil
}

// drainTransfers waits (within timeout) until every transfer of the run is
// final: settled or refunded.
func drainTransfers(ctx context.Context, pool *pgxpool.Pool, runID string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var open int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pix_transfers WHERE starts_with(account_id, $1) AND status IN ('debited', 'submitted')`,
			"load-"+runID+"-").Scan(&open)
		if err == nil && open == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("drain transfers: %w", err)
			}
			return nil // what stays open is judged by checkTransfers
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// transferReport is what the outgoing PIX of one case came to.
type transferReport struct {
	total, settled, refunded, open int
	// openVisible lists the transfers left open whose PSP record allows it
	// (pending, or none): visible, waiting for the PSP.
	openVisible []string
	// lastFinal is when the last transfer created before the heal became
	// final.
	lastFinal time.Time
}

// checkTransfers holds the run's transfers against the load's answers and
// the PSP's records:
//
//   - each transfer ends settled or refunded, or stays open only while the
//     PSP holds it pending or holds nothing (then it is listed, and must be
//     visible through GET /pix/transfers/{id});
//   - settled only if the PSP holds it settled; refunded only if the PSP
//     holds it rejected: never one the PSP holds settled or pending, nor
//     one it never received (a refusal of our request is not a rejection
//     of the transfer);
//   - a refund is one pix_transfer_refunds row of the transfer's amount,
//     and only for a refunded transfer;
//   - the PSP holds at most one transfer per end_to_end_id, and what it
//     holds of ours has our amount, key and account;
//   - every 201 (created, by transfer id) is one transfer with what was
//     asked, one transfer per Idempotency-Key, and no transfer the load was
//     not answered for.
func checkTransfers(ctx context.Context, st *stack, created map[string]load.SentTransfer, runID string, healed time.Time) (transferReport, []string, error) {
	rows, err := transfersOf(ctx, st.pool, runID)
	if err != nil {
		return transferReport{}, nil, err
	}
	held, copies, err := st.psp.transfers(ctx)
	if err != nil {
		return transferReport{}, nil, err
	}
	rep := transferReport{total: len(rows)}
	var v []string
	bad := map[string][]string{}
	flag := func(what, id string) { bad[what] = append(bad[what], id) }
	perKey := map[string]int{}
	ours := map[string]bool{}
	for _, t := range rows {
		ours[t.endToEndID] = true
		perKey[t.idempotencyKey]++
		p, atPSP := held[t.endToEndID]
		pspStatus := psp.Status("none")
		if atPSP {
			pspStatus = p.Status
			if p.AmountCents != t.amountCents || p.PixKey != t.pixKey || p.AccountID != t.accountID {
				flag("transfers the PSP holds with another amount, key or account", t.endToEndID)
			}
		}
		label := fmt.Sprintf("%s (ours %s, psp %s)", t.endToEndID, t.status, pspStatus)
		switch t.status {
		case "settled":
			rep.settled++
			if pspStatus != psp.StatusSettled {
				flag("transfers settled by us that the PSP does not hold settled", label)
			}
		case "refunded":
			rep.refunded++
			switch pspStatus {
			case psp.StatusSettled, psp.StatusPending:
				flag("transfers REFUNDED although the PSP holds them settled or pending (the money went out and came back)", label)
			case psp.StatusRejected:
			default:
				flag("transfers refunded although the PSP never received them (a refusal of the request taken for a rejection)", label)
			}
		default:
			rep.open++
			switch pspStatus {
			case psp.StatusPending, "none":
				rep.openVisible = append(rep.openVisible, label)
				if err := visible(ctx, st, t); err != nil {
					flag("open transfers not visible through the API", fmt.Sprintf("%s: %v", t.id, err))
				}
			default:
				flag("transfers left open although the PSP's answer is final", label)
			}
		}
		if (t.refund != 0) != (t.status == "refunded") || (t.refund != 0 && t.refund != t.amountCents) {
			flag("transfers whose refund row does not match their status or amount", label)
		}
		if t.finalAt != nil && t.createdAt.Before(healed) && t.finalAt.After(rep.lastFinal) {
			rep.lastFinal = *t.finalAt
		}
		if s, ok := created[t.id]; !ok {
			flag("transfers no 201 answered", t.id)
		} else if s.AccountID != t.accountID || s.AmountCents != t.amountCents || s.PixKey != t.pixKey || s.EndToEndID != t.endToEndID ||
			s.IdempotencyKey != t.idempotencyKey {
			flag("transfers that differ from what was asked", t.id)
		}
	}
	for k, n := range perKey {
		if n > 1 {
			flag("Idempotency-Keys with more than one transfer", k)
		}
	}
	if len(created) != len(rows) {
		v = append(v, fmt.Sprintf("%d transfers answered 201, %d in the books", len(created), len(rows)))
	}
	for id, n := range copies {
		if n > 1 {
			flag("end_to_end_ids the PSP holds more than once", id)
		}
	}
	for id, p := range held {
		if strings.HasPrefix(p.AccountID, "load-"+runID+"-") && !ours[id] {
			flag("transfers the PSP holds from our accounts that we have no record of", id)
		}
	}
	for _, what := range slices.Sorted(maps.Keys(bad)) {
		ids := bad[what]
		slices.Sort(ids)
		v = append(v, fmt.Sprintf("%d %s: %s", len(ids), what, abbreviate(ids, 3)))
	}
	return rep, v, nil
}

// visible asks the API for an open transfer: it must answer it with its
// status (whatever it is by now: it may have moved since it was read). It
// asks as the transfer's customer: a token for its account, scope
// pix:read.
func visible(ctx context.Context, st *stack, t transferRow) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, st.apiURL+"/pix/transfers/"+t.id, nil)
	if err != nil {
		return err
	}
	token, err := st.customerToken("pixfaults-reader", []string{auth.ScopeRead}, []string{t.accountID}, time.Minute)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var body struct {
		Status string `json:"status"`
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("http %d", res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		return err
	}
	if body.Status == "" {
		return fmt.Errorf("the API answers no status")
	}
	return nil
}

// pspModes is a shorthand for the behaviours the cases set.
var (
	acceptMode = pspsim.Behavior{Mode: pspsim.ModeAccept}
	rejectMode = pspsim.Behavior{Mode: pspsim.ModeReject, Reason: "receiver account closed (fault suite)"}
)
