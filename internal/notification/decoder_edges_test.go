package notification

import (
	"strings"
	"testing"
)

// More bodies at the edges, each answered as the oracle answers it.
func TestFastDecodersMatchTheOracleAtTheEdges(t *testing.T) {
	const e = `"E1234567820261129120000000000001"`
	head := `"end_to_end_id":` + e + `,"account_id":"acc","amount_cents":1`
	item := `"endToEndId":` + e + `,"txid":"abc","valor":"1.00","horario":"2026-11-29T12:00:00Z"`
	cases := []string{
		"\xef\xbb\xbf{" + head + "}",
		"{" + head + "}\x00",
		"{" + head + "}\f",
		"{" + head + "}\u00a0",
		"{" + head + "}\u0085",
		"\f{" + head + "}",
		`{"end_to_end_id":"\u0045\u00311234567820261129120000000000001","account_id":"acc","amount_cents":1}`,
		`{"end_to_end_id":"\u00451234567820261129120000000000001","account_id":"acc","amount_cents":1}`,
		`{"end_to_end_id":"E123456782026112912000000000000\u0031","account_id":"acc","amount_cents":1}`,
		`{"end_to_end_id":"E123456782026112912000000000000` + "\xc0\xb1" + `","account_id":"acc","amount_cents":1}`,
		`{"end_to_end_id":"E12345678202611291200000000000` + "\u0661" + `","account_id":"acc","amount_cents":1}`,
		"{" + head + `,"x` + "\xff" + `":1,"x` + "\xfe" + `":2}`,
		"{" + head + `,"x` + "\xff" + `":1,"x\ufffd":2}`,
		"{" + head + `,"x":{"a\u0000":1}}`,
		"{" + head + `,"x":{"a":1,"a":2}}`,
		"{" + head + `,"x":["\u0000"]}`,
		"{" + head + `,"x":"` + "\u2028\u2029\x7f" + `"}`,
		`{"end_to_end_id":` + e + `,"account_id":"acc","amount_cents":-0}`,
		`{"end_to_end_id":` + e + `,"account_id":"acc","amount_cents":0001}`,
		`{"end_to_end_id":` + e + `,"account_id":"acc","amount_cents":1E2}`,
		`{"end_to_end_id":` + e + `,"account_id":"acc","amount_cents":9223372036854775808}`,
		`{"end_to_end_id":` + e + `,"account_id":"acc","amount_cents":099999999999}`,
		`{"end_to_end_id":` + e + `,"account_id":"acc","amount_cents":999999999999}`,
		`{"end_to_end_id":` + e + `,"account_id":"acc","amount_cents":100000000000 }`,
		`{"end_to_end_id":` + e + `,"account_id":"acc","amount_cents" : 100 , "Amount_cents":5, "AMOUNT_CENTS":7}`,
		`{"end_to_end_id":` + e + `,"account_id":"a\u0085c","amount_cents":1}`,
		`{"end_to_end_id":` + e + `,"account_id":"a\u200bc","amount_cents":1}`,
		`{"end_to_end_id":` + e + `,"account_id":"\ud800","amount_cents":1}`,
		`{"end_to_end_id":` + e + `,"account_id":"acc","amount_cents":1,"payer":{"ispb":"１２３４５６７８"}}`,
		`{"end_to_end_id":` + e + `,"account_id":"acc","amount_cents":1,"payer":{"ispb":"1234567\u0038"}}`,
		`{"end_to_end_id":` + e + `,"account_id":"acc","amount_cents":1,"payer":{"ispb":"12345678","ispb":"x"}}`,
		`{"end_to_end_id":` + e + `,"account_id":"acc","amount_cents":1,"payer":{"name":"a","document":null,"ispb":null,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14}}`,
		`{"end_to_end_id":` + e + `,"account_id":"acc","amount_cents":1,"payer":"x"}`,
		`{"end_to_end_id":` + e + `,"account_id":"acc","amount_cents":1,"payer":{}}`,
		`{"end_to_end_id":` + e + `,"account_id":"acc","amount_cents":1,"payer":{"x":` + strings.Repeat("[", 30) + strings.Repeat("]", 30) + `}}`,
		`{"end_to_end_id":` + e + `,"account_id":"acc","amount_cents":1,"payer":{"x":` + strings.Repeat("[", 31) + strings.Repeat("]", 31) + `}}`,
		`{"end_to_end_id":` + e + `,"account_id":"acc","amount_cents":1,"occurred_at":"2026-11-29T12:00:00\u005a"}`,
		`{"end_to_end_id":` + e + `,"account_id":"acc","amount_cents":1,"occurred_at":"2026-11-29T24:00:00Z"}`,
		`{"end_to_end_id":` + e + `,"account_id":"acc","amount_cents":1,"occurred_at":"2026-11-29t12:00:00z"}`,
		`{"\u0070ix":[{` + item + `}]}`,
		`{"pix":[{` + item + `}],"\u0070ix":[]}`,
		`{"pix":[{` + item + `}],"pix ":[]}`,
		`{"Pix":[{` + item + `}]}`,
		`{"pix":[{` + item + `},]}`,
		`{"pix":[{` + item + `}] }` + "\x00",
		`{"pix":[{` + item + `,"EndToEndId":"E9999999920261129120000000000001"}]}`,
		`{"pix":[{` + item + `,"endToEndId":"E9999999920261129120000000000001"}]}`,
		`{"pix":[{` + item + `,"valor":"2.00"}]}`,
		`{"pix":[{"endToEndId":` + e + `,"txid":"abc","valor":"1\u002e00","horario":"2026-11-29T12:00:00Z"}]}`,
		`{"pix":[{"endToEndId":` + e + `,"txid":"abc","valor":"+1.00","horario":"2026-11-29T12:00:00Z"}]}`,
		`{"pix":[{"endToEndId":` + e + `,"txid":"abc","valor":"1.00 ","horario":"2026-11-29T12:00:00Z"}]}`,
		`{"pix":[{"endToEndId":` + e + `,"txid":"abc","valor":"9999999999.99","horario":"2026-11-29T12:00:00Z"}]}`,
		`{"pix":[{"endToEndId":` + e + `,"txid":"abc","valor":"0000000000.01","horario":"2026-11-29T12:00:00Z"}]}`,
		`{"pix":[{"endToEndId":` + e + `,"txid":"abc","valor":"1.001","horario":"2026-11-29T12:00:00Z"}]}`,
		`{"pix":[{"endToEndId":` + e + `,"txid":"abc","valor":"1,00","horario":"2026-11-29T12:00:00Z"}]}`,
		`{"pix":[{"endToEndId":` + e + `,"txid":"abc","valor":"١.00","horario":"2026-11-29T12:00:00Z"}]}`,
		`{"pix":[{"endToEndId":` + e + `,"txid":"ab\u0063","valor":"1.00","horario":"2026-11-29T12:00:00Z"}]}`,
		`{"pix":[{"endToEndId":` + e + `,"txid":"abc` + "\x7f" + `","valor":"1.00","horario":"2026-11-29T12:00:00Z"}]}`,
		`{"pix":[{"endToEndId":` + e + `,"chave":"k\u2028","valor":"1.00","horario":"2026-11-29T12:00:00Z"}]}`,
		`{"pix":[{"endToEndId":` + e + `,"chave":"k` + "\x7f" + `","valor":"1.00","horario":"2026-11-29T12:00:00Z"}]}`,
		`{"pix":[{` + item + `,"devolucoes":[{"id":"D1","id":"D2"}]}]}`,
		`{"pix":[{` + item + `,"devolucoes":null}]}`,
		`{"pix":[{` + item + `,"devolucoes":[]}]}`,
		`{"pix":[{` + item + `,"devolucoes":[` + "\n" + `]}]}`,
		`{"pix":[{` + item + `,"devolucoes":"[]"}]}`,
		`{"pix":[{` + item + `,"devolucoes":{}}]}`,
		`{"pix":[{` + item + `,"devolucoes":[{"id":"D\u0000"}]}]}`,
		`{"pix":[{` + item + `}, {` + item + `}]}`,
		`{"pix":[{` + item + `}],"x":` + strings.Repeat("[", 31) + strings.Repeat("]", 31) + `}`,
		`{"pix":[{` + item + `}],"x":` + strings.Repeat("[", 30) + strings.Repeat("]", 30) + `}`,
		`{"pix":[{` + item + `,"x":` + strings.Repeat("[", 29) + strings.Repeat("]", 29) + `}]}`,
		`{"pix":[{` + item + `,"x":` + strings.Repeat("[", 30) + strings.Repeat("]", 30) + `}]}`,
		`{"pix":[{` + item + `}]` + strings.Repeat(`,"k":1`, 1) + `}`,
	}
	for _, body := range cases {
		matchTheOracle(t, []byte(body))
	}
}
