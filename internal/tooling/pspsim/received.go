package pspsim

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The API Pix's pagination of GET /pix.
const (
	DefaultItemsPerPage = 100
	MaxItemsPerPage     = 1000
)

// pixPage is GET /pix's answer (PixConsultados).
type pixPage struct {
	Parametros pixQueryJSON                 `json:"parametros"`
	Pix        []map[string]json.RawMessage `json:"pix"`
}

type pixQueryJSON struct {
	Inicio    time.Time     `json:"inicio"`
	Fim       time.Time     `json:"fim"`
	Txid      string        `json:"txid,omitempty"`
	Paginacao paginacaoJSON `json:"paginacao"`
}

type paginacaoJSON struct {
	PaginaAtual            int `json:"paginaAtual"`
	ItensPorPagina         int `json:"itensPorPagina"`
	QuantidadeDePaginas    int `json:"quantidadeDePaginas"`
	QuantidadeTotalDeItens int `json:"quantidadeTotalDeItens"`
}

// pixQuery is a valid GET /pix.
type pixQuery struct {
	inicio, fim   time.Time
	txid          string
	page, perPage int
}

// parsePixQuery reads GET /pix's query, msg "" if it is valid, else what
// is wrong (a PixConsultaInvalida).
func parsePixQuery(q url.Values) (pq pixQuery, msg string) {
	var err error
	if pq.inicio, err = time.Parse(time.RFC3339, q.Get("inicio")); err != nil {
		return pq, "inicio is required, an RFC 3339 time"
	}
	if pq.fim, err = time.Parse(time.RFC3339, q.Get("fim")); err != nil {
		return pq, "fim is required, an RFC 3339 time"
	}
	if pq.fim.Before(pq.inicio) {
		return pq, "fim is before inicio"
	}
	pq.txid = q.Get("txid")
	if _, given := q["txid"]; given && !txidPattern.MatchString(pq.txid) {
		return pq, "txid must be 1 to 35 letters or digits"
	}
	pq.page, pq.perPage = 0, DefaultItemsPerPage
	if v, given := q["paginacao.paginaAtual"]; given {
		if pq.page, err = strconv.Atoi(v[0]); err != nil || pq.page < 0 {
			return pq, "paginacao.paginaAtual must be an integer, 0 or more"
		}
	}
	if v, given := q["paginacao.itensPorPagina"]; given {
		if pq.perPage, err = strconv.Atoi(v[0]); err != nil || pq.perPage < 1 || pq.perPage > MaxItemsPerPage {
			return pq, "paginacao.itensPorPagina must be an integer from 1 to 1000"
		}
	}
	return pq, ""
}

// handleListPix is GET /pix: the PIX received (POST /sim/pix), notified or
// not, whose horario is from inicio to fim, both included, with the txid
// when one is asked for, by horario (then end_to_end_id), a page at a time.
func (s *Simulator) handleListPix(w http.ResponseWriter, r *http.Request) {
	q, msg := parsePixQuery(r.URL.Query())
	if msg != "" {
		note(r, slog.String("outcome", "invalid"))
		writeProblem(w, http.StatusBadRequest, ProblemPixConsultaInvalida, msg)
		return
	}
	page := s.listPix(q)
	note(r, slog.Int("page", q.page), slog.Int("items", len(page.Pix)), slog.Int("total", page.Parametros.Paginacao.QuantidadeTotalDeItens))
	writeJSON(w, http.StatusOK, page)
}

// listPix is one page of the PIX that meet q, as of now.
func (s *Simulator) listPix(q pixQuery) pixPage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var found []*receivedPix
	for _, p := range s.pixes {
		if p.horario.Before(q.inicio) || p.horario.After(q.fim) || (q.txid != "" && p.txid != q.txid) {
			continue
		}
		found = append(found, p)
	}
	slices.SortFunc(found, func(a, b *receivedPix) int {
		if c := a.horario.Compare(b.horario); c != 0 {
			return c
		}
		return strings.Compare(a.endToEndID, b.endToEndID)
	})
	pages := max(1, (len(found)+q.perPage-1)/q.perPage)
	out := pixPage{
		Parametros: pixQueryJSON{Inicio: q.inicio, Fim: q.fim, Txid: q.txid, Paginacao: paginacaoJSON{
			PaginaAtual: q.page, ItensPorPagina: q.perPage, QuantidadeDePaginas: pages, QuantidadeTotalDeItens: len(found)}},
		Pix: []map[string]json.RawMessage{},
	}
	// A page past the last is empty (and q.page*q.perPage is computed
	// only below pages: no overflow).
	if q.page < pages {
		from := q.page * q.perPage
		for _, p := range found[from:min(from+q.perPage, len(found))] {
			out.Pix = append(out.Pix, s.pixItem(p))
		}
	}
	return out
}

// handleGetPix is GET /pix/{e2eid}: one PIX received, with its devoluções.
func (s *Simulator) handleGetPix(w http.ResponseWriter, r *http.Request) {
	e2e := r.PathValue("e2eid")
	note(r, slog.String("end_to_end_id", e2e))
	s.mu.Lock()
	p, ok := s.pixes[e2e]
	var item map[string]json.RawMessage
	if ok {
		item = s.pixItem(p)
	}
	s.mu.Unlock()
	if !ok {
		writeProblem(w, http.StatusNotFound, ProblemNaoEncontrado, "no PIX received with this e2eid")
		return
	}
	writeJSON(w, http.StatusOK, item)
}

// webhookRegistration is the webhook registered for one key.
type webhookRegistration struct {
	url       string
	createdAt time.Time
}

// webhookJSON is GET /webhook/{chave}'s answer (WebhookCompleto).
type webhookJSON struct {
	WebhookURL string    `json:"webhookUrl"`
	Chave      string    `json:"chave"`
	Criacao    time.Time `json:"criacao"`
}

// handlePutWebhook is PUT /webhook/{chave}: the PIX received to the key
// are notified to {webhookUrl}/pix from now on (replacing an earlier
// registration).
func (s *Simulator) handlePutWebhook(w http.ResponseWriter, r *http.Request) {
	chave := r.PathValue("chave")
	note(r, slog.String("chave", chave))
	var body struct {
		WebhookURL string `json:"webhookUrl"`
	}
	if err := decodeBody(w, r, &body); err != nil {
		writeProblem(w, http.StatusBadRequest, ProblemWebhookOperacaoInvalida, "the body is not a WebhookSolicitado: "+decodeProblem(err))
		return
	}
	if err := checkChave(chave); err != nil {
		writeProblem(w, http.StatusBadRequest, ProblemWebhookOperacaoInvalida, err.Error(),
			violacaoJSON{Razao: "chave inválida", Propriedade: "chave", Valor: chave})
		return
	}
	if err := checkWebhookURL(body.WebhookURL); err != nil {
		writeProblem(w, http.StatusBadRequest, ProblemWebhookOperacaoInvalida, "webhookUrl must be an absolute http(s) URL",
			violacaoJSON{Razao: "webhookUrl não respeita o schema", Propriedade: "webhook.webhookUrl"})
		return
	}
	s.mu.Lock()
	s.webhooks[chave] = webhookRegistration{url: body.WebhookURL, createdAt: s.now().UTC()}
	s.mu.Unlock()
	// The URL is the bank's, not a secret: logged, as an operator sets it.
	note(r, slog.String("webhook_url", body.WebhookURL))
	w.WriteHeader(http.StatusOK)
}

func (s *Simulator) handleGetWebhook(w http.ResponseWriter, r *http.Request) {
	chave := r.PathValue("chave")
	note(r, slog.String("chave", chave))
	s.mu.Lock()
	reg, ok := s.webhooks[chave]
	s.mu.Unlock()
	if !ok {
		writeProblem(w, http.StatusNotFound, ProblemNaoEncontrado, "no webhook registered for this key")
		return
	}
	writeJSON(w, http.StatusOK, webhookJSON{WebhookURL: reg.url, Chave: chave, Criacao: reg.createdAt})
}

func (s *Simulator) handleDeleteWebhook(w http.ResponseWriter, r *http.Request) {
	chave := r.PathValue("chave")
	note(r, slog.String("chave", chave))
	s.mu.Lock()
	_, ok := s.webhooks[chave]
	delete(s.webhooks, chave)
	s.mu.Unlock()
	if !ok {
		writeProblem(w, http.StatusNotFound, ProblemNaoEncontrado, "no webhook registered for this key")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
