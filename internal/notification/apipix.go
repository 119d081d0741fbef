package notification

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pixbank/pix/internal/pix"
)

// Limits of the API Pix webhook (the Central Bank's format).
const (
	// MaxAPIPixBodyBytes is the largest API Pix body accepted.
	MaxAPIPixBodyBytes = 1 << 20
	// MaxAPIPixBatch is the most PIX one request may notify.
	MaxAPIPixBatch = 1000
	// MaxPixKeyLength is the spec's maxLength of chave.
	MaxPixKeyLength = 77
)

var (
	// valorPattern is the spec's \d{1,10}\.\d{2}: exactly two decimals, no
	// sign, no exponent.
	valorPattern = regexp.MustCompile(`^[0-9]{1,10}\.[0-9]{2}$`)
	// txidPattern is the spec's txid of a notified PIX: 1 to 35 letters or
	// digits.
	txidPattern = regexp.MustCompile(`^[A-Za-z0-9]{1,35}$`)
)

// BatchTooLargeError refuses an API Pix body with more than MaxAPIPixBatch
// PIX: the webhook routes answer it 413.
type BatchTooLargeError struct{ Items int }

func (e *BatchTooLargeError) Error() string {
	return fmt.Sprintf("pix holds %d items; at most %d per request", e.Items, MaxAPIPixBatch)
}

// DecodeAPIPix validates an API Pix webhook body, {"pix":[...]}, into one
// notification per item. Strict where money is decided (endToEndId, valor,
// and chave/txid, which find the account); tolerant with informational
// fields (infoPagador, componentesValor, devolucoes as an object or an array,
// members we don't know), which are kept in the stored payload.
//
// A body the fast path takes is decoded in one pass; any other is
// decided, and refused with its reason, by decodeAPIPixSlow.
func DecodeAPIPix(body []byte) ([]pix.Notification, error) {
	if ns, ok := decodeAPIPixFast(body); ok {
		return ns, nil
	}
	return decodeAPIPixSlow(body)
}

// decodeAPIPixFast is DecodeAPIPix in one pass over the body (jsonscan.go):
// the items of the top object's "pix" are decoded as they are checked. ok
// is false for a body it does not take, which decodeAPIPixSlow then
// judges.
func decodeAPIPixFast(body []byte) (ns []pix.Notification, ok bool) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, false
	}
	var top jsonMembers // the keys seen, to find one sent twice
	i = skipSpace(body, i+1)
	for {
		if i >= len(body) || body[i] != '"' || top.n == fastMaxMembers {
			return nil, false
		}
		keyEnd, plain, ok := scanString(body, i)
		if !ok || !plain {
			return nil, false
		}
		key := body[i+1 : keyEnd-1]
		for _, m := range top.m[:top.n] {
			if string(m.key) == string(key) {
				return nil, false
			}
		}
		i = skipSpace(body, keyEnd)
		if i >= len(body) || body[i] != ':' {
			return nil, false
		}
		start := skipSpace(body, i+1)
		if string(key) == "pix" {
			i, ns, ok = scanAPIPixItems(body, start)
		} else {
			i, ok = scanValue(body, start, 1)
		}
		if !ok {
			return nil, false
		}
		top.m[top.n] = jsonMember{key, body[start:i]}
		top.n++
		i = skipSpace(body, i)
		if i >= len(body) {
			return nil, false
		}
		if body[i] == '}' {
			break
		}
		if body[i] != ',' {
			return nil, false
		}
		i = skipSpace(body, i+1)
	}
	if skipSpace(body, i+1) != len(body) || len(ns) == 0 {
		return nil, false
	}
	return ns, true
}

// scanAPIPixItems checks the array of PIX objects at body[i] (depth 2) and
// decodes each item; ok is false unless every item holds every rule and
// there are at most MaxAPIPixBatch.
func scanAPIPixItems(body []byte, i int) (end int, ns []pix.Notification, ok bool) {
	if i >= len(body) || body[i] != '[' {
		return 0, nil, false
	}
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == ']' {
		return i + 1, nil, true
	}
	for {
		if i >= len(body) || body[i] != '{' || len(ns) == MaxAPIPixBatch {
			return 0, nil, false
		}
		var m jsonMembers
		start := i
		if i, ok = scanObject(body, i, 3, &m); !ok {
			return 0, nil, false
		}
		n, ok := decodeAPIPixItemFast(&m, body[start:i])
		if !ok {
			return 0, nil, false
		}
		ns = append(ns, n)
		i = skipSpace(body, i)
		if i >= len(body) {
			return 0, nil, false
		}
		switch body[i] {
		case ',':
			i = skipSpace(body, i+1)
		case ']':
			return i + 1, ns, true
		default:
			return 0, nil, false
		}
	}
}

// decodeAPIPixItemFast is decodeAPIPixItem for an item (its members m, its
// bytes raw) that holds every rule.
func decodeAPIPixItemFast(m *jsonMembers, raw []byte) (n pix.Notification, ok bool) {
	n = pix.Notification{Source: pix.SourceAPIPix, Payload: raw}
	if n.EndToEndID, ok = fastString(m.get("endToEndId")); !ok || !pix.ValidEndToEndID(n.EndToEndID) {
		return pix.Notification{}, false
	}
	valor, ok := fastString(m.get("valor"))
	if !ok {
		return pix.Notification{}, false
	}
	if n.AmountCents, ok = fastValorCents(valor); !ok {
		return pix.Notification{}, false
	}
	horario, ok := fastString(m.get("horario"))
	if !ok {
		return pix.Notification{}, false
	}
	if _, err := time.Parse(time.RFC3339, horario); err != nil {
		return pix.Notification{}, false
	}
	if v := m.get("chave"); !isNull(v) {
		if n.PixKey, ok = fastString(v); !ok {
			return pix.Notification{}, false
		}
		if l := utf8.RuneCountInString(n.PixKey); l < 1 || l > MaxPixKeyLength || HasControlOrInvalid(n.PixKey) {
			return pix.Notification{}, false
		}
	}
	if v := m.get("txid"); !isNull(v) {
		if n.TxID, ok = fastString(v); !ok || !validTxID(n.TxID) {
			return pix.Notification{}, false
		}
	}
	if n.PixKey == "" && n.TxID == "" {
		return pix.Notification{}, false
	}
	if d := m.get("devolucoes"); !isNull(d) && string(d) != "[]" {
		n.RefundNotice = d
	}
	return n, true
}

// fastValorCents is valorCents for a valor it accepts: \d{1,10}\.\d{2}
// from 0.01 to the most a PIX may carry.
func fastValorCents(valor string) (int64, bool) {
	dot := len(valor) - 3
	if dot < 1 || dot > 10 || valor[dot] != '.' {
		return 0, false
	}
	return digitsCents(valor, dot)
}

// validTxID is txidPattern without the regular expression: 1 to 35
// letters or digits.
func validTxID(s string) bool {
	if len(s) < 1 || len(s) > 35 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// decodeAPIPixSlow is the authority on an API Pix body: it decides what
// the fast path left, and says why it refuses.
func decodeAPIPixSlow(body []byte) ([]pix.Notification, error) {
	if err := CheckJSON(body); err != nil {
		return nil, err
	}
	top, err := DecodeObject(body, "body")
	if err != nil {
		return nil, err
	}
	if !Present(top["pix"]) {
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
		if ns[i], err = decodeAPIPixItem(item, "pix["+strconv.Itoa(i)+"]"); err != nil {
			return nil, err
		}
	}
	return ns, nil
}

// DecodeAPIPixItem validates one PIX of the API Pix format on its own (an
// item of GET /pix, which the catch-up stores), with every check a webhook's
// body gets: CheckJSON first (a member sent twice, "valor" twice, is two
// amounts to two readers), then the item's rules.
func DecodeAPIPixItem(raw json.RawMessage, path string) (pix.Notification, error) {
	if err := CheckJSON(raw); err != nil {
		return pix.Notification{}, err
	}
	return decodeAPIPixItem(raw, path)
}

// decodeAPIPixItem is DecodeAPIPixItem for an item of a body CheckJSON
// checked already.
func decodeAPIPixItem(raw json.RawMessage, path string) (pix.Notification, error) {
	m, err := DecodeObject(raw, path)
	if err != nil {
		return pix.Notification{}, err
	}
	n := pix.Notification{Source: pix.SourceAPIPix, Payload: raw}
	field := func(name string) string { return path + "." + name }
	if n.EndToEndID, err = RequiredString(m["endToEndId"], field("endToEndId")); err != nil {
		return pix.Notification{}, err
	}
	if !pix.ValidEndToEndID(n.EndToEndID) {
		return pix.Notification{}, pix.Invalid(field("endToEndId"), "must be 32 letters or digits starting with E")
	}
	valor, err := RequiredString(m["valor"], field("valor"))
	if err != nil {
		return pix.Notification{}, err
	}
	if n.AmountCents, err = valorCents(valor); err != nil {
		return pix.Notification{}, pix.Invalid(field("valor"), "%v", err)
	}
	if _, err := Timestamp(m["horario"], field("horario")); err != nil {
		return pix.Notification{}, err
	}
	if Present(m["chave"]) {
		if n.PixKey, err = RequiredString(m["chave"], field("chave")); err != nil {
			return pix.Notification{}, err
		}
		if l := utf8.RuneCountInString(n.PixKey); l < 1 || l > MaxPixKeyLength || HasControlOrInvalid(n.PixKey) {
			return pix.Notification{}, pix.Invalid(field("chave"), "must be 1 to %d characters, none of them a control character or an invalid byte", MaxPixKeyLength)
		}
	}
	if Present(m["txid"]) {
		if n.TxID, err = RequiredString(m["txid"], field("txid")); err != nil {
			return pix.Notification{}, err
		}
		if !txidPattern.MatchString(n.TxID) {
			return pix.Notification{}, pix.Invalid(field("txid"), "must be 1 to 35 letters or digits")
		}
	}
	if n.PixKey == "" && n.TxID == "" {
		return pix.Notification{}, pix.Invalid(path, "must carry chave or txid: the receiving account is found through one of them")
	}
	if d := m["devolucoes"]; Present(d) && strings.TrimSpace(string(d)) != "[]" {
		n.RefundNotice = d
	}
	return n, nil
}

// valorCents converts the spec's decimal string to centavos exactly, without
// floating point.
func valorCents(valor string) (int64, error) {
	if !valorPattern.MatchString(valor) {
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
