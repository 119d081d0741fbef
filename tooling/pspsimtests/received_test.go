package pspsimtests_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/tooling/pspsim"
)

// receivedAt is a PIX received numbered n at horario.
func receivedAt(n int, horario time.Time, extra string) string {
	return fmt.Sprintf(`{"endToEndId":"%s","valor":"10.00","chave":"maria@example.com","horario":"%s"%s}`,
		pixID(n), horario.Format(time.RFC3339Nano), extra)
}

func (e *env) receive(t *testing.T, body string) string {
	t.Helper()
	code, resp := do(t, http.MethodPost, e.url+"/sim/pix", body)
	require.Equal(t, http.StatusAccepted, code, "%s", resp)
	var r struct {
		Webhook string `json:"webhook"`
	}
	require.NoError(t, json.Unmarshal(resp, &r))
	return r.Webhook
}

type listed struct {
	Parametros struct {
		Inicio, Fim time.Time
		Txid        string
		Paginacao   struct {
			PaginaAtual, ItensPorPagina, QuantidadeDePaginas, QuantidadeTotalDeItens int
		}
	}
	Pix []struct {
		EndToEndID string            `json:"endToEndId"`
		Horario    time.Time         `json:"horario"`
		Devolucoes []json.RawMessage `json:"devolucoes"`
	}
}

func (l listed) ids() []string {
	out := []string{}
	for _, p := range l.Pix {
		out = append(out, p.EndToEndID)
	}
	return out
}

func (e *env) list(t *testing.T, query string) listed {
	t.Helper()
	code, body := do(t, http.MethodGet, e.url+"/pix?"+query, "")
	require.Equal(t, http.StatusOK, code, "%s", body)
	var l listed
	require.NoError(t, json.Unmarshal(body, &l))
	return l
}

const window = "inicio=2026-11-29T10:00:00Z&fim=2026-11-29T11:00:00Z"

func TestListPixReceivedByHorarioAndPage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

	// None: one page of nothing.
	l := e.list(t, window)
	require.Empty(t, l.Pix)
	require.Equal(t, 0, l.Parametros.Paginacao.PaginaAtual)
	require.Equal(t, 100, l.Parametros.Paginacao.ItensPorPagina, "the default")
	require.Equal(t, 1, l.Parametros.Paginacao.QuantidadeDePaginas, "at least one page")
	require.Equal(t, 0, l.Parametros.Paginacao.QuantidadeTotalDeItens)

	// Received out of order; the bounds are included; outside them, not
	// listed.
	e.receive(t, receivedAt(3, at.Add(30*time.Minute), ""))
	e.receive(t, receivedAt(1, at, ""))
	e.receive(t, receivedAt(4, at.Add(time.Hour), ""))
	e.receive(t, receivedAt(2, at.Add(30*time.Minute), `,"txid":"cob1"`))
	e.receive(t, receivedAt(5, at.Add(-time.Nanosecond), ""))
	e.receive(t, receivedAt(6, at.Add(time.Hour+time.Nanosecond), ""))
	l = e.list(t, window)
	require.Equal(t, []string{pixID(1), pixID(2), pixID(3), pixID(4)}, l.ids(), "by horario, then end_to_end_id")
	require.Equal(t, 4, l.Parametros.Paginacao.QuantidadeTotalDeItens)

	// Pages of 2: exactly two; of 3: the last one shorter; past the last:
	// empty, and still the counts.
	l = e.list(t, window+"&paginacao.itensPorPagina=2&paginacao.paginaAtual=1")
	require.Equal(t, []string{pixID(3), pixID(4)}, l.ids())
	require.Equal(t, 2, l.Parametros.Paginacao.QuantidadeDePaginas)
	l = e.list(t, window+"&paginacao.itensPorPagina=3&paginacao.paginaAtual=1")
	require.Equal(t, []string{pixID(4)}, l.ids())
	require.Equal(t, 2, l.Parametros.Paginacao.QuantidadeDePaginas)
	l = e.list(t, window+"&paginacao.itensPorPagina=3&paginacao.paginaAtual=2")
	require.Empty(t, l.Pix)
	require.Equal(t, 4, l.Parametros.Paginacao.QuantidadeTotalDeItens)
	l = e.list(t, window+"&paginacao.itensPorPagina=1000&paginacao.paginaAtual=2147483647")
	require.Empty(t, l.Pix)
	l = e.list(t, window+"&paginacao.itensPorPagina=1")
	require.Equal(t, []string{pixID(1)}, l.ids())
	require.Equal(t, 4, l.Parametros.Paginacao.QuantidadeDePaginas)

	// By txid.
	l = e.list(t, window+"&txid=cob1")
	require.Equal(t, []string{pixID(2)}, l.ids())
	require.Equal(t, "cob1", l.Parametros.Txid)

	// A PIX in the window at one instant.
	l = e.list(t, "inicio=2026-11-29T10:00:00Z&fim=2026-11-29T10:00:00Z")
	require.Equal(t, []string{pixID(1)}, l.ids())
	l = e.list(t, "inicio=2026-11-29T07:00:00-03:00&fim=2026-11-29T07:00:00-03:00")
	require.Equal(t, []string{pixID(1)}, l.ids(), "the same instant in another offset")
}

func TestListPixRefusesAQueryThatMakesNoSense(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for name, query := range map[string]string{
		"fim before inicio":       "inicio=2026-11-29T11:00:00Z&fim=2026-11-29T10:59:59Z",
		"no inicio":               "fim=2026-11-29T11:00:00Z",
		"no fim":                  "inicio=2026-11-29T11:00:00Z",
		"inicio not RFC 3339":     "inicio=2026-11-29&fim=2026-11-29T11:00:00Z",
		"a negative page":         window + "&paginacao.paginaAtual=-1",
		"a page not a number":     window + "&paginacao.paginaAtual=one",
		"no items a page":         window + "&paginacao.itensPorPagina=0",
		"more than 1000 a page":   window + "&paginacao.itensPorPagina=1001",
		"a txid the spec refuses": window + "&txid=a-b",
	} {
		t.Run(name, func(t *testing.T) {
			code, body := do(t, http.MethodGet, e.url+"/pix?"+query, "")
			require.Equal(t, http.StatusBadRequest, code, "%s", body)
			p := problem(t, body)
			require.Equal(t, pspsim.ProblemPixConsultaInvalida, p.name)
			require.Equal(t, http.StatusBadRequest, p.status)
		})
	}
	l := e.list(t, window+"&paginacao.itensPorPagina=1000")
	require.Equal(t, 1000, l.Parametros.Paginacao.ItensPorPagina, "the maximum itself is valid")
}

// A PIX is in GET /pix whether or not its webhook is sent, with its
// devoluções; GET /pix/{e2eid} reads one.
func TestAPixNeverNotifiedIsListed(t *testing.T) {
	t.Parallel()
	b := newBank(t)
	s := serve(t, pspsim.Options{WebhookURL: b.url, WebhookSecret: webhookSecret()})
	require.NoError(t, s.sim.SetWebhookBehavior("silenciosa@example.com", pspsim.WebhookBehavior{Mode: pspsim.WebhookModeNever}))
	at := time.Date(2026, 11, 29, 10, 30, 0, 0, time.UTC)
	silent := fmt.Sprintf(`{"endToEndId":"%s","valor":"10.00","chave":"silenciosa@example.com","horario":"%s"}`, pixID(1), at.Format(time.RFC3339))
	require.Equal(t, "never", s.receive(t, silent))
	b.none(t)

	r, err := s.client.RequestRefund(t.Context(), refundReq(1, "dev1", 400))
	require.NoError(t, err)
	s.clock.Advance(pspsim.DefaultSettleAfter)
	b.none(t)

	l := s.list(t, window)
	require.Equal(t, []string{pixID(1)}, l.ids())
	require.Len(t, l.Pix[0].Devolucoes, 1)
	require.JSONEq(t, `{"id":"dev1","rtrId":"`+r.RtrID+`","valor":"4.00","natureza":"ORIGINAL","status":"DEVOLVIDO",
		"horario":{"solicitacao":"2026-11-29T12:00:00Z","liquidacao":"2026-11-29T12:00:00.1Z"}}`, string(l.Pix[0].Devolucoes[0]))

	code, body := do(t, http.MethodGet, s.url+"/pix/"+pixID(1), "")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), `"valor":"10.00"`)
	require.Contains(t, string(body), r.RtrID)
	code, body = do(t, http.MethodGet, s.url+"/pix/"+pixID(2), "")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, pspsim.ProblemNaoEncontrado, problem(t, body).name)

	// Its times used up, a never behaviour delivers again; a PIX without
	// horario gets the simulator's now.
	require.NoError(t, s.sim.SetWebhookBehavior("silenciosa@example.com", pspsim.WebhookBehavior{Mode: pspsim.WebhookModeNever, Times: 1}))
	require.Equal(t, "never", s.receive(t, `{"endToEndId":"`+pixID(2)+`","valor":"1.00","chave":"silenciosa@example.com"}`))
	require.Equal(t, "queued", s.receive(t, `{"endToEndId":"`+pixID(3)+`","valor":"1.00","chave":"silenciosa@example.com"}`))
	d := b.next(t)
	require.JSONEq(t, `"`+pixID(3)+`"`, string(pixItem(t, d.body)["endToEndId"]))
	require.JSONEq(t, `"2026-11-29T12:00:00.1Z"`, string(pixItem(t, d.body)["horario"]))
	b.none(t)
	require.Equal(t, []string{pixID(2), pixID(3)}, s.list(t, "inicio=2026-11-29T12:00:00Z&fim=2026-11-29T12:00:01Z").ids())
	views := s.sim.WebhookBehaviors()
	require.Len(t, views, 1)
	require.Equal(t, 2, views[0].Received)
}

// Only a PIX with a txid is notified, with WebhooksTxidOnly.
func TestWebhooksOnlyForAPixWithATxid(t *testing.T) {
	t.Parallel()
	b := newBank(t)
	s := serve(t, pspsim.Options{WebhookURL: b.url, WebhookSecret: webhookSecret(), WebhooksTxidOnly: true})
	at := time.Date(2026, 11, 29, 10, 30, 0, 0, time.UTC)
	require.Equal(t, "never", s.receive(t, receivedAt(1, at, "")))
	require.Equal(t, "queued", s.receive(t, receivedAt(2, at, `,"txid":"cob1"`)))
	d := b.next(t)
	require.JSONEq(t, `"`+pixID(2)+`"`, string(pixItem(t, d.body)["endToEndId"]))
	b.none(t)
	require.Equal(t, []string{pixID(1), pixID(2)}, s.list(t, window).ids())
}

// Webhooks dropped for a while are given up, never delivered; what comes
// after is.
func TestWebhooksDroppedForAWhile(t *testing.T) {
	t.Parallel()
	b := newBank(t)
	s := serve(t, pspsim.Options{WebhookURL: b.url, WebhookSecret: webhookSecret()})
	code, body := do(t, http.MethodPut, s.url+"/sim/webhook-drop", `{"for":"2m"}`)
	require.Equal(t, http.StatusNoContent, code, "%s", body)
	at := time.Date(2026, 11, 29, 10, 30, 0, 0, time.UTC)
	require.Equal(t, "queued", s.receive(t, receivedAt(1, at, "")))
	b.none(t)
	s.clock.Advance(2 * time.Minute)
	b.none(t)
	require.Equal(t, "queued", s.receive(t, receivedAt(2, at, "")))
	d := b.next(t)
	require.JSONEq(t, `"`+pixID(2)+`"`, string(pixItem(t, d.body)["endToEndId"]))
	b.none(t)
	require.Equal(t, []string{pixID(1), pixID(2)}, s.list(t, window).ids(), "the dropped one is listed")

	code, _ = do(t, http.MethodPut, s.url+"/sim/webhook-drop", `{"for":"0s"}`)
	require.Equal(t, http.StatusBadRequest, code)
}

// With a ListPageSize in force, GET /pix lists at most so many PIX a page
// whatever the query asks, and its answer says the page size it used: the
// pages it counts, walked in turn (by our own client too), list every PIX
// once, in order. Every answer is checked against the document (checked).
func TestListPixPagesCutShort(t *testing.T) {
	t.Parallel()
	e := setup(t)
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for n := 5; n >= 1; n-- {
		e.receive(t, receivedAt(n, at.Add(time.Duration(n)*time.Minute), ""))
	}
	want := []string{pixID(1), pixID(2), pixID(3), pixID(4), pixID(5)}
	faults := func() string {
		code, body := do(t, http.MethodGet, e.url+"/sim/faults", "")
		require.Equal(t, http.StatusOK, code)
		var v struct {
			ListPageSize json.RawMessage `json:"list_page_size"`
		}
		require.NoError(t, json.Unmarshal(body, &v))
		return string(v.ListPageSize)
	}
	require.Equal(t, "null", faults())

	code, body := do(t, http.MethodPut, e.url+"/sim/list-page-size", `{"max":2}`)
	require.Equal(t, http.StatusNoContent, code, "%s", body)
	require.JSONEq(t, `{"max":2,"pages":0}`, faults())

	// Asked 1000 a page: pages of 2, as the answer says.
	var got []string
	for page := 0; page < 3; page++ {
		l := e.list(t, fmt.Sprintf("%s&paginacao.itensPorPagina=1000&paginacao.paginaAtual=%d", window, page))
		p := l.Parametros.Paginacao
		require.Equal(t, page, p.PaginaAtual)
		require.Equal(t, 2, p.ItensPorPagina, "the page size used, not the one asked")
		require.Equal(t, 3, p.QuantidadeDePaginas)
		require.Equal(t, 5, p.QuantidadeTotalDeItens)
		require.LessOrEqual(t, len(l.Pix), p.ItensPorPagina)
		if page < 2 {
			require.Len(t, l.Pix, 2, "only the last page may have fewer")
		}
		got = append(got, l.ids()...)
	}
	require.Equal(t, want, got, "every PIX once, by horario")
	require.Empty(t, e.list(t, window+"&paginacao.itensPorPagina=1000&paginacao.paginaAtual=3").Pix, "past the last page")

	// Asked fewer than the limit: what is asked.
	l := e.list(t, window+"&paginacao.itensPorPagina=1&paginacao.paginaAtual=4")
	require.Equal(t, []string{pixID(5)}, l.ids())
	require.Equal(t, 1, l.Parametros.Paginacao.ItensPorPagina)
	require.Equal(t, 5, l.Parametros.Paginacao.QuantidadeDePaginas)
	require.JSONEq(t, `{"max":2,"pages":5}`, faults(), "every GET /pix answered since it was set")

	// Our client, asking 1000 a page, walks the pages it is told of.
	start, end := at, at.Add(time.Hour)
	got = nil
	for page, pages := 0, 1; page < pages; page++ {
		r, err := e.client.ListReceived(t.Context(), psp.ReceivedQuery{Start: start, End: end, Page: page, PerPage: psp.MaxReceivedPerPage})
		require.NoError(t, err)
		pages = r.Pages
		for _, raw := range r.Items {
			var item struct {
				EndToEndID string `json:"endToEndId"`
			}
			require.NoError(t, json.Unmarshal(raw, &item))
			got = append(got, item.EndToEndID)
		}
	}
	require.Equal(t, want, got)

	// A PIX received again with another horario moves in the order; a
	// query of a txid is cut short as well.
	e.receive(t, receivedAt(1, at.Add(30*time.Minute), `,"txid":"cob1"`))
	e.receive(t, receivedAt(6, at.Add(40*time.Minute), `,"txid":"cob1"`))
	e.receive(t, receivedAt(7, at.Add(50*time.Minute), `,"txid":"cob1"`))
	l = e.list(t, window+"&paginacao.paginaAtual=2")
	require.Equal(t, []string{pixID(1), pixID(6)}, l.ids())
	require.Equal(t, 7, l.Parametros.Paginacao.QuantidadeTotalDeItens)
	l = e.list(t, window+"&txid=cob1&paginacao.paginaAtual=1")
	require.Equal(t, []string{pixID(7)}, l.ids())
	require.Equal(t, 2, l.Parametros.Paginacao.QuantidadeDePaginas)

	for _, bad := range []string{`{"max":0}`, `{"max":1001}`, `{"max":"2"}`, `{"max":2,"for":"1m"}`, `{}`} {
		code, body := do(t, http.MethodPut, e.url+"/sim/list-page-size", bad)
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", bad, body)
	}
	require.JSONEq(t, `{"max":2,"pages":10}`, faults(), "a refused PUT changes nothing")

	code, body = do(t, http.MethodDelete, e.url+"/sim/list-page-size", "")
	require.Equal(t, http.StatusNoContent, code, "%s", body)
	require.Equal(t, "null", faults())
	l = e.list(t, window+"&paginacao.itensPorPagina=1000")
	require.Len(t, l.Pix, 7)
	require.Equal(t, 1000, l.Parametros.Paginacao.ItensPorPagina)
	require.Equal(t, 1, l.Parametros.Paginacao.QuantidadeDePaginas)
}
