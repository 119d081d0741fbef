package notification

import (
	"errors"
	"strings"
	"testing"

	"github.com/pixbank/pix/internal/pix"
)

// A money field is stored exactly as the PSP sent it or refused, naming
// the field: an invalid UTF-8 byte or a lone surrogate in an account or a
// key would be decoded to U+FFFD, a key that is not the one the PSP meant.
// (An informational field with the same bytes is stored, sanitised:
// Storable.)
func TestMoneyTextWithInvalidBytesIsRefusedNamingTheField(t *testing.T) {
	native := func(account string) []byte {
		return []byte(`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"` + account + `","amount_cents":100}`)
	}
	apiPix := func(chave string) []byte {
		return []byte(`{"pix":[{"endToEndId":"E1234567820261129120000000000001","chave":"` + chave +
			`","valor":"1.00","horario":"2026-11-29T12:00:00Z"}]}`)
	}
	for _, c := range []struct {
		name, field string
		decode      func() error
	}{
		{"account with a Latin-1 byte", "account_id", func() error { _, err := DecodeNative(native("acc-\xe9")); return err }},
		{"account with a lone surrogate", "account_id", func() error { _, err := DecodeNative(native(`acc-\ud83d`)); return err }},
		{"key with a Latin-1 byte", "pix[0].chave", func() error { _, err := DecodeAPIPix(apiPix("jos\xe9@example.com")); return err }},
		{"key with a lone surrogate", "pix[0].chave", func() error { _, err := DecodeAPIPix(apiPix(`maria\udc00@example.com`)); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.decode()
			var invalid *pix.ValidationError
			if !errors.As(err, &invalid) || !strings.Contains(err.Error(), c.field) {
				t.Fatalf("want a refusal naming %s, got %v", c.field, err)
			}
		})
	}
	// A key that really holds U+FFFD is refused alike: no PSP's key does.
	if _, err := DecodeAPIPix(apiPix("maria\uFFFD@example.com")); err == nil {
		t.Fatal("a key with U+FFFD was accepted")
	}
}
