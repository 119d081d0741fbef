package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// demoBlockWait bounds the demo's wait for a returned block to end: the
// block's run reads its devolução 10 s after the return, then at growing
// intervals (saga/block SettleFirst), and the simulator's devolução ends
// within seconds.
const demoBlockWait = 90 * time.Second

// demoBlockEvents is how many events of the blocks' aggregates the demo
// waits for: two pix.block.created, a pix.block.released, a
// pix.block.returning and a pix.block.returned.
const demoBlockEvents = 5

// demoBlock shows the cautionary block (saga/block, docs/blocks.md) on a
// PIX Maria receives through the PSP: an operator holds part of it (the
// money is no longer available), releases it (available again), holds the
// rest and returns it to the payer (a devolução of the held money); the
// block ends returned when its devolução does. It returns the blocks' ids,
// the aggregates of their events.
func demoBlock(ctx context.Context, c, psp *apiClient, run string, within time.Duration, say func(string, ...any)) ([]string, error) {
	e2e := demoID(run, 9)
	received := map[string]any{
		"endToEndId": e2e, "valor": "80.00", "horario": time.Now().UTC().Format(time.RFC3339),
		"chave": demoRefundPixKey, "infoPagador": "pixctl demo: a block",
	}
	say("\n16. Maria receives R$ 80,00 through the PSP")
	if _, err := demoReceiveThroughPSP(ctx, c, psp, e2e, received, within, say); err != nil {
		return nil, err
	}
	operator := c.asOperator()
	readBalance := demoBalance(ctx, c, demoRefundAccount, say)
	balance := func() error { _, err := readBalance(); return err }
	// act posts to one block (or creates one: id ""), as the operator.
	act := func(id, action string, body any, what string) (pixBlock, error) {
		path, header := blocksPath(e2e), http.Header{}
		if id == "" {
			header.Set("Idempotency-Key", newKey())
		} else {
			path += "/" + url.PathEscape(id) + action
		}
		var b struct {
			apiError
			pixBlock
		}
		status, _, err := operator.callWith(ctx, http.MethodPost, path, header, body, &b)
		if err == nil {
			err = check(status, b.apiError, what)
		}
		if err != nil {
			return pixBlock{}, err
		}
		say("   POST %s -> %d block %s %s status=%s", path, status, b.ID, brl(b.AmountCents), b.Status)
		return b.pixBlock, nil
	}

	say("17. On-call suspects fraud: a cautionary block holds R$ 30,00 of it for at most 72 hours (the customer is told: pix.block.created)")
	first, err := act("", "", map[string]any{"amount_cents": 3_000, "reason": "pixctl demo: suspected fraud"}, "block "+e2e)
	if err != nil {
		return nil, err
	}
	if err := balance(); err != nil {
		return nil, err
	}
	say("18. The suspicion clears: the block is released, the money spendable again")
	if _, err := act(first.ID, "/release", nil, "release block "+first.ID); err != nil {
		return nil, err
	}
	if err := balance(); err != nil {
		return nil, err
	}

	say("19. Another suspicion, founded this time: R$ 50,00 held and returned to the payer (a devolução of the held money)")
	second, err := act("", "", map[string]any{"amount_cents": 5_000, "reason": "pixctl demo: fraud confirmed"}, "block "+e2e)
	if err != nil {
		return nil, err
	}
	returning, err := act(second.ID, "/return", nil, "return block "+second.ID)
	if err != nil {
		return nil, err
	}
	say("   its devolução %s: the block ends when the devolução does; waiting (at most %s)...", deref(returning.RefundID), within)
	last, err := awaitBlockEnd(ctx, operator, e2e, second.ID, within)
	if err != nil {
		return nil, err
	}
	if last.Status != "returned" {
		return nil, fmt.Errorf("block %s ended %s (%s), not returned: its devolução %s was not made; see %s",
			last.ID, last.Status, deref(last.EndCause), deref(last.RefundID), last.TemporalUIURL)
	}
	say("   block %s status=%s: the payer has the R$ 50,00 back", last.ID, last.Status)
	if err := balance(); err != nil {
		return nil, err
	}
	return []string{first.ID, second.ID}, nil
}

// awaitBlockEnd waits, for at most within, for a returning block to end
// (returned, or released when its devolução was not made), and answers it
// as it ended.
func awaitBlockEnd(ctx context.Context, operator *apiClient, e2e, id string, within time.Duration) (pixBlock, error) {
	var last pixBlock
	err := pollUntil(ctx, within, 500*time.Millisecond, "block "+id+" returning", func() (int, error) {
		var b struct {
			apiError
			pixBlock
		}
		status, err := operator.call(ctx, http.MethodGet, blocksPath(e2e)+"/"+url.PathEscape(id), nil, &b)
		if err == nil {
			err = check(status, b.apiError, "show block "+id)
		}
		if err != nil {
			return 0, err
		}
		last = b.pixBlock
		if last.Status == "returning" {
			return 1, nil
		}
		return 0, nil
	})
	if err != nil {
		return last, fmt.Errorf("%w: see its run in the Temporal UI: %s", err, last.TemporalUIURL)
	}
	return last, nil
}

// demoBalance is a reading of the account's books by its customer, printed
// (balance, held, available) and answered.
func demoBalance(ctx context.Context, c *apiClient, accountID string, say func(string, ...any)) func() (account, error) {
	customer := c.as(accountID)
	return func() (account, error) {
		var a account
		status, err := customer.call(ctx, http.MethodGet, "/accounts/"+accountID, nil, &a)
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("read account %s: HTTP %d", accountID, status)
		}
		if err != nil {
			return account{}, err
		}
		say("   GET /accounts/%s -> balance %s, held %s, available %s", accountID, brl(a.BalanceCents), brl(a.HeldCents), brl(a.AvailableCents))
		return a, nil
	}
}
