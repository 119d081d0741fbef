package pspsim

import (
	"encoding/json"
	"net/http"
)

// problemTypeBase starts every problem type of the API Pix (the same as
// tooling/pspspec.ProblemTypeBase, which a test checks: the simulator's binary
// does not carry the validator).
const problemTypeBase = "https://pix.bcb.gov.br/api/v2/error/"

// The API Pix's problem types the simulator answers (RFC 7807: the type
// is problemTypeBase and the name).
const (
	ProblemPixConsultaInvalida     = "PixConsultaInvalida"
	ProblemPixDevolucaoInvalida    = "PixDevolucaoInvalida"
	ProblemWebhookOperacaoInvalida = "WebhookOperacaoInvalida"
	ProblemAcessoNegado            = "AcessoNegado"
	ProblemNaoEncontrado           = "NaoEncontrado"
	ProblemServicoIndisponivel     = "ServicoIndisponivel"
)

// problemTitles are the problems' titles, as the specification's examples
// give them.
var problemTitles = map[string]string{
	ProblemPixConsultaInvalida:     "Consulta inválida.",
	ProblemPixDevolucaoInvalida:    "Devolução inválida.",
	ProblemWebhookOperacaoInvalida: "Webhook inválido.",
	ProblemAcessoNegado:            "Acesso Negado",
	ProblemNaoEncontrado:           "Não Encontrado",
	ProblemServicoIndisponivel:     "Serviço Indisponível",
}

// problemJSON is an API Pix problem.
type problemJSON struct {
	Type      string         `json:"type"`
	Title     string         `json:"title"`
	Status    int            `json:"status"`
	Detail    string         `json:"detail,omitempty"`
	Violacoes []violacaoJSON `json:"violacoes,omitempty"`
}

// violacaoJSON names what broke the rule: the property, why, and its
// value.
type violacaoJSON struct {
	Razao       string `json:"razao"`
	Propriedade string `json:"propriedade,omitempty"`
	Valor       string `json:"valor,omitempty"`
}

// writeProblem answers the problem name (ProblemPixDevolucaoInvalida...)
// with status, detail and the violations, as application/problem+json.
func writeProblem(w http.ResponseWriter, status int, name, detail string, violacoes ...violacaoJSON) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	// The status is sent; an encoding or write error can only be a client
	// gone away, which the request log shows.
	_ = json.NewEncoder(w).Encode(problemJSON{Type: problemTypeBase + name, Title: problemTitles[name], Status: status,
		Detail: detail, Violacoes: violacoes})
}

// writeUnavailable answers 503 ServicoIndisponivel: a simulated outage.
func writeUnavailable(w http.ResponseWriter, detail string) {
	writeProblem(w, http.StatusServiceUnavailable, ProblemServicoIndisponivel, detail)
}
