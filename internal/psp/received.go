package psp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ReceivedQuery asks the PSP for one page of the PIX it received (GET
// /pix?inicio=&fim=&paginacao.paginaAtual=&paginacao.itensPorPagina=):
// those created from Start to End, both included (the spec's inicio and
// fim).
type ReceivedQuery struct {
	Start, End time.Time
	// Page is paginacao.paginaAtual, from 0.
	Page int
	// PerPage is paginacao.itensPorPagina, 1 to MaxReceivedPerPage.
	PerPage int
}

// MaxReceivedPerPage is the spec's maximum of paginacao.itensPorPagina.
const MaxReceivedPerPage = 1000

// ReceivedPage is one page of GET /pix.
type ReceivedPage struct {
	// Items are the page's PIX, each the spec's Pix object as the PSP sent
	// it, raw: the catch-up decodes each exactly as a webhook's item
	// (notification.DecodeAPIPixItem).
	Items []json.RawMessage
	// Page is parametros.paginacao.paginaAtual; Pages is
	// quantidadeDePaginas (at least 1: an empty window answered with 0
	// pages is one empty page); TotalItems is quantidadeTotalDeItens.
	Page, Pages, TotalItems int
}

// ReceivedLister is what the PSP catch-up needs of a PSP: the PSP's own
// record of the PIX it received.
type ReceivedLister interface {
	ListReceived(ctx context.Context, q ReceivedQuery) (ReceivedPage, error)
}

// Webhook is the PSP's registration of our webhook for one key (GET
// /webhook/{chave}: the spec's WebhookCompleto).
type Webhook struct {
	WebhookURL string    `json:"webhookUrl"`
	CreatedAt  time.Time `json:"criacao"`
	// Chave and CNPJ, when the PSP says them (the spec's schema names the
	// receiver's cnpj, its example the chave).
	Chave string `json:"chave,omitempty"`
	CNPJ  string `json:"cnpj,omitempty"`
}

// WebhookRegistrar registers, reads and removes our webhook at the PSP
// (PUT, GET and DELETE /webhook/{chave}).
type WebhookRegistrar interface {
	SetWebhook(ctx context.Context, chave, webhookURL string) error
	GetWebhook(ctx context.Context, chave string) (Webhook, error)
	DeleteWebhook(ctx context.Context, chave string) error
}

var (
	_ ReceivedLister   = (*HTTPClient)(nil)
	_ WebhookRegistrar = (*HTTPClient)(nil)
)

// maxListBytes bounds an answer of GET /pix: a page of up to
// MaxReceivedPerPage PIX, each with its devoluções, is far larger than any
// other answer, and one cut would be retried for ever.
const maxListBytes = 32 << 20

// MaxChaveLength is the spec's longest DICT key in a /webhook/{chave} path.
const MaxChaveLength = 77

// receivedJSON is the spec's PixConsultados.
type receivedJSON struct {
	Parametros struct {
		Inicio    *time.Time `json:"inicio"`
		Fim       *time.Time `json:"fim"`
		Paginacao *struct {
			PaginaAtual            *int `json:"paginaAtual"`
			ItensPorPagina         *int `json:"itensPorPagina"`
			QuantidadeDePaginas    *int `json:"quantidadeDePaginas"`
			QuantidadeTotalDeItens *int `json:"quantidadeTotalDeItens"`
		} `json:"paginacao"`
	} `json:"parametros"`
	Pix []json.RawMessage `json:"pix"`
}

// ListReceived asks the PSP for one page of the PIX it received: GET
// /pix?inicio=&fim=&paginacao.paginaAtual=&paginacao.itensPorPagina=, the
// times in RFC 3339 (UTC, to the nanosecond). The answer must be the page
// asked for; its items are kept raw. A query the PSP could only refuse
// (PerPage out of 1 to MaxReceivedPerPage, a negative page, End before
// Start) is not sent: a *RequestError with StatusCode 0. Errors are
// classified by Classify: 403 AcessoNegado (pix.read missing) and 400
// PixConsultaInvalida are refused requests, 503 and no answer transient.
func (c *HTTPClient) ListReceived(ctx context.Context, q ReceivedQuery) (ReceivedPage, error) {
	what := fmt.Sprintf("psp list received %s..%s page %d", q.Start.UTC().Format(time.RFC3339), q.End.UTC().Format(time.RFC3339), q.Page)
	var msg string
	switch {
	case q.PerPage < 1 || q.PerPage > MaxReceivedPerPage:
		msg = fmt.Sprintf("itensPorPagina must be from 1 to %d", MaxReceivedPerPage)
	case q.Page < 0:
		msg = "paginaAtual must be 0 or more"
	case q.Start.IsZero() || q.End.IsZero():
		msg = "inicio and fim are required"
	case q.End.Before(q.Start):
		msg = "fim must not be before inicio"
	}
	if msg != "" {
		return ReceivedPage{}, fmt.Errorf("%s: %w", what, &RequestError{Code: "invalid_request", Message: msg})
	}
	v := url.Values{}
	v.Set("inicio", q.Start.UTC().Format(time.RFC3339Nano))
	v.Set("fim", q.End.UTC().Format(time.RFC3339Nano))
	v.Set("paginacao.paginaAtual", strconv.Itoa(q.Page))
	v.Set("paginacao.itensPorPagina", strconv.Itoa(q.PerPage))
	code, resp, err := c.callLimit(ctx, http.MethodGet, "/pix", "/pix?"+v.Encode(), nil, maxListBytes)
	if err != nil {
		return ReceivedPage{}, fmt.Errorf("%s: %w", what, err)
	}
	if code != http.StatusOK {
		return ReceivedPage{}, fmt.Errorf("%s: %w", what, statusError(code, resp))
	}
	page, err := decodeReceived(resp, q)
	if err != nil {
		return ReceivedPage{}, fmt.Errorf("%s: %w", what, unintelligible(err))
	}
	return page, nil
}

// decodeReceived parses PixConsultados and checks that it is the page
// asked for, of the window asked for: a page that says another number, more
// items than asked, or a window (parametros.inicio and fim) that does not
// cover the one asked (a caching proxy's answer to another query) must
// never be taken for it: the catch-up would skip or repeat a page, or
// advance its covered window over PIX it never listed. The times may be
// cut to the second (fim then ends up to a second before ours: the
// catch-up's overlap lists that second again). An item that is not an
// object is kept, raw: the catch-up counts and skips it as it does any item
// its decoder refuses, and the other PIX of the page and window go on.
// quantidadeDePaginas 0 with no item (what some PSPs answer for an empty
// window, although the spec says at least 1) is one empty page.
func decodeReceived(body []byte, q ReceivedQuery) (ReceivedPage, error) {
	var w receivedJSON
	if err := json.Unmarshal(body, &w); err != nil {
		return ReceivedPage{}, fmt.Errorf("decode PixConsultados: %w", err)
	}
	par, p := w.Parametros, w.Parametros.Paginacao
	switch {
	case par.Inicio == nil || par.Fim == nil:
		return ReceivedPage{}, errors.New("PixConsultados without parametros.inicio and fim")
	case par.Inicio.After(q.Start) || par.Fim.Before(q.End.Truncate(time.Second)):
		return ReceivedPage{}, fmt.Errorf("PixConsultados is about %s..%s, not %s..%s", par.Inicio.UTC().Format(time.RFC3339Nano),
			par.Fim.UTC().Format(time.RFC3339Nano), q.Start.UTC().Format(time.RFC3339Nano), q.End.UTC().Format(time.RFC3339Nano))
	case p == nil || p.PaginaAtual == nil || p.QuantidadeDePaginas == nil || p.QuantidadeTotalDeItens == nil:
		return ReceivedPage{}, errors.New("PixConsultados without parametros.paginacao.{paginaAtual,quantidadeDePaginas,quantidadeTotalDeItens}")
	case *p.PaginaAtual != q.Page:
		return ReceivedPage{}, fmt.Errorf("PixConsultados is page %d, not %d", *p.PaginaAtual, q.Page)
	case *p.QuantidadeDePaginas == 0 && *p.QuantidadeTotalDeItens == 0 && len(w.Pix) == 0:
		return ReceivedPage{Page: *p.PaginaAtual, Pages: 1}, nil
	case *p.QuantidadeDePaginas < 1 || *p.QuantidadeTotalDeItens < 0:
		return ReceivedPage{}, fmt.Errorf("PixConsultados has %d pages and %d items", *p.QuantidadeDePaginas, *p.QuantidadeTotalDeItens)
	case len(w.Pix) > q.PerPage:
		return ReceivedPage{}, fmt.Errorf("PixConsultados has %d items on a page of %d", len(w.Pix), q.PerPage)
	}
	return ReceivedPage{Items: w.Pix, Page: *p.PaginaAtual, Pages: *p.QuantidadeDePaginas, TotalItems: *p.QuantidadeTotalDeItens}, nil
}

// webhookRoute is webhookPath's template.
const webhookRoute = "/webhook/{chave}"

func webhookPath(chave string) string { return "/webhook/" + url.PathEscape(chave) }

// checkChave reports what is wrong with a key in a webhook's path, "" if
// nothing.
func checkChave(chave string) string {
	if chave == "" || utf8.RuneCountInString(chave) > MaxChaveLength || !utf8.ValidString(chave) ||
		strings.ContainsFunc(chave, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Sprintf("chave must be a DICT key of 1 to %d printable characters", MaxChaveLength)
	}
	return ""
}

// SetWebhook registers webhookURL as our webhook for chave: PUT
// /webhook/{chave} {"webhookUrl": ...}, answered 200 (any 2xx is taken).
// The PSP then posts to webhookURL + "/pix". A key or URL the PSP could
// only refuse (not an absolute https URL) is not sent: a *RequestError
// with StatusCode 0; 400 WebhookOperacaoInvalida is a refused request.
func (c *HTTPClient) SetWebhook(ctx context.Context, chave, webhookURL string) error {
	what := "psp set webhook " + chave
	msg := checkChave(chave)
	if u, err := url.Parse(webhookURL); msg == "" && (err != nil || !httpURL(u) || !private(u)) {
		msg = "webhookUrl must be an absolute https URL (http only to a loopback address)"
	}
	if msg != "" {
		return fmt.Errorf("%s: %w", what, &RequestError{Code: "invalid_request", Message: msg})
	}
	body, err := json.Marshal(struct {
		WebhookURL string `json:"webhookUrl"`
	}{webhookURL})
	if err != nil {
		return fmt.Errorf("%s: encode: %w", what, err)
	}
	code, resp, err := c.call(ctx, http.MethodPut, webhookRoute, webhookPath(chave), body)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if code/100 != 2 {
		return fmt.Errorf("%s: %w", what, statusError(code, resp))
	}
	return nil
}

// GetWebhook reads our webhook for chave: GET /webhook/{chave}, answered
// 200 with WebhookCompleto; ErrNotFound (wrapped) on a 404 NaoEncontrado or
// WebhookNaoEncontrado.
func (c *HTTPClient) GetWebhook(ctx context.Context, chave string) (Webhook, error) {
	what := "psp get webhook " + chave
	if msg := checkChave(chave); msg != "" {
		return Webhook{}, fmt.Errorf("%s: %w", what, &RequestError{Code: "invalid_request", Message: msg})
	}
	code, resp, err := c.call(ctx, http.MethodGet, webhookRoute, webhookPath(chave), nil)
	if err != nil {
		return Webhook{}, fmt.Errorf("%s: %w", what, err)
	}
	switch {
	case code == http.StatusOK:
		var w Webhook
		if err := json.Unmarshal(resp, &w); err != nil || w.WebhookURL == "" {
			return Webhook{}, fmt.Errorf("%s: %w", what, unintelligible(fmt.Errorf("not a WebhookCompleto (err %v)", err)))
		}
		return w, nil
	case notFound(code, resp, ProblemNaoEncontrado, ProblemWebhookNaoEncontrado):
		return Webhook{}, fmt.Errorf("%s: no webhook for this key: %w", what, ErrNotFound)
	}
	return Webhook{}, fmt.Errorf("%s: %w", what, statusError(code, resp))
}

// DeleteWebhook removes our webhook for chave: DELETE /webhook/{chave},
// answered 204 (any 2xx is taken); ErrNotFound (wrapped) on a 404
// NaoEncontrado or WebhookNaoEncontrado.
func (c *HTTPClient) DeleteWebhook(ctx context.Context, chave string) error {
	what := "psp delete webhook " + chave
	if msg := checkChave(chave); msg != "" {
		return fmt.Errorf("%s: %w", what, &RequestError{Code: "invalid_request", Message: msg})
	}
	code, resp, err := c.call(ctx, http.MethodDelete, webhookRoute, webhookPath(chave), nil)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", what, err)
	case code/100 == 2:
		return nil
	case notFound(code, resp, ProblemNaoEncontrado, ProblemWebhookNaoEncontrado):
		return fmt.Errorf("%s: no webhook for this key: %w", what, ErrNotFound)
	}
	return fmt.Errorf("%s: %w", what, statusError(code, resp))
}
