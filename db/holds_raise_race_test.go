package db_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
)

// Releases and shrinks that raise the MEDs of their PIX (RaiseFillTo) and
// fill (fillFromFreed), credits that fill, new holds (blocks of the
// reported PIX and of none, MEDs), and debits on ONE account at once, each
// tried once: no deadlock, no serialization failure; the books exact; no
// released hold or shrink filled more than it freed; no PIX's holds and
// devoluções take more than its credit; no hold lacks while money is
// available (issue 37, attack review B).
func TestReleasesAndShrinksThatRaiseAndFillUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	dbtest.OpenAccount(t, s, "acc-1", 0)
	var reported []string
	for i := range 6 {
		reported = append(reported, creditPIX(t, s, i+1, "acc-1", 10_000))
	}
	debit(t, s, "acc-1", 55_000) // little available: the MEDs' holds lack
	n := 100
	var mu sync.Mutex
	var holds []pix.Hold
	once := func(call moneyCall) error {
		return db.InTxForTest(ctx, s, 1, func(tx pgx.Tx) error { return call(ctx, tx) })
	}
	some := func(rnd *rand.Rand) (pix.Hold, bool) {
		mu.Lock()
		defer mu.Unlock()
		if len(holds) == 0 {
			return pix.Hold{}, false
		}
		return holds[rnd.IntN(len(holds))], true
	}
	const workers, steps = 6, 40
	errs := make(chan error, workers*steps)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), 53))
			for range steps {
				var err error
				switch k := rnd.IntN(12); {
				case k < 2:
					mu.Lock()
					n++
					id := n
					mu.Unlock()
					nt := note(e2eID(id), "acc-1", 1+rnd.Int64N(1_500))
					if _, err = s.Receive(ctx, nt); err == nil {
						_, err = s.Credit(ctx, nt.EndToEndID, 1, 1)
					}
				case k < 5:
					var h pix.Hold
					nh := med(uuid.NewString(), "acc-1", reported[rnd.IntN(len(reported))], 1+rnd.Int64N(6_000))
					if rnd.IntN(3) == 0 {
						nh = db.NewHold{Ref: uuid.NewString(), AccountID: "acc-1", AmountCents: 1 + rnd.Int64N(3_000), UpTo: true, Kind: "cautionary_block"}
						if rnd.IntN(2) == 0 { // a block of a reported PIX: its MEDs are cut short, and raised when it ends
							nh.EndToEndID = reported[rnd.IntN(len(reported))]
						}
					}
					err = once(holdCall(nh, &h))
					if err == nil {
						mu.Lock()
						holds = append(holds, h)
						mu.Unlock()
					}
				case k < 7:
					if h, ok := some(rnd); ok {
						err = once(func(ctx context.Context, tx pgx.Tx) error {
							_, _, err := db.Release(ctx, tx, uuid.MustParse(h.ID), "x")
							return err
						})
					}
				case k < 10:
					if h, ok := some(rnd); ok {
						err = once(func(ctx context.Context, tx pgx.Tx) error {
							_, _, err := db.Shrink(ctx, tx, uuid.MustParse(h.ID), rnd.Int64N(3_000)+1, "x")
							return err
						})
					}
				default:
					err = tryDebit(s, "acc-1", 1+rnd.Int64N(3_000))
				}
				for _, r := range []error{pix.ErrHoldExceedsCredit, pix.ErrInsufficientFunds} {
					if errors.Is(err, r) {
						err = nil
					}
				}
				var v *pix.ValidationError
				if errors.As(err, &v) {
					err = nil
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a call failed: %v", err)
	}
	dbtest.RequireBooks(t, s)
	var wrong, fills int
	require.NoError(t, s.Pool().QueryRow(ctx, `
		SELECT count(*) FROM pix_holds r
		WHERE r.status = 'released' AND r.amount_cents < (SELECT COALESCE(sum(f.amount_cents), 0) FROM pix_hold_fills f
		      WHERE f.source_kind = 'hold_release' AND f.source_id = r.id::text)`).Scan(&wrong))
	require.Zero(t, wrong, "a release that filled more than it freed")
	require.NoError(t, s.Pool().QueryRow(ctx, `
		SELECT count(*) FROM outbox_events e
		WHERE e.event_type = 'pix.hold.shrunk' AND (e.payload->>'released_cents')::bigint < (SELECT COALESCE(sum(f.amount_cents), 0)
		      FROM pix_hold_fills f WHERE f.source_kind = 'hold_shrink' AND f.source_id = e.id::text)`).Scan(&wrong))
	require.Zero(t, wrong, "a shrink that filled more than it freed")
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM pix_hold_fills WHERE source_kind IN ('hold_release','hold_shrink')`).Scan(&fills))
	t.Logf("%d holds, %d fills from freed money", len(holds), fills)
	require.NoError(t, s.Pool().QueryRow(ctx, `
		SELECT count(*) FROM pix_holds h WHERE h.status = 'active' AND h.amount_cents < h.fill_to_cents
		AND EXISTS (SELECT 1 FROM accounts a WHERE a.id = h.account_id AND a.balance_cents - a.held_cents > 0)`).Scan(&wrong))
	require.Zero(t, wrong, "a hold that lacks while money is available")
	require.NoError(t, s.Pool().QueryRow(ctx, `
		SELECT count(*) FROM pix_credits c
		WHERE c.amount_cents < (SELECT COALESCE(sum(COALESCE(h.fill_to_cents, h.amount_cents)), 0) FROM pix_holds h
		                        WHERE h.end_to_end_id = c.end_to_end_id AND h.status = 'active')
		                     + (SELECT COALESCE(sum(r.amount_cents), 0) FROM pix_refunds r
		                        WHERE r.end_to_end_id = c.end_to_end_id AND r.status <> 'reversed')`).Scan(&wrong))
	require.Zero(t, wrong, "a PIX whose holds and devoluções take more than its credit")
	var raised int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM outbox_events WHERE event_type = 'pix.hold.fill_raised'`).Scan(&raised))
	t.Logf("%d raises", raised)
}
