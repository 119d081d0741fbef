package notification

// The webhook decoders as they were before the fast path (jsoncheck.go,
// webhook.go and apipix.go at 3897fbc), kept verbatim but for their names:
// the oracle of FuzzFastDecodersMatchTheOracle. Don't change it to follow
// the decoders; a rule that changes on purpose changes here too, by hand.
//
// Changed by hand since: the NUL character is no longer refused (issue 27:
// informational content never decides whether a PIX is stored; the store
// keeps a copy jsonb can hold, and a money field refuses it by its own
// rules).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pixbank/pix/internal/pix"
)

var (
	oracleIntegerPattern = regexp.MustCompile(`^-?[0-9]+$`)
	oracleValorPattern   = regexp.MustCompile(`^[0-9]{1,10}\.[0-9]{2}$`)
	oracleTxidPattern    = regexp.MustCompile(`^[A-Za-z0-9]{1,35}$`)
	oracleEndToEndID     = regexp.MustCompile(`^E[A-Za-z0-9]{31}$`)
	oracleISPB           = regexp.MustCompile(`^[0-9]{8}$`)
)

func oracleValidEndToEndID(id string) bool { return oracleEndToEndID.MatchString(id) }
func oracleValidISPB(s string) bool        { return oracleISPB.MatchString(s) }

// oracleDecodeNotification validates a native webhook body. Members are read by
// exact key; members we don't know are tolerated and kept in the stored
// payload.
func oracleDecodeNotification(body []byte) (pix.Notification, error) {
	if err := oracleCheckJSON(body); err != nil {
		return pix.Notification{}, err
	}
	m, err := oracleDecodeObject(body, "body")
	if err != nil {
		return pix.Notification{}, err
	}
	n := pix.Notification{Source: pix.SourceNative, Payload: body}
	if n.EndToEndID, err = oracleRequiredString(m["end_to_end_id"], "end_to_end_id"); err != nil {
		return pix.Notification{}, err
	}
	if !oracleValidEndToEndID(n.EndToEndID) {
		return pix.Notification{}, pix.Invalid("end_to_end_id", "must be 32 letters or digits starting with E")
	}
	if n.AccountID, err = oracleRequiredString(m["account_id"], "account_id"); err != nil {
		return pix.Notification{}, err
	}
	if l := utf8.RuneCountInString(n.AccountID); l < 1 || l > pix.MaxAccountIDLength || oracleHasControlOrInvalid(n.AccountID) {
		return pix.Notification{}, pix.Invalid("account_id", "must be 1 to %d characters, none of them a control character or an invalid byte", pix.MaxAccountIDLength)
	}
	if n.AmountCents, err = oracleAmountCents(m["amount_cents"]); err != nil {
		return pix.Notification{}, err
	}
	if err := oracleCheckPayer(m["payer"]); err != nil {
		return pix.Notification{}, err
	}
	if oraclePresent(m["occurred_at"]) {
		if _, err := oracleTimestamp(m["occurred_at"], "occurred_at"); err != nil {
			return pix.Notification{}, err
		}
	}
	return n, nil
}

// oraclePresent reports whether a raw field was sent with a non-null value.
func oraclePresent(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

func oracleRequiredString(raw json.RawMessage, field string) (string, error) {
	if !oraclePresent(raw) {
		return "", pix.Invalid(field, "is required")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", pix.Invalid(field, "must be a string")
	}
	return s, nil
}

func oracleHasControlOrInvalid(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) || r == '\uFFFD' {
			return true
		}
	}
	return false
}

// oracleTimestamp reads an RFC 3339 oracleTimestamp string.
func oracleTimestamp(raw json.RawMessage, field string) (time.Time, error) {
	s, err := oracleRequiredString(raw, field)
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, pix.Invalid(field, "must be an RFC 3339 timestamp such as 2026-11-29T12:00:00.000Z")
	}
	return t, nil
}

// oracleAmountCents accepts only a JSON integer: no fraction, no exponent, no string.
func oracleAmountCents(raw json.RawMessage) (int64, error) {
	if !oraclePresent(raw) {
		return 0, pix.Invalid("amount_cents", "is required")
	}
	if !oracleIntegerPattern.Match(raw) {
		return 0, pix.Invalid("amount_cents", "must be an integer number of centavos")
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || v < 1 || v > pix.MaxAmountCents {
		return 0, pix.Invalid("amount_cents", "must be from 1 to %d", pix.MaxAmountCents)
	}
	return v, nil
}

func oracleCheckPayer(raw json.RawMessage) error {
	if !oraclePresent(raw) {
		return nil
	}
	m, err := oracleDecodeObject(raw, "payer")
	if err != nil {
		return err
	}
	for _, field := range []string{"name", "document", "ispb"} {
		if oraclePresent(m[field]) {
			if _, err := oracleRequiredString(m[field], "payer."+field); err != nil {
				return err
			}
		}
	}
	if oraclePresent(m["ispb"]) {
		if s, _ := oracleRequiredString(m["ispb"], "payer.ispb"); !oracleValidISPB(s) {
			return pix.Invalid("payer.ispb", "must be 8 digits")
		}
	}
	return nil
}

// oracleCheckJSON refuses, with the offending field's path, what encoding/json
// would let through silently and what we must not store:
//   - anything but exactly one JSON value;
//   - a key repeated in one object: parsers disagree on which copy wins, so
//     {"valor":"1.00","valor":"1000.00"} could mean two amounts to two readers;
//   - nesting deeper than maxJSONDepth.
func oracleCheckJSON(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type frame struct {
		object  bool
		keys    map[string]struct{}
		key     string // the current member's key (objects)
		index   int    // the current element's index (arrays)
		wantKey bool
	}
	var stack []*frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			if f.object {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			} else {
				b.WriteString("[" + strconv.Itoa(f.index) + "]")
			}
		}
		if b.Len() == 0 {
			return "body"
		}
		return b.String()
	}
	// value is called after each complete value (scalar or closed container)
	// to move its parent to the next member or element.
	value := func() {
		if len(stack) == 0 {
			return
		}
		top := stack[len(stack)-1]
		if top.object {
			top.wantKey = true
		} else {
			top.index++
		}
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if len(stack) > 0 {
				return pix.Invalid("body", "is not valid JSON: unexpected end")
			}
			return pix.Invalid("body", "must be a JSON value")
		}
		if err != nil {
			return pix.Invalid("body", "is not valid JSON: %v", err)
		}
		if len(stack) > 0 && stack[len(stack)-1].object && stack[len(stack)-1].wantKey {
			top := stack[len(stack)-1]
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				value()
				if len(stack) == 0 {
					break
				}
				continue
			}
			key, _ := tok.(string) // the decoder only yields a string here
			top.key = key
			if _, dup := top.keys[key]; dup {
				return pix.Invalid(path(), "appears twice in the same object")
			}
			top.keys[key] = struct{}{}
			top.wantKey = false
			continue
		}
		if t, ok := tok.(json.Delim); ok {
			switch t {
			case '{', '[':
				if len(stack) == maxJSONDepth {
					return pix.Invalid(path(), "is nested deeper than %d levels", maxJSONDepth)
				}
				stack = append(stack, &frame{object: t == '{', keys: map[string]struct{}{}, wantKey: t == '{'})
				continue
			case ']':
				stack = stack[:len(stack)-1]
			}
		}
		value()
		if len(stack) == 0 {
			break
		}
	}
	if len(bytes.TrimSpace(body[dec.InputOffset():])) > 0 {
		return pix.Invalid("body", "must hold exactly one JSON value, with nothing after it")
	}
	return nil
}

// oracleDecodeObject decodes one JSON object (checked by oracleCheckJSON) into its
// members by exact key: encoding/json's struct decoding would also match
// "VALOR" or "Valor" to a field named valor.
func oracleDecodeObject(raw json.RawMessage, field string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, pix.Invalid(field, "must be a JSON object")
	}
	return m, nil
}

// oracleDecodeAPIPix validates an API Pix webhook body, {"pix":[...]}, into one
// notification per item. Strict where money is decided (endToEndId, valor,
// and chave/txid, which find the account); tolerant with informational
// fields (infoPagador, componentesValor, devolucoes as an object or an array,
// members we don't know), which are kept in the stored payload.
func oracleDecodeAPIPix(body []byte) ([]pix.Notification, error) {
	if err := oracleCheckJSON(body); err != nil {
		return nil, err
	}
	top, err := oracleDecodeObject(body, "body")
	if err != nil {
		return nil, err
	}
	if !oraclePresent(top["pix"]) {
		return nil, pix.Invalid("pix", "is required")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(top["pix"], &items); err != nil {
		return nil, pix.Invalid("pix", "must be an array of PIX objects")
	}
	if len(items) == 0 {
		return nil, pix.Invalid("pix", "must hold at least one PIX")
	}
	if len(items) > MaxAPIPixBatch {
		return nil, &BatchTooLargeError{Items: len(items)}
	}
	ns := make([]pix.Notification, len(items))
	for i, item := range items {
		if ns[i], err = oracleDecodeAPIPixItem(item, "pix["+strconv.Itoa(i)+"]"); err != nil {
			return nil, err
		}
	}
	return ns, nil
}

func oracleDecodeAPIPixItem(raw json.RawMessage, path string) (pix.Notification, error) {
	m, err := oracleDecodeObject(raw, path)
	if err != nil {
		return pix.Notification{}, err
	}
	n := pix.Notification{Source: pix.SourceAPIPix, Payload: raw}
	field := func(name string) string { return path + "." + name }
	if n.EndToEndID, err = oracleRequiredString(m["endToEndId"], field("endToEndId")); err != nil {
		return pix.Notification{}, err
	}
	if !oracleValidEndToEndID(n.EndToEndID) {
		return pix.Notification{}, pix.Invalid(field("endToEndId"), "must be 32 letters or digits starting with E")
	}
	valor, err := oracleRequiredString(m["valor"], field("valor"))
	if err != nil {
		return pix.Notification{}, err
	}
	if n.AmountCents, err = oracleValorCents(valor); err != nil {
		return pix.Notification{}, pix.Invalid(field("valor"), "%v", err)
	}
	if _, err := oracleTimestamp(m["horario"], field("horario")); err != nil {
		return pix.Notification{}, err
	}
	if oraclePresent(m["chave"]) {
		if n.PixKey, err = oracleRequiredString(m["chave"], field("chave")); err != nil {
			return pix.Notification{}, err
		}
		if l := utf8.RuneCountInString(n.PixKey); l < 1 || l > MaxPixKeyLength || oracleHasControlOrInvalid(n.PixKey) {
			return pix.Notification{}, pix.Invalid(field("chave"), "must be 1 to %d characters, none of them a control character or an invalid byte", MaxPixKeyLength)
		}
	}
	if oraclePresent(m["txid"]) {
		if n.TxID, err = oracleRequiredString(m["txid"], field("txid")); err != nil {
			return pix.Notification{}, err
		}
		if !oracleTxidPattern.MatchString(n.TxID) {
			return pix.Notification{}, pix.Invalid(field("txid"), "must be 1 to 35 letters or digits")
		}
	}
	if n.PixKey == "" && n.TxID == "" {
		return pix.Notification{}, pix.Invalid(path, "must carry chave or txid: the receiving account is found through one of them")
	}
	if d := m["devolucoes"]; oraclePresent(d) && strings.TrimSpace(string(d)) != "[]" {
		n.RefundNotice = d
	}
	return n, nil
}

// oracleValorCents converts the spec's decimal string to centavos exactly, without
// floating point.
func oracleValorCents(valor string) (int64, error) {
	if !oracleValorPattern.MatchString(valor) {
		return 0, fmt.Errorf("must be a decimal string with exactly two decimals, such as \"110.00\"")
	}
	reais, cents, _ := strings.Cut(valor, ".")
	r, err := strconv.ParseInt(reais, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("must be a decimal string with exactly two decimals, such as \"110.00\"")
	}
	c, _ := strconv.ParseInt(cents, 10, 64)
	v := r*100 + c
	if v < 1 || v > pix.MaxAmountCents {
		return 0, fmt.Errorf("must be from 0.01 to %d.%02d", pix.MaxAmountCents/100, pix.MaxAmountCents%100)
	}
	return v, nil
}
