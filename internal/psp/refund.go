package psp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// RefundRequest is a devolução the bank asks its PSP to make.
type RefundRequest struct {
	EndToEndID  string // the PIX received that is refunded
	ID          string // ours: the idempotency key of the devolução at the PSP
	AmountCents int64
	Nature      string // natureza: "ORIGINAL" when empty
	Description string // descricao, optional, at most MaxRefundDescription characters
}

// NatureOriginal is the natureza of a devolução of (part of) the PIX
// itself, the default.
const NatureOriginal = "ORIGINAL"

// Limits of a devolução in the BCB API Pix.
const (
	// MaxRefundDescription is the most characters a descricao may have.
	MaxRefundDescription = 140
	// MaxValorCents is the largest amount the valor format \d{1,10}\.\d{2}
	// can carry: 9999999999.99.
	MaxValorCents int64 = 999_999_999_999
)

// RefundStatus is where a devolução stands at the PSP.
type RefundStatus string

// The statuses of a devolução (the API Pix's own words).
const (
	RefundInProcessing RefundStatus = "EM_PROCESSAMENTO"
	RefundReturned     RefundStatus = "DEVOLVIDO"
	RefundNotDone      RefundStatus = "NAO_REALIZADO" // definitive, with a motivo
)

// Valid reports whether s is one of the statuses above.
func (s RefundStatus) Valid() bool {
	switch s {
	case RefundInProcessing, RefundReturned, RefundNotDone:
		return true
	}
	return false
}

// Final reports whether s can no longer change: DEVOLVIDO or NAO_REALIZADO.
func (s RefundStatus) Final() bool { return s == RefundReturned || s == RefundNotDone }

// RefundResult is the PSP's record of one devolução.
type RefundResult struct {
	EndToEndID  string // the PIX refunded (from the request path, not the body)
	ID          string
	RtrID       string // the devolução's own end-to-end id: "D" and 31 letters or digits
	AmountCents int64
	Status      RefundStatus
	Reason      string    // motivo, when NAO_REALIZADO
	RequestedAt time.Time // horario.solicitacao
	SettledAt   time.Time // horario.liquidacao, zero when absent
}

// Matches reports whether the PSP's record is the devolução r asked for
// (same id, same amount): a record under our id with another amount must
// never be taken for ours.
func (res RefundResult) Matches(r RefundRequest) bool {
	return res.EndToEndID == r.EndToEndID && res.ID == r.ID && res.AmountCents == r.AmountCents
}

// RefundClient is what the refund saga needs of a PSP. Its answers are
// classified by Classify: nil is a RefundResult (also a NAO_REALIZADO one:
// a devolução not made is a result, not an error); AnswerRefundRefused (400
// PixDevolucaoInvalida to the PUT) is the PSP refusing the devolução, or
// our id already used, by our own earlier PUT too, so its record decides;
// ErrNotFound (RefundStatus) means the PSP has no devolução under that id;
// a *RequestError or a refused *TokenError is our request refused (a 409
// CodeRefundIDReused is not ErrAlreadySubmitted); ErrTransient means the
// outcome is unknown: ask again with the same id.
type RefundClient interface {
	// RequestRefund asks the PSP to make r. Asking again with the same ID
	// and amount is safe: the PSP answers with the devolução it holds.
	RequestRefund(ctx context.Context, r RefundRequest) (RefundResult, error)
	// RefundStatus asks where the devolução id of the PIX endToEndID stands.
	RefundStatus(ctx context.Context, endToEndID, id string) (RefundResult, error)
}

var _ RefundClient = (*HTTPClient)(nil)

var (
	// refundIDPattern is the API Pix's id of a devolução.
	refundIDPattern = regexp.MustCompile(`^[a-zA-Z0-9]{1,35}$`)
	// rtrIDPattern is the end-to-end id of a devolução: "D", the ISPB, the
	// time and a sequence, 32 characters in all.
	rtrIDPattern = regexp.MustCompile(`^D[a-zA-Z0-9]{31}$`)
	// pixEndToEndIDPattern is the end-to-end id of the PIX refunded.
	pixEndToEndIDPattern = regexp.MustCompile(`^E[a-zA-Z0-9]{31}$`)
	// valorPattern is the API Pix's \d{1,10}\.\d{2}, ASCII digits only:
	// exactly two decimals, no sign, no exponent.
	valorPattern = regexp.MustCompile(`^[0-9]{1,10}\.[0-9]{2}$`)
)

// FormatValor writes centavos as the API Pix's valor, "10.00", with integer
// arithmetic only. cents should be from 1 to MaxValorCents; a negative
// amount keeps its sign, which no PSP accepts.
func FormatValor(cents int64) string {
	sign := ""
	u := uint64(cents)
	if cents < 0 {
		sign, u = "-", -u // two's complement: right for math.MinInt64 too
	}
	return fmt.Sprintf("%s%d.%02d", sign, u/100, u%100)
}

// ParseValor reads an API Pix valor ("10.00") as centavos, exactly and
// without floating point: \d{1,10}\.\d{2}, at least 0.01.
func ParseValor(s string) (int64, error) {
	if !valorPattern.MatchString(s) {
		return 0, fmt.Errorf("valor %q: want digits, a point and two decimals, such as \"10.00\"", s)
	}
	reais, cents, _ := strings.Cut(s, ".")
	// At most 10 digits: no overflow, and the pattern leaves no other error.
	r, err := strconv.ParseInt(reais, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("valor %q: %w", s, err)
	}
	c, err := strconv.ParseInt(cents, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("valor %q: %w", s, err)
	}
	v := r*100 + c
	if v < 1 {
		return 0, fmt.Errorf("valor %q: must be at least 0.01", s)
	}
	return v, nil
}

// refundRequestJSON is the body of PUT /pix/{e2eid}/devolucao/{id}.
type refundRequestJSON struct {
	Valor     string `json:"valor"`
	Natureza  string `json:"natureza"`
	Descricao string `json:"descricao,omitempty"`
}

// refundJSON is a devolução as the PSP answers it.
type refundJSON struct {
	ID      string       `json:"id"`
	RtrID   string       `json:"rtrId"`
	Valor   string       `json:"valor"`
	Status  RefundStatus `json:"status"`
	Motivo  string       `json:"motivo"`
	Horario struct {
		Solicitacao *time.Time `json:"solicitacao"`
		Liquidacao  *time.Time `json:"liquidacao"`
	} `json:"horario"`
}

// RequestRefund asks the PSP to make r: PUT /pix/{e2eid}/devolucao/{id}
// with valor, natureza and descricao. 201 (created) and 200 (the devolução
// the PSP already holds under r.ID) carry the RefundResult, NAO_REALIZADO
// included; every other answer is classified by statusError and Classify:
// a 400 with the problem PixDevolucaoInvalida is AnswerRefundRefused (the
// PSP's record decides what it means), NaoEncontrado (404) and AcessoNegado
// (403) are refused requests, ServicoIndisponivel (503) is transient; a 409
// is a *RequestError (CodeRefundIDReused when the id is another
// devolução's). A request that the PSP could only refuse (a malformed
// end_to_end_id or id, an amount out of range, a descricao too long) is not
// sent: it is a *RequestError with StatusCode 0.
func (c *HTTPClient) RequestRefund(ctx context.Context, r RefundRequest) (RefundResult, error) {
	if msg := checkRefundRequest(r); msg != "" {
		return RefundResult{}, fmt.Errorf("psp refund %s/%s: %w", r.EndToEndID, r.ID,
			&RequestError{Code: "invalid_request", Message: msg})
	}
	nature := r.Nature
	if nature == "" {
		nature = NatureOriginal
	}
	body, err := json.Marshal(refundRequestJSON{Valor: FormatValor(r.AmountCents), Natureza: nature, Descricao: r.Description})
	if err != nil {
		return RefundResult{}, fmt.Errorf("psp refund %s/%s: encode: %w", r.EndToEndID, r.ID, err)
	}
	code, resp, err := c.call(ctx, http.MethodPut, refundRoute, refundPath(r.EndToEndID, r.ID), body)
	if err != nil {
		return RefundResult{}, fmt.Errorf("psp refund %s/%s: %w", r.EndToEndID, r.ID, err)
	}
	switch code {
	case http.StatusOK, http.StatusCreated:
		res, err := decodeRefund(resp, r.EndToEndID, r.ID)
		if err != nil {
			return RefundResult{}, fmt.Errorf("psp refund %s/%s: %w", r.EndToEndID, r.ID, unintelligible(fmt.Errorf("http %d: %w", code, err)))
		}
		return res, nil
	}
	return RefundResult{}, fmt.Errorf("psp refund %s/%s: %w", r.EndToEndID, r.ID, statusError(code, resp))
}

// RefundStatus asks where a devolução stands: GET
// /pix/{e2eid}/devolucao/{id}; ErrNotFound (wrapped) when the PSP answers
// that it has none under that id: a 404 with the spec's problem
// NaoEncontrado or PixDevolucaoNaoEncontrada. A 404 without it (a
// gateway's, a wrong PSP_URL path's) says nothing about the devolução: it
// is a refused request, never "no record", since no record may lead to a
// reversal.
func (c *HTTPClient) RefundStatus(ctx context.Context, endToEndID, id string) (RefundResult, error) {
	if msg := checkRefundIDs(endToEndID, id); msg != "" {
		// Not sent: a malformed id in the path could reach another route,
		// whose 404 would pass for "no such devolução".
		return RefundResult{}, fmt.Errorf("psp refund status %s/%s: %w", endToEndID, id,
			&RequestError{Code: "invalid_request", Message: msg})
	}
	code, resp, err := c.call(ctx, http.MethodGet, refundRoute, refundPath(endToEndID, id), nil)
	if err != nil {
		return RefundResult{}, fmt.Errorf("psp refund status %s/%s: %w", endToEndID, id, err)
	}
	switch code {
	case http.StatusOK:
		res, err := decodeRefund(resp, endToEndID, id)
		if err != nil {
			return RefundResult{}, fmt.Errorf("psp refund status %s/%s: %w", endToEndID, id, unintelligible(fmt.Errorf("http %d: %w", code, err)))
		}
		return res, nil
	}
	if notFound(code, resp, ProblemNaoEncontrado, ProblemPixDevolucaoNaoEncontrada) {
		return RefundResult{}, fmt.Errorf("psp refund status %s/%s: no such devolução: %w", endToEndID, id, ErrNotFound)
	}
	return RefundResult{}, fmt.Errorf("psp refund status %s/%s: %w", endToEndID, id, statusError(code, resp))
}

// refundRoute is refundPath's template.
const refundRoute = "/pix/{e2eid}/devolucao/{id}"

func refundPath(endToEndID, id string) string {
	return "/pix/" + url.PathEscape(endToEndID) + "/devolucao/" + url.PathEscape(id)
}

// checkRefundIDs reports what is wrong with the ids of a devolução, "" if
// nothing.
func checkRefundIDs(endToEndID, id string) string {
	switch {
	case !pixEndToEndIDPattern.MatchString(endToEndID):
		return "end_to_end_id must be 32 characters: E followed by 31 letters or digits"
	case !refundIDPattern.MatchString(id):
		return "the devolução id must be 1 to 35 letters or digits"
	}
	return ""
}

// checkRefundRequest reports what is wrong with r, "" if nothing.
func checkRefundRequest(r RefundRequest) string {
	if msg := checkRefundIDs(r.EndToEndID, r.ID); msg != "" {
		return msg
	}
	switch {
	case r.AmountCents < 1 || r.AmountCents > MaxValorCents:
		return fmt.Sprintf("amount must be from 0.01 to %s", FormatValor(MaxValorCents))
	case utf8.RuneCountInString(r.Description) > MaxRefundDescription:
		return fmt.Sprintf("descricao must be at most %d characters", MaxRefundDescription)
	}
	return ""
}

// decodeRefund parses a devolução and checks that it is the one asked for,
// with a known status and a valor in centavos: an answer about another
// devolução, or one that can't be read exactly, must never be taken for
// ours.
func decodeRefund(body []byte, endToEndID, id string) (RefundResult, error) {
	var w refundJSON
	if err := json.Unmarshal(body, &w); err != nil {
		return RefundResult{}, fmt.Errorf("decode devolução: %w", err)
	}
	switch {
	case w.ID != id:
		return RefundResult{}, fmt.Errorf("devolução is id %q", w.ID)
	case !w.Status.Valid():
		return RefundResult{}, fmt.Errorf("devolução has unknown status %q", w.Status)
	case !rtrIDPattern.MatchString(w.RtrID):
		return RefundResult{}, fmt.Errorf("devolução has rtrId %q, want D followed by 31 letters or digits", w.RtrID)
	case w.Horario.Solicitacao == nil:
		return RefundResult{}, errors.New("devolução has no horario.solicitacao")
	}
	amount, err := ParseValor(w.Valor)
	if err != nil {
		return RefundResult{}, err
	}
	res := RefundResult{
		EndToEndID:  endToEndID,
		ID:          w.ID,
		RtrID:       w.RtrID,
		AmountCents: amount,
		Status:      w.Status,
		RequestedAt: *w.Horario.Solicitacao,
	}
	if w.Horario.Liquidacao != nil {
		res.SettledAt = *w.Horario.Liquidacao
	}
	if w.Status == RefundNotDone {
		res.Reason = w.Motivo
	}
	return res, nil
}
