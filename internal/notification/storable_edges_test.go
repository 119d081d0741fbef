package notification_test

// Regression, found by the attack review of issue 27 (item 6) (payloads PostgreSQL can't store): edge
// inputs through both decoders and into the inbox (PostgreSQL), on both
// routes. Property as FuzzStoreWhatTheDecodersAccept's: stored, or a 4xx;
// never a 5xx. Needs PostgreSQL (skipped with -short).

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/notification"
)

var edgeSeq atomic.Int64

func edgeID() string { return fmt.Sprintf("E98765432202612011200%011d", edgeSeq.Add(1)) }

// edgeValues are informational values (JSON texts) put in a payer's
// name / an infoPagador, and as extra members (key: value).
var edgeValues = []string{
	`"\ud800\udc00"`, `"\udc00\ud800"`, `"\ud800\ud800\udc00"`, `"\udbff\udfff"`, `"\ud800\u0000"`,
	"\"\xed\xa0\x80\"", "\"\xc0\xaf\"", "\"\xef\xbf\xbe\xef\xbf\xbf\"", `"\ufffe\uffff"`, `"\ufeff"`, "\"\xef\xbb\xbf\"",
	"\"\xe2\x82\"", "\"\xf4\x90\x80\x80\"", "\"\xf8\x88\x80\x80\x80\"", `"\\u0000"`, `"\u0000\u0000"`,
	`-0`, `-0.0e-0`, `1E+1000`, `1E+1001`, `1e-1000`, `1e-1001`, `1e-1000000`, `-1e400000`,
	`1e` + strings.Repeat("0", 990) + `1000`, `1e` + strings.Repeat("0", 995) + `1001`,
	strings.Repeat("9", 1000), strings.Repeat("9", 1001), `0.` + strings.Repeat("0", 996) + `1`, `0.` + strings.Repeat("0", 994) + `1e-1000`,
	`[` + strings.Repeat(`[`, 25) + `"\u0000"` + strings.Repeat(`]`, 25) + `]`,
	`{"\u0000":1}`, `{"\ud800":1}`, `{"\udc00\ud800":1}`, "{\"\xff\":1}", "{\"\xed\xa0\x80\":1}", `{"a\u0000":1,"a\ufffd":2}`,
	`1,"\ud800":1,"\udc00":2`, "1,\"\xfe\":1,\"\xff\":2",
}

func TestEdgeInputsAreStoredOrRefused4xx(t *testing.T) {
	if testing.Short() || !databaseAnswers() {
		t.Skip("needs PostgreSQL")
	}
	store := dbtest.New(t)
	ctx := context.Background()
	for i, v := range edgeValues {
		native := fmt.Sprintf(`{"end_to_end_id":%q,"account_id":"acc-1","amount_cents":100,"info":%s,"x%d":%s}`, edgeID(), v, i, v)
		apiPix := fmt.Sprintf(`{"pix":[{"endToEndId":%q,"chave":"k@example.com","valor":"1.00","horario":"2026-11-29T12:00:00Z","infoPagador":%s,"devolucoes":[{"id":"D1","x":%s}]},`+
			`{"endToEndId":%q,"chave":"k@example.com","valor":"1.00","horario":"2026-11-29T12:00:00Z"}]}`, edgeID(), v, v, edgeID())
		n, err := notification.DecodeNative([]byte(native))
		if err != nil {
			requireClientFault(t, "native decoder", []byte(native), err)
			t.Logf("native refused %q: %v", v[:min(len(v), 40)], err)
		} else {
			_, err := store.Receive(ctx, n)
			requireStoredOrClientFault(t, store, []byte(native), nil, err)
			if err != nil {
				t.Errorf("native %q: %v", v, err)
			}
		}
		ns, err := notification.DecodeAPIPix([]byte(apiPix))
		if err != nil {
			requireClientFault(t, "API Pix decoder", []byte(apiPix), err)
			t.Logf("api pix refused %q: %v", v[:min(len(v), 40)], err)
		} else {
			_, err := store.ReceiveBatch(ctx, ns)
			requireStoredOrClientFault(t, store, []byte(apiPix), ns, err)
		}
	}
}

// The biggest growth Storable makes: a 1 MiB API Pix body whose
// infoPagador is bytes that are not UTF-8 (each becomes U+FFFD, 3 bytes).
func TestStorableGrowthWithinTheBodyLimitIsStored(t *testing.T) {
	if testing.Short() || !databaseAnswers() {
		t.Skip("needs PostgreSQL")
	}
	store := dbtest.New(t)
	head := fmt.Sprintf(`{"pix":[{"endToEndId":%q,"chave":"k@example.com","valor":"1.00","horario":"2026-11-29T12:00:00Z","infoPagador":"`, edgeID())
	tail := `"}]}`
	body := head + strings.Repeat("\xff", notification.MaxAPIPixBodyBytes-len(head)-len(tail)) + tail
	ns, err := notification.DecodeAPIPix([]byte(body))
	if err != nil {
		t.Fatalf("decoder: %v", err)
	}
	if got := len(notification.Storable(ns[0].Payload)); got < 3*notification.MaxAPIPixBodyBytes-1000 {
		t.Fatalf("grew to %d only", got)
	}
	if _, err := store.ReceiveBatch(context.Background(), ns); err != nil {
		t.Fatalf("store: %v", err)
	}
}
