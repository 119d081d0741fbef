package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pixbank/pix/internal/pix"
)

// Limits of the API Pix webhook (the Central Bank's format).
const (
	// MaxAPIPixBodyBytes is the largest API Pix body accepted.
	MaxAPIPixBodyBytes = 1 << 20
	// MaxAPIPixBatch is the most PIX one request may notify.
	MaxAPIPixBatch = 1000
	// maxPixKeyLength is the spec's maxLength of chave.
	maxPixKeyLength = 77
)

var (
	// valorPattern is the spec's \d{1,10}\.\d{2}: exactly two decimals, no
	// sign, no exponent.
	valorPattern = regexp.MustCompile(`^[0-9]{1,10}\.[0-9]{2}$`)
	// txidPattern is the spec's txid of a notified PIX: 1 to 35 letters or
	// digits.
	txidPattern = regexp.MustCompile(`^[A-Za-z0-9]{1,35}$`)
)

// decodeAPIPix validates an API Pix webhook body, {"pix":[...]}, into one
// notification per item. Strict where money is decided (endToEndId, valor,
// and chave/txid, which find the account); tolerant with informational
// fields (infoPagador, componentesValor, devolucoes as an object or an array,
// members we don't know), which are kept in the stored payload.
func decodeAPIPix(body []byte) ([]pix.Notification, error) {
	if err := checkJSON(body); err != nil {
		return nil, err
	}
	top, err := decodeObject(body, "body")
	if err != nil {
		return nil, err
	}
	if !present(top["pix"]) {
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
		return nil, &requestError{http.StatusRequestEntityTooLarge, CodeBatchTooLarge,
			fmt.Sprintf("pix holds %d items; at most %d per request", len(items), MaxAPIPixBatch)}
	}
	ns := make([]pix.Notification, len(items))
	for i, item := range items {
		if ns[i], err = decodeAPIPixItem(item, "pix["+strconv.Itoa(i)+"]"); err != nil {
			return nil, err
		}
	}
	return ns, nil
}

func decodeAPIPixItem(raw json.RawMessage, path string) (pix.Notification, error) {
	m, err := decodeObject(raw, path)
	if err != nil {
		return pix.Notification{}, err
	}
	n := pix.Notification{Source: pix.SourceAPIPix, Payload: raw}
	field := func(name string) string { return path + "." + name }
	if n.EndToEndID, err = requiredString(m["endToEndId"], field("endToEndId")); err != nil {
		return pix.Notification{}, err
	}
	if !pix.ValidEndToEndID(n.EndToEndID) {
		return pix.Notification{}, pix.Invalid(field("endToEndId"), "must be 32 letters or digits starting with E")
	}
	valor, err := requiredString(m["valor"], field("valor"))
	if err != nil {
		return pix.Notification{}, err
	}
	if n.AmountCents, err = valorCents(valor); err != nil {
		return pix.Notification{}, pix.Invalid(field("valor"), "%v", err)
	}
	if _, err := timestamp(m["horario"], field("horario")); err != nil {
		return pix.Notification{}, err
	}
	if present(m["chave"]) {
		if n.PixKey, err = requiredString(m["chave"], field("chave")); err != nil {
			return pix.Notification{}, err
		}
		if l := utf8.RuneCountInString(n.PixKey); l < 1 || l > maxPixKeyLength || hasControl(n.PixKey) {
			return pix.Notification{}, pix.Invalid(field("chave"), "must be 1 to %d characters, none of them a control character", maxPixKeyLength)
		}
	}
	if present(m["txid"]) {
		if n.TxID, err = requiredString(m["txid"], field("txid")); err != nil {
			return pix.Notification{}, err
		}
		if !txidPattern.MatchString(n.TxID) {
			return pix.Notification{}, pix.Invalid(field("txid"), "must be 1 to 35 letters or digits")
		}
	}
	if n.PixKey == "" && n.TxID == "" {
		return pix.Notification{}, pix.Invalid(path, "must carry chave or txid: the receiving account is found through one of them")
	}
	if d := m["devolucoes"]; present(d) && strings.TrimSpace(string(d)) != "[]" {
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
