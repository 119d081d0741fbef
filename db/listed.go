package db

import (
	"cmp"
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/internal/notification"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tracing"
)

// listedSQL holds the statements of queries/listed.sql.
var listedSQL struct {
	Stored, Insert, NoteRefunds string
}

func init() { bindQueries("listed.sql", &listedSQL) }

// ListedOutcome is what StoreListed made of one PIX the PSP's record lists.
type ListedOutcome struct {
	EndToEndID string
	// New: no webhook had told us of the PIX; this listing stored it,
	// pending and due for its credit.
	New bool
	// Differs names the first money field in which the stored PIX (its
	// inbox row, or its credit once the row was cleaned up) differs from
	// the listed one: "amount", "chave", "txid" or "account" (a payload
	// mismatch: nothing was written, a human must look). "" when it is the
	// same PIX, or New.
	Differs string
	// Status is the stored row's status ("" for a New PIX, or one whose
	// row was cleaned up after its credit).
	Status string
}

// Mismatch is whether the PSP's record of the PIX differs from ours.
func (o ListedOutcome) Mismatch() bool { return o.Differs != "" }

// StoreListed stores the PIX of one page of the PSP's own record (the PSP
// catch-up's GET /pix; each an API Pix notification, pix.SourceAPIPix)
// without writing what is stored already: one read of what the inbox and
// the credits hold of them, compared in memory (samePIX); one insert, ON
// CONFLICT DO NOTHING, of those stored nowhere (New); then, for the few a
// webhook stored in between, the read again. A listed PIX that is stored
// already, as the same PIX, changes no row (the catch-up lists every PIX
// again at each run for its overlap: at 1,000 PIX/s, a write each would
// be 600,000 row versions a minute that change nothing), except to record
// a refund notice that differs from the row's. A failed row is never
// re-driven by a listing (pix.Notification.Listed). The outcomes are in
// ns's order.
func (s *Store) StoreListed(ctx context.Context, ns []pix.Notification) ([]ListedOutcome, error) {
	for _, n := range ns {
		if n.Source != pix.SourceAPIPix {
			return nil, fmt.Errorf("store listed PIX %s: a listing is of the API Pix format, not %q", n.EndToEndID, n.Source)
		}
	}
	found, err := s.readListed(ctx, ns, nil)
	if err != nil {
		return nil, err
	}
	out := make([]ListedOutcome, len(ns))
	var missing []int
	for i, n := range ns {
		r := found[i]
		if !r.stored() {
			missing = append(missing, i)
			continue
		}
		out[i] = ListedOutcome{EndToEndID: n.EndToEndID, Differs: samePIX(n, r), Status: r.Status}
	}
	if len(missing) > 0 {
		// The first copy of an end_to_end_id the page lists twice is
		// inserted; the others are compared with it.
		firsts := make([]int, 0, len(missing))
		seen := make(map[string]bool, len(missing))
		for _, i := range missing {
			if !seen[ns[i].EndToEndID] {
				seen[ns[i].EndToEndID] = true
				firsts = append(firsts, i)
			}
		}
		inserted, err := s.insertListed(ctx, ns, firsts)
		if err != nil {
			return nil, err
		}
		var again []int
		for _, i := range missing {
			if inserted[ns[i].EndToEndID] {
				out[i] = ListedOutcome{EndToEndID: ns[i].EndToEndID, New: true, Status: pix.StatusPending}
				delete(inserted, ns[i].EndToEndID) // a second copy on the page is compared with the first
				continue
			}
			again = append(again, i)
		}
		if len(again) < len(missing) {
			s.Wake(DueChannel)
		}
		if len(again) > 0 {
			// A webhook (or an earlier copy on this page) stored it in
			// between, or it was credited and cleaned up: judged as stored.
			found, err := s.readListed(ctx, ns, again)
			if err != nil {
				return nil, err
			}
			for _, i := range again {
				r := found[i]
				if !r.stored() {
					return nil, Classify(fmt.Errorf("store listed PIX %s: neither inserted nor stored", ns[i].EndToEndID))
				}
				out[i] = ListedOutcome{EndToEndID: ns[i].EndToEndID, Differs: samePIX(ns[i], r), Status: r.Status}
			}
		}
	}
	if err := s.noteListedRefunds(ctx, ns, out); err != nil {
		return nil, err
	}
	return out, nil
}

// storedPIX is what queries/listed.sql's Stored reads of one PIX told to
// us (listed, or delivered and not stored by Receive).
type storedPIX struct {
	EndToEndID     string
	InInbox        bool
	Status, Source string
	AmountCents    int64
	// AccountID is the row's account: named by a native row, or, for an
	// API Pix row, as the credit resolves it (its chave, else its txid),
	// "" for none.
	AccountID, PixKey, TxID string
	Credited                bool
	CreditAccountID         string
	CreditAmountCents       int64
	// CreditTxID is the txid the credited PIX named ("" for none).
	CreditTxID string
	// ToldAccountID is the account the told PIX's chave (else its txid)
	// names now, "" for none (or for a native one: it names its own).
	ToldAccountID string
}

// scanStored reads one row of Stored, and its number.
func scanStored(row pgx.Row) (n int, r storedPIX, err error) {
	err = row.Scan(&n, &r.EndToEndID, &r.InInbox, &r.Status, &r.Source, &r.AmountCents, &r.AccountID, &r.PixKey, &r.TxID,
		&r.Credited, &r.CreditAccountID, &r.CreditAmountCents, &r.CreditTxID, &r.ToldAccountID)
	return n, r, err
}

// stored reports whether anything is stored of the PIX.
func (r storedPIX) stored() bool { return r.InInbox || r.Credited }

// readListed reads what is stored of the PIX ns lists (only those at the
// indexes only, when given), by their index in ns.
func (s *Store) readListed(ctx context.Context, ns []pix.Notification, only []int) (map[int]storedPIX, error) {
	pick := only
	if pick == nil {
		pick = make([]int, len(ns))
		for i := range ns {
			pick[i] = i
		}
	}
	ids, keys, txids := make([]string, len(pick)), make([]string, len(pick)), make([]string, len(pick))
	for j, i := range pick {
		ids[j], keys[j], txids[j] = ns[i].EndToEndID, ns[i].PixKey, ns[i].TxID
	}
	rows, err := s.pool.Query(ctx, listedSQL.Stored, ids, keys, txids)
	if err != nil {
		return nil, Classify(fmt.Errorf("read the listed PIX: %w", err))
	}
	defer rows.Close()
	out := make(map[int]storedPIX, len(pick))
	for rows.Next() {
		n, r, err := scanStored(rows)
		if err != nil {
			return nil, Classify(fmt.Errorf("read the listed PIX: %w", err))
		}
		out[pick[n-1]] = r
	}
	if err := rows.Err(); err != nil {
		return nil, Classify(fmt.Errorf("read the listed PIX: %w", err))
	}
	return out, nil
}

// samePIX compares a PIX told to us (listed by the PSP's record, or
// delivered by a webhook Receive did not store) with what is stored of
// it, whatever the formats and the row's status: the money field in which
// they differ, "" when they are the same PIX. While the inbox row is kept,
// it is what we were first told: the amount, and, both in the API Pix
// format, the chave and the txid; across the formats, the account (the
// native format names it; an API Pix PIX's chave, else its charge, names
// one of ours, or none: never the same PIX as a native one). A PIX
// credited whose row was cleaned up is compared with its credit: the
// amount, the charge it paid (its txid), and the account.
func samePIX(n pix.Notification, r storedPIX) string {
	told := n.AccountID
	if n.Source == pix.SourceAPIPix {
		told = r.ToldAccountID
	}
	bothAPIPix := r.Source == pix.SourceAPIPix && n.Source == pix.SourceAPIPix
	switch {
	case r.InInbox && r.AmountCents != n.AmountCents:
		return "amount"
	case r.InInbox && bothAPIPix && r.PixKey != n.PixKey:
		return "chave"
	case r.InInbox && bothAPIPix && r.TxID != n.TxID:
		return "txid"
	case r.InInbox && bothAPIPix:
		return ""
	case r.InInbox && (told == "" || r.AccountID != told):
		return "account"
	case r.InInbox:
		return ""
	case r.CreditAmountCents != n.AmountCents:
		return "amount"
	case r.CreditTxID != "" && r.CreditTxID != n.TxID:
		return "txid" // the credit names the charge its PIX paid; one without a txid names none
	case told == "" || r.CreditAccountID != told:
		return "account"
	}
	return ""
}

// creditedBefore answers a delivery Receive did not store (its statement
// compares a redelivery with the row in its own format only): the same PIX
// as the one stored, by samePIX (told in the other format, or credited
// and its inbox row cleaned up: pix_credits is the guard that lasts, I1),
// is a duplicate and changes nothing; otherwise a payload mismatch. A
// credited PIX delivered again under another chave or txid is a mismatch
// while its row is kept, as it is while pending: never a silent duplicate.
// q is the pool, or the group commit's transaction.
func creditedBefore(ctx context.Context, q Querier, n pix.Notification) (pix.Receipt, error) {
	n.Source = cmp.Or(n.Source, pix.SourceNative)
	_, r, err := scanStored(q.QueryRow(ctx, listedSQL.Stored, []string{n.EndToEndID}, []string{n.PixKey}, []string{n.TxID}))
	if err != nil {
		return pix.Receipt{}, Classify(fmt.Errorf("look up the stored PIX: %w", err))
	}
	if !r.stored() {
		// Its row cleaned up between the two statements, with no credit:
		// nothing to be the same as; the PSP delivers it again.
		return pix.Receipt{}, pix.ErrPayloadMismatch
	}
	if differs := samePIX(n, r); differs != "" {
		return pix.Receipt{}, fmt.Errorf("%w: the %s differs", pix.ErrPayloadMismatch, differs)
	}
	return pix.Receipt{EndToEndID: n.EndToEndID, Status: cmp.Or(r.Status, pix.StatusDone), Duplicate: true}, nil
}

// insertListed inserts the PIX of ns at the indexes missing (Insert): the
// set of the end_to_end_ids inserted.
func (s *Store) insertListed(ctx context.Context, ns []pix.Notification, missing []int) (map[string]bool, error) {
	ids, keys, txids := make([]string, len(missing)), make([]string, len(missing)), make([]string, len(missing))
	amounts := make([]int64, len(missing))
	notices, payloads, psps := make([]*string, len(missing)), make([]string, len(missing)), make([]string, len(missing))
	for j, i := range missing {
		n := ns[i]
		ids[j], amounts[j], keys[j], txids[j], psps[j] = n.EndToEndID, n.AmountCents, n.PixKey, n.TxID, n.PSP
		if len(n.RefundNotice) > 0 {
			notice := string(notification.Storable(n.RefundNotice))
			notices[j] = &notice
		}
		payloads[j] = string(notification.Storable(n.Payload))
	}
	rows, err := s.pool.Query(ctx, listedSQL.Insert, ids, amounts, keys, txids, notices, payloads, psps, tracing.Traceparent(ctx))
	if err != nil {
		return nil, Classify(fmt.Errorf("insert the listed PIX: %w", err))
	}
	inserted, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, Classify(fmt.Errorf("insert the listed PIX: %w", err))
	}
	out := make(map[string]bool, len(inserted))
	for _, id := range inserted {
		out[id] = true
	}
	return out, nil
}

// noteListedRefunds records on the rows of the listed PIX that are the same
// as stored the refund notices that differ from theirs (NoteRefunds).
func (s *Store) noteListedRefunds(ctx context.Context, ns []pix.Notification, out []ListedOutcome) error {
	var ids, notices []string
	for i, n := range ns {
		if len(n.RefundNotice) == 0 || out[i].New || out[i].Mismatch() || out[i].Status == "" {
			continue
		}
		ids, notices = append(ids, n.EndToEndID), append(notices, string(notification.Storable(n.RefundNotice)))
	}
	if len(ids) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, listedSQL.NoteRefunds, ids, notices); err != nil {
		return Classify(fmt.Errorf("note the listed PIX's refund notices: %w", err))
	}
	return nil
}
