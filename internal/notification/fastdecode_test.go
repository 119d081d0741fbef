package notification

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/pixbank/pix/internal/pix"
)

// The decoders with their fast path must answer exactly what the decoders
// before it answered (oracle_test.go): the same refusals, with the same
// status, code and message, and for what they accept the same
// notifications, the stored payload byte for byte.

// sameNotification says how got differs from want; "" when it does not.
func sameNotification(got, want pix.Notification) string {
	switch {
	case got.EndToEndID != want.EndToEndID:
		return "end_to_end_id " + strconv.Quote(got.EndToEndID) + ", oracle " + strconv.Quote(want.EndToEndID)
	case got.AmountCents != want.AmountCents:
		return "amount " + strconv.FormatInt(got.AmountCents, 10) + ", oracle " + strconv.FormatInt(want.AmountCents, 10)
	case got.Source != want.Source || got.AccountID != want.AccountID || got.PixKey != want.PixKey ||
		got.TxID != want.TxID || got.PSP != want.PSP:
		return "source, account, key, txid or psp differ"
	case !bytes.Equal(got.Payload, want.Payload):
		return "payload " + strconv.Quote(string(got.Payload)) + ", oracle " + strconv.Quote(string(want.Payload))
	case !bytes.Equal(got.RefundNotice, want.RefundNotice) || (got.RefundNotice == nil) != (want.RefundNotice == nil):
		return "refund notice " + strconv.Quote(string(got.RefundNotice)) + ", oracle " + strconv.Quote(string(want.RefundNotice))
	}
	return ""
}

// sameOutcome fails t when err and oracleErr are not the same answer.
func sameOutcome(t *testing.T, what string, body []byte, err, oracleErr error) bool {
	t.Helper()
	switch {
	case (err == nil) != (oracleErr == nil):
		t.Fatalf("%s %q: error %v, oracle %v", what, body, err, oracleErr)
	case err != nil:
		// The same type and the same words: the HTTP layer maps each
		// type to its status and code (api.errorResponse).
		if reflect.TypeOf(err) != reflect.TypeOf(oracleErr) || err.Error() != oracleErr.Error() {
			t.Fatalf("%s %q: error %T %v, oracle %T %v", what, body, err, err, oracleErr, oracleErr)
		}
		return false
	}
	return true
}

// matchTheOracle runs both decoders over body against the oracle.
func matchTheOracle(t *testing.T, body []byte) {
	t.Helper()
	n, err := DecodeNative(body)
	on, oerr := oracleDecodeNotification(body)
	if sameOutcome(t, "native", body, err, oerr) {
		if diff := sameNotification(n, on); diff != "" {
			t.Fatalf("native %q: %s", body, diff)
		}
	}
	ns, err := DecodeAPIPix(body)
	ons, oerr := oracleDecodeAPIPix(body)
	if sameOutcome(t, "api pix", body, err, oerr) {
		if len(ns) != len(ons) {
			t.Fatalf("api pix %q: %d items, oracle %d", body, len(ns), len(ons))
		}
		for i := range ns {
			if diff := sameNotification(ns[i], ons[i]); diff != "" {
				t.Fatalf("api pix %q: pix[%d]: %s", body, i, diff)
			}
		}
	}
}

const (
	typicalNative = `{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc-000123","amount_cents":15000,"occurred_at":"2026-11-29T12:00:00Z"}`
	typicalAPIPix = `{"pix":[{"endToEndId":"E12345678202009091221kkkkkkkkkkk","txid":"c3e0e7a4e7f1469a9f782d3d4999343c","valor":"110.00","horario":"2020-09-09T20:15:00.358Z","infoPagador":"0123456789"}]}`
)

// decoderCases are bodies at the edges of the rules: each must be answered
// as the oracle answers it (and the typical ones are taken by the fast
// path, fastPathBodies).
var decoderCases = []string{
	typicalNative,
	typicalAPIPix,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc-0001","amount_cents":15000,"payer":{"name":"Maria","ispb":"12345678"},"occurred_at":"2026-11-29T12:00:00Z"}`,
	` {"end_to_end_id" : "E1234567820261129120000000000001" ,"account_id":"João é","amount_cents":1 , "payer":{"name":"Jos\u00e9 \"Zé\"","document":"123"}}` + "\r\n\t ",
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":100000000000}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":100000000001}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":0}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":-5}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1.0}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1e2}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":"100"}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":012}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1,"amount_cents":2}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1,"amount\u005fcents":2}`,
	`{"end\u005fto_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"a\u0000c","amount_cents":1}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"a\tc","amount_cents":1}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"a\u0007c","amount_cents":1}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"` + "a\xffc" + `","amount_cents":1}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"` + strings.Repeat("ã", 64) + `","amount_cents":1}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"` + strings.Repeat("ã", 65) + `","amount_cents":1}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"","amount_cents":1}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":null,"amount_cents":1}`,
	`{"end_to_end_id":"E123456782026112912000000000000","account_id":"acc","amount_cents":1}`,
	`{"end_to_end_id":"e1234567820261129120000000000001","account_id":"acc","amount_cents":1}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1,"payer":{"ispb":"1234567"}}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1,"payer":{"ispb":12345678}}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1,"payer":{"name":1}}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1,"payer":[]}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1,"payer":null,"occurred_at":null}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1,"payer":{"name":"a","name":"b"}}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1,"occurred_at":"2026-11-29 12:00:00"}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1,"occurred_at":"2026-11-29T12:00:00,5+03:00"}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1,"occurred_at":"2026-02-30T12:00:00Z"}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1,"extra":[1,-0.5e+3,true,false,null,{"a":{}},[[]],"\ud800"]}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1}` + "\v",
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1}{}`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1`,
	`{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1,}`,
	`{"a":` + strings.Repeat("[", 31) + strings.Repeat("]", 31) + `,"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1}`,
	`{"a":` + strings.Repeat("[", 32) + strings.Repeat("]", 32) + `,"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1}`,
	`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc","amount_cents":1}`,
	``, ` `, `null`, `[]`, `{}`, `"x"`, `{"pix":null}`, `{"pix":[]}`, `{"pix":{}}`, `{"pix":[null]}`, `{"pix":[1]}`,
	`{"pix":[{"endToEndId":"E1234567820261129120000000000001","chave":"maria@example.com","valor":"0110.05","horario":"2026-11-29T12:00:00-03:00"}]}`,
	`{"pix":[{"endToEndId":"E1234567820261129120000000000001","txid":"abc","valor":"1.00","valor":"2.00","horario":"2026-11-29T12:00:00Z"}]}`,
	`{"pix":[{"endToEndId":"E1234567820261129120000000000001","txid":"abc","valor":"1.00","horario":"2026-11-29T12:00:00Z","devolucoes":[]}, {"endToEndId":"E1234567820261129120000000000002","txid":"abd","valor":"0.01","horario":"2026-11-29T12:00:00Z","devolucoes":[ ]}]}`,
	`{"pix":[{"endToEndId":"E1234567820261129120000000000001","txid":"abc","valor":"1.00","horario":"2026-11-29T12:00:00Z","devolucoes":{"id":"D1","status":"DEVOLVIDO"}}],"pix":[]}`,
	`{"other":{"x":[1,2]},"pix":[{"endToEndId":"E1234567820261129120000000000001","txid":"abc","valor":"1000000000.00","horario":"2026-11-29T12:00:00Z"}]}`,
	`{"pix":[{"endToEndId":"E1234567820261129120000000000001","txid":"abc","valor":"1000000000.01","horario":"2026-11-29T12:00:00Z"}]}`,
	`{"pix":[{"endToEndId":"E1234567820261129120000000000001","txid":"abc","valor":"0.00","horario":"2026-11-29T12:00:00Z"}]}`,
	`{"pix":[{"endToEndId":"E1234567820261129120000000000001","txid":"abc","valor":"1.0","horario":"2026-11-29T12:00:00Z"}]}`,
	`{"pix":[{"endToEndId":"E1234567820261129120000000000001","txid":"abc","valor":"12345678901.00","horario":"2026-11-29T12:00:00Z"}]}`,
	`{"pix":[{"endToEndId":"E1234567820261129120000000000001","txid":"abc","valor":".10","horario":"2026-11-29T12:00:00Z"}]}`,
	`{"pix":[{"endToEndId":"E1234567820261129120000000000001","txid":"a-c","valor":"1.00","horario":"2026-11-29T12:00:00Z"}]}`,
	`{"pix":[{"endToEndId":"E1234567820261129120000000000001","txid":"` + strings.Repeat("a", 36) + `","valor":"1.00","horario":"2026-11-29T12:00:00Z"}]}`,
	`{"pix":[{"endToEndId":"E1234567820261129120000000000001","txid":"","chave":"","valor":"1.00","horario":"2026-11-29T12:00:00Z"}]}`,
	`{"pix":[{"endToEndId":"E1234567820261129120000000000001","txid":null,"chave":"k","valor":"1.00","horario":"2026-11-29T12:00:00Z"}]}`,
	`{"pix":[{"endToEndId":"E1234567820261129120000000000001","chave":"` + strings.Repeat("é", 77) + `","valor":"1.00","horario":"2026-11-29T12:00:00Z"}]}`,
	`{"pix":[{"endToEndId":"E1234567820261129120000000000001","chave":"` + strings.Repeat("é", 78) + `","valor":"1.00","horario":"2026-11-29T12:00:00Z"}]}`,
	`{"pix":[{"endToEndId":"E1234567820261129120000000000001","chave":"k","valor":"1.00"}]}`,
	`{"pix":[{"endToEndId":"E1234567820261129120000000000001","chave":"k","valor":1.00,"horario":"2026-11-29T12:00:00Z"}]}`,
}

func TestFastDecodersMatchTheOracle(t *testing.T) {
	for _, body := range decoderCases {
		matchTheOracle(t, []byte(body))
	}
	// The spec's own example (two PIX, devolucoes as an object) and a full
	// batch, and one over.
	spec, err := os.ReadFile("testdata/api_pix_spec_example.json")
	if err != nil {
		t.Fatal(err)
	}
	matchTheOracle(t, spec)
	for _, n := range []int{MaxAPIPixBatch, MaxAPIPixBatch + 1} {
		items := make([]string, n)
		for i := range items {
			items[i] = `{"endToEndId":"E1234567820261129120000` + strconv.Itoa(100000000+i) + `","txid":"t` + strconv.Itoa(i) + `","valor":"1.00","horario":"2026-11-29T12:00:00Z"}`
		}
		matchTheOracle(t, []byte(`{"pix":[`+strings.Join(items, ",")+`]}`))
	}
}

// The bodies PSPs send every day take the fast path: otherwise the
// decoders are right but as slow as before, and nothing else would say so.
func TestFastPathTakesTypicalWebhooks(t *testing.T) {
	for _, body := range []string{typicalNative, decoderCases[2], decoderCases[3]} {
		if _, ok := decodeNotificationFast([]byte(body)); !ok {
			t.Errorf("native %s: not taken by the fast path", body)
		}
	}
	spec, err := os.ReadFile("testdata/api_pix_spec_example.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{typicalAPIPix, string(spec)} {
		if _, ok := decodeAPIPixFast([]byte(body)); !ok {
			t.Errorf("api pix %s: not taken by the fast path", body)
		}
	}
}

// FuzzFastDecodersMatchTheOracle: whatever a peer sends, both decoders
// answer as the oracle does. Seeds: decoderCases, the corpora of
// FuzzDecodeNotification and FuzzDecodeAPIPix, and testdata/fuzz/ of its
// own.
func FuzzFastDecodersMatchTheOracle(f *testing.F) {
	for _, body := range decoderCases {
		f.Add([]byte(body))
	}
	for _, dir := range []string{"testdata/fuzz/FuzzDecodeNotification", "testdata/fuzz/FuzzDecodeAPIPix"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, file := range files {
			if body, ok := corpusEntry(f, file); ok {
				f.Add(body)
			}
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		matchTheOracle(t, body)
	})
}

// corpusEntry reads a corpus file of one []byte ("go test fuzz v1").
func corpusEntry(f *testing.F, file string) ([]byte, bool) {
	raw, err := os.ReadFile(file)
	if err != nil {
		f.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "[]byte(") || !strings.HasSuffix(lines[1], ")") {
		return nil, false
	}
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
	if err != nil {
		return nil, false
	}
	return []byte(s), true
}
