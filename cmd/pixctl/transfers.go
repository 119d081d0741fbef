package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"
	"time"
)

type transfer struct {
	ID                string  `json:"id"`
	EndToEndID        string  `json:"end_to_end_id"`
	AccountID         string  `json:"account_id"`
	AmountCents       int64   `json:"amount_cents"`
	PixKey            string  `json:"pix_key"`
	Status            string  `json:"status"`
	BalanceAfterCents int64   `json:"balance_after_cents"`
	FailureReason     *string `json:"failure_reason"`
	TemporalUIURL     string  `json:"temporal_ui_url"`
	Error             *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// newKey returns a fresh Idempotency-Key (a UUID, version 4).
func newKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// demoTransfers sends outgoing PIX: a lost response retried, a refusal
// replayed, and a transfer the PSP rejects, refunded. It returns the
// transfers sent.
func demoTransfers(ctx context.Context, c *apiClient, psp *apiClient, say func(string, ...any)) ([]transfer, error) {
	send := func(key, account string, amount int64, pixKey string) (int, bool, transfer, error) {
		var t transfer
		// The account's customer sends it: the Idempotency-Key is scoped
		// by the token's subject, the same for its retry.
		status, h, err := c.as(account).callWith(ctx, http.MethodPost, "/pix", http.Header{"Idempotency-Key": {key}},
			map[string]any{"account_id": account, "amount_cents": amount, "pix_key": pixKey, "description": "demo"}, &t)
		if t.AccountID == "" {
			t.AccountID = account
		}
		return status, h.Get("X-Idempotent-Replay") == "true", t, err
	}
	describe := func(status int, replay bool, t transfer) string {
		if t.Error != nil {
			return fmt.Sprintf("%d %s (replay=%v)", status, t.Error.Code, replay)
		}
		return fmt.Sprintf("%d transfer %s status=%s balance_after=%s (replay=%v)", status, t.ID, t.Status, brl(t.BalanceAfterCents), replay)
	}
	var sent []transfer

	say("6. Maria sends R$ 150,00; the response is lost and her app sends it again with the same Idempotency-Key")
	key := newKey()
	for range 2 {
		status, replay, t, err := send(key, "acc-0001", 15_000, "joao@example.com")
		if err != nil {
			return nil, err
		}
		say("   POST /pix Idempotency-Key: %s -> %s", key, describe(status, replay, t))
		if !replay {
			sent = append(sent, t)
		}
	}

	say("7. Ana sends R$ 500,00, more than her balance: refused, and the retry gets the same refusal")
	key = newKey()
	for range 2 {
		status, replay, t, err := send(key, "acc-0003", 50_000, "joao@example.com")
		if err != nil {
			return nil, err
		}
		say("   POST /pix Idempotency-Key: %s -> %s", key, describe(status, replay, t))
	}

	say("8. Carlos sends R$ 80,00 to a key whose account the PSP finds closed: rejected, then refunded")
	var none struct{}
	if status, err := psp.call(ctx, http.MethodPut, "/behaviors/encerrada@example.com",
		map[string]any{"mode": "reject", "reason": "conta do recebedor encerrada"}, &none); err != nil || status != http.StatusNoContent {
		return nil, fmt.Errorf("configure the PSP simulator at %s (status %d): %v", psp.base, status, err)
	}
	status, replay, t, err := send(newKey(), "acc-0004", 8_000, "encerrada@example.com")
	if err != nil {
		return nil, err
	}
	say("   POST /pix -> %s", describe(status, replay, t))
	if t.ID != "" {
		sent = append(sent, t)
	}
	return sent, nil
}

// waitTransfers waits for every transfer to be settled or refunded, and
// prints them.
func waitTransfers(ctx context.Context, c *apiClient, sent []transfer, out io.Writer) error {
	final := map[string]transfer{}
	err := pollUntil(ctx, 2*time.Minute, 300*time.Millisecond, "transfers still open", func() (int, error) {
		for _, s := range sent {
			var t transfer
			if _, err := c.as(s.AccountID).call(ctx, http.MethodGet, "/pix/transfers/"+s.ID, nil, &t); err != nil {
				return 0, err
			}
			if t.Status == "settled" || t.Status == "refunded" {
				final[s.ID] = t
			}
		}
		return len(sent) - len(final), nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "\nOutgoing PIX")
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "END_TO_END_ID\tACCOUNT\tAMOUNT\tTO\tSTATUS\tREASON")
	for _, s := range sent {
		t := final[s.ID]
		reason := ""
		if t.FailureReason != nil {
			reason = *t.FailureReason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.EndToEndID, t.AccountID, brl(t.AmountCents), t.PixKey, t.Status, reason)
	}
	return tw.Flush()
}
