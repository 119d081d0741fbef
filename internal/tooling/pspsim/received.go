package pspsim

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sort"
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
	pag := page.Parametros.Paginacao
	note(r, slog.Int("page", q.page), slog.Int("per_page", pag.ItensPorPagina), slog.Int("items", len(page.Pix)),
		slog.Int("total", pag.QuantidadeTotalDeItens))
	writeJSON(w, http.StatusOK, page)
}

// listPix is one page of the PIX that meet q, as of now. Its pages are of
// q.perPage PIX, or of the ListPageSize in force when that is smaller:
// the answer's paginacao then says the size it used (itensPorPagina, as
// the spec's example answers 100 for a window of 2 PIX: the page size, not
// the page's count), and paginaAtual and quantidadeDePaginas count pages
// of that size, so that a client walking the pages it is told of lists
// every PIX once.
func (s *Simulator) listPix(q pixQuery) pixPage {
	s.mu.Lock()
	defer s.mu.Unlock()
	perPage := q.perPage
	if s.listPageMax > 0 {
		perPage = min(perPage, s.listPageMax)
		s.listPageAnswers++
	}
	// s.byHorario is in GET /pix's order: the window is one run of it.
	all := s.byHorario
	from := sort.Search(len(all), func(i int) bool { return !all[i].horario.Before(q.inicio) })
	to := sort.Search(len(all), func(i int) bool { return all[i].horario.After(q.fim) })
	found := all[from:to]
	if q.txid != "" {
		var withTxid []*receivedPix
		for _, p := range found {
			if p.txid == q.txid {
				withTxid = append(withTxid, p)
			}
		}
		found = withTxid
	}
	pages := max(1, (len(found)+perPage-1)/perPage)
	out := pixPage{
		Parametros: pixQueryJSON{Inicio: q.inicio, Fim: q.fim, Txid: q.txid, Paginacao: paginacaoJSON{
			PaginaAtual: q.page, ItensPorPagina: perPage, QuantidadeDePaginas: pages, QuantidadeTotalDeItens: len(found)}},
		Pix: []map[string]json.RawMessage{},
	}
	// A page past the last is empty (and q.page*perPage is computed only
	// below pages: no overflow).
	if q.page < pages {
		first := q.page * perPage
		for _, p := range found[first:min(first+perPage, len(found))] {
			out.Pix = append(out.Pix, s.pixItem(p))
		}
	}
	return out
}

// comparePix is GET /pix's order: by horario, then end_to_end_id.
func comparePix(a, b pixFacts) int {
	if c := a.horario.Compare(b.horario); c != 0 {
		return c
	}
	return strings.Compare(a.endToEndID, b.endToEndID)
}

// placePix puts p, whose facts become f, at its place in s.byHorario,
// moving it from the place of its old facts when it was there. The caller
// holds s.mu.
func (s *Simulator) placePix(p *receivedPix, f pixFacts) {
	at := func(f pixFacts) (int, bool) {
		return slices.BinarySearchFunc(s.byHorario, f, func(q *receivedPix, f pixFacts) int { return comparePix(q.pixFacts, f) })
	}
	if i, ok := at(p.pixFacts); ok && s.byHorario[i] == p {
		s.byHorario = slices.Delete(s.byHorario, i, i+1)
	}
	p.pixFacts = f
	i, _ := at(f)
	s.byHorario = slices.Insert(s.byHorario, i, p)
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
