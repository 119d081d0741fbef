package notification

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pixbank/pix/internal/pix"
)

// The decoders face whatever a network peer sends. The fuzz targets check
// that nothing panics and that whatever is accepted holds the rules the
// rest of the service relies on. Seeds: testdata/fuzz/<target>/ and below.

func FuzzDecodeNotification(f *testing.F) {
	f.Add([]byte(`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc-0001","amount_cents":15000,"payer":{"name":"Maria","ispb":"12345678"},"occurred_at":"2026-11-29T12:00:00Z"}`))
	f.Add([]byte(`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1,"amount_cents":2}`))
	f.Add([]byte(`{"a":[[[[{"b":"\u0000"}]]]]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		n, err := DecodeNative(body)
		if err != nil {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if !pix.ValidEndToEndID(n.EndToEndID) {
			t.Fatalf("accepted end_to_end_id %q", n.EndToEndID)
		}
		if n.AmountCents < 1 || n.AmountCents > pix.MaxAmountCents {
			t.Fatalf("accepted amount %d", n.AmountCents)
		}
		if n.AccountID == "" || utf8.RuneCountInString(n.AccountID) > pix.MaxAccountIDLength || HasControlOrInvalid(n.AccountID) {
			t.Fatalf("accepted account_id %q", n.AccountID)
		}
		checkStorable(t, n.Payload)
	})
}

func FuzzDecodeAPIPix(f *testing.F) {
	if spec, err := os.ReadFile("testdata/api_pix_spec_example.json"); err == nil {
		f.Add(spec)
	}
	f.Add([]byte(`{"pix":[{"endToEndId":"E1234567820261129120000000000001","chave":"maria@example.com","valor":"0110.05","horario":"2026-11-29T12:00:00-03:00"}]}`))
	f.Add([]byte(`{"pix":[{"endToEndId":"E1234567820261129120000000000001","txid":"abc","valor":"1.00","valor":"2.00","horario":"2026-11-29T12:00:00Z"}]}`))
	f.Add([]byte(`{"pix":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		ns, err := DecodeAPIPix(body)
		if err != nil {
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
		if len(ns) == 0 || len(ns) > MaxAPIPixBatch {
			t.Fatalf("accepted a batch of %d", len(ns))
		}
		for i, n := range ns {
			if !pix.ValidEndToEndID(n.EndToEndID) {
				t.Fatalf("pix[%d]: accepted endToEndId %q", i, n.EndToEndID)
			}
			if n.PixKey == "" && n.TxID == "" {
				t.Fatalf("pix[%d]: accepted without chave and txid", i)
			}
			if n.TxID != "" && !txidPattern.MatchString(n.TxID) {
				t.Fatalf("pix[%d]: accepted txid %q", i, n.TxID)
			}
			if n.AmountCents < 1 || n.AmountCents > pix.MaxAmountCents {
				t.Fatalf("pix[%d]: accepted amount %d", i, n.AmountCents)
			}
			checkStorable(t, n.Payload)
			if n.RefundNotice != nil {
				checkStorable(t, n.RefundNotice)
			}
			// The amount is exactly the decimal string that was sent.
			var item map[string]json.RawMessage
			if err := json.Unmarshal(n.Payload, &item); err != nil {
				t.Fatalf("pix[%d]: stored payload is not an object: %v", i, err)
			}
			var valor string
			if err := json.Unmarshal(item["valor"], &valor); err != nil {
				t.Fatalf("pix[%d]: valor: %v", i, err)
			}
			trimmed := strings.TrimLeft(valor, "0")
			if strings.HasPrefix(trimmed, ".") {
				trimmed = "0" + trimmed
			}
			if got := fmt.Sprintf("%d.%02d", n.AmountCents/100, n.AmountCents%100); got != trimmed {
				t.Fatalf("pix[%d]: valor %q became %d centavos", i, valor, n.AmountCents)
			}
		}
	})
}
