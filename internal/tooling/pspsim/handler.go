package pspsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/pixbank/pix/internal/psp"
)

// Error codes of the JSON error envelope {"error":{"code","message"}}.
const (
	CodeInvalidRequest   = "invalid_request"
	CodeEndToEndIDReused = "end_to_end_id_reused"
	CodeTransferNotFound = "transfer_not_found"
	CodeUnavailable      = "psp_unavailable"
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodePayloadTooLarge  = "payload_too_large"
	// CodeDuplicateTransfer answers a resubmission in duplicate_conflict
	// mode: the PSP has the transfer already.
	CodeDuplicateTransfer = "duplicate_transfer"
)

// maxBodyBytes bounds a request body: a transfer or a behaviour is a few
// hundred bytes.
const maxBodyBytes = 64 << 10

// apiRoute is one route of the PSP's API, with the OAuth scope it
// requires (pspspec's document gives the same, which a test checks).
type apiRoute struct {
	pattern string
	scope   string
	handle  http.HandlerFunc
}

// apiRoutes are the PSP's API: the API Pix's routes the bank uses and the
// bank's transfer interface.
func (s *Simulator) apiRoutes() []apiRoute {
	return []apiRoute{
		{"POST /transfers", ScopePixWrite, s.handleSubmit},
		{"GET /transfers/{end_to_end_id}", ScopePixRead, s.handleGetTransfer},
		{"GET /pix", ScopePixRead, s.handleListPix},
		{"GET /pix/{e2eid}", ScopePixRead, s.handleGetPix},
		{"PUT /pix/{e2eid}/devolucao/{id}", ScopePixWrite, s.handlePutRefund},
		{"GET /pix/{e2eid}/devolucao/{id}", ScopePixRead, s.handleGetRefund},
		{"PUT /webhook/{chave}", ScopeWebhookWrite, s.handlePutWebhook},
		{"GET /webhook/{chave}", ScopeWebhookRead, s.handleGetWebhook},
		{"DELETE /webhook/{chave}", ScopeWebhookWrite, s.handleDeleteWebhook},
	}
}

// Handler returns the simulator's HTTP API, the PSP's and its control
// routes. The PSP's API (with Options.OAuth, each route needs a bearer
// token with its scope; under Options.APIBasePath too):
//
//	POST   /transfers                   submit a psp.Transfer (the bank's extension)
//	GET    /transfers/{end_to_end_id}   a TransferView (the bank's extension)
//	GET    /pix                         the PIX received, ?inicio=&fim=&txid=&paginacao.paginaAtual=&paginacao.itensPorPagina=
//	GET    /pix/{e2eid}                 a PIX received
//	PUT    /pix/{e2eid}/devolucao/{id}  ask for a devolução
//	GET    /pix/{e2eid}/devolucao/{id}  a devolução
//	PUT    /webhook/{chave}             register the key's webhook, {"webhookUrl":...}
//	GET    /webhook/{chave}             the key's webhook
//	DELETE /webhook/{chave}             remove it
//	POST   /oauth/token                 the token endpoint (with Options.OAuth)
//
// The control routes (open; ControlHandler serves them alone):
//
//	GET    /transfers                   every TransferView, {"transfers":[...]}
//	PUT    /behaviors/{pix_key}         set a Behavior
//	DELETE /behaviors/{pix_key}         back to accept
//	GET    /behaviors                   list the behaviours
//	GET    /pix/{e2eid}/devolucao       the PIX's devoluções, {"devolucoes":[...]}
//	PUT    /refund-behaviors/{e2eid}    set a RefundBehavior
//	DELETE /refund-behaviors/{e2eid}    back to return
//	GET    /refund-behaviors            list them, {"refund_behaviors":[...]}
//	PUT    /webhook-behaviors/{chave}   set a WebhookBehavior
//	DELETE /webhook-behaviors/{chave}   back to deliver
//	GET    /webhook-behaviors           list them, {"webhook_behaviors":[...]}
//	POST   /sim/pix                     a PIX received (API Pix object), to list and notify
//	PUT    /sim/token-endpoint          take the token endpoint down (TokenEndpointFault)
//	DELETE /sim/token-endpoint          bring it back
//	PUT    /sim/webhook-drop            drop the webhooks for a while, {"for":"2m"}
//	DELETE /sim/webhook-drop            stop dropping them
//	PUT    /sim/oauth-clients/{client_id} rotate a client's secret, {"secret":...,"revoke_tokens":bool}
//	PUT    /sim/list-page-size          list at most so many PIX a page of GET /pix, {"max":2}
//	DELETE /sim/list-page-size          as many as asked again
//	GET    /sim/faults                  the PSP-wide faults in force
//	POST   /sim/med/reports             a MED infraction report about a PIX, noticed to the bank (med.go)
//	GET    /sim/med/reports/{id}        it, and its refund request
//	POST   /sim/med/reports/{id}/...    close, cancel, refund, refund/close, notify (med.go)
//
//	GET    /healthz                     200
//
// A simulator whose Options are malformed answers every request 500.
func (s *Simulator) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.apiRoutes() {
		mux.HandleFunc(rt.pattern, s.authorize(rt.scope, rt.handle))
	}
	if s.oauth != nil {
		mux.HandleFunc("POST "+TokenPath, s.handleToken)
	}
	s.controlRoutes(mux)
	return s.logRequests(s.configured(s.underBasePath(jsonMuxErrors(mux))))
}

// ControlHandler returns the control routes alone (see Handler), for a
// listener of their own: with mutual TLS on the API's, the tools that
// drive the simulator need no client certificate.
func (s *Simulator) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	s.controlRoutes(mux)
	return s.logRequests(s.configured(jsonMuxErrors(mux)))
}

func (s *Simulator) controlRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /transfers", s.handleListTransfers)
	s.behaviorRoutes().register(mux)
	mux.HandleFunc("GET /pix/{e2eid}/devolucao", s.handleListRefunds)
	s.refundBehaviorRoutes().register(mux)
	s.webhookBehaviorRoutes().register(mux)
	mux.HandleFunc("POST /sim/pix", s.handlePostPix)
	s.medRoutes(mux)
	s.faultRoutes(mux)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
}

// configured answers every request 500 when the Options are malformed:
// a simulator meant to check credentials must never serve without.
func (s *Simulator) configured(next http.Handler) http.Handler {
	if s.configErr == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusInternalServerError, "misconfigured", "the psp simulator is misconfigured: "+s.configErr.Error())
	})
}

// underBasePath serves the requests under Options.APIBasePath as if the
// base path were not there.
func (s *Simulator) underBasePath(next http.Handler) http.Handler {
	if s.apiBasePath == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, s.apiBasePath); ok && strings.HasPrefix(rest, "/") {
			r2 := r.Clone(r.Context())
			r2.URL.Path = rest
			r2.URL.RawPath = ""
			next.ServeHTTP(w, r2)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Simulator) handleSubmit(w http.ResponseWriter, r *http.Request) {
	var in psp.Transfer
	if err := decodeBody(w, r, &in); err != nil {
		writeDecodeError(w, err)
		return
	}
	note(r, slog.String("end_to_end_id", in.EndToEndID), slog.String("pix_key", in.PixKey))
	if refuseInvalid(w, r, validate(in)) {
		return
	}
	sub := s.submit(in)
	note(r, slog.String("mode", string(sub.mode)), slog.String("outcome", sub.outcome.String()))
	switch sub.outcome {
	case outcomeUnavailable:
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "the psp is unavailable (simulated failure); nothing was created")
		return
	case outcomeConflict:
		writeError(w, http.StatusConflict, CodeEndToEndIDReused,
			"end_to_end_id "+in.EndToEndID+" is already a transfer with another amount, pix key or account; nothing was changed")
		return
	case outcomeDuplicateConflict:
		writeError(w, http.StatusConflict, CodeDuplicateTransfer,
			"end_to_end_id "+in.EndToEndID+" was submitted already (simulated duplicate_conflict); ask GET /transfers/"+in.EndToEndID+" where it stands")
		return
	case outcomeRefused:
		refuseCredentials(w, r, sub.refusedStatus, "nothing was created")
		return
	}
	if sub.lose {
		// The transfer exists (or existed); the answer never leaves.
		loseAnswer(r)
	}
	holdAnswer(r, "hang", sub.hang)
	res, _ := s.result(in.EndToEndID) // transfers are never deleted
	code := http.StatusOK
	switch {
	case res.Status == psp.StatusRejected:
		code = http.StatusUnprocessableEntity
	case sub.outcome == outcomeCreated:
		code = http.StatusCreated
	}
	note(r, slog.String("transfer_status", string(res.Status)))
	writeJSON(w, code, res)
}

func (s *Simulator) handleGetTransfer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("end_to_end_id")
	note(r, slog.String("end_to_end_id", id))
	v, ok, refused := s.query(id)
	if !ok {
		writeError(w, http.StatusNotFound, CodeTransferNotFound, "no transfer with end_to_end_id "+id)
		return
	}
	if refused != 0 {
		refuseCredentials(w, r, refused, "nothing was read")
		return
	}
	note(r, slog.String("transfer_status", string(v.Status)))
	writeJSON(w, http.StatusOK, v)
}

func (s *Simulator) handleListTransfers(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"transfers": s.Transfers()})
}

// refuseCredentials answers as the OAuth layer refuses credentials (an
// unauthorized behaviour): 401 invalid_token, or 403 AcessoNegado.
func refuseCredentials(w http.ResponseWriter, r *http.Request, status int, what string) {
	if status == http.StatusForbidden {
		note(r, slog.String("outcome", "forbidden"))
		writeProblem(w, http.StatusForbidden, ProblemAcessoNegado, "access refused (simulated); "+what)
		return
	}
	writeInvalidToken(w, r, "credentials refused (simulated); "+what)
}

// refuseInvalid answers 400 invalid_request with msg, what is wrong with the
// request, and reports whether it did: not when msg is "".
func refuseInvalid(w http.ResponseWriter, r *http.Request, msg string) bool {
	if msg == "" {
		return false
	}
	note(r, slog.String("outcome", "invalid"))
	writeError(w, http.StatusBadRequest, CodeInvalidRequest, msg)
	return true
}

// loseAnswer cuts the connection without a status line, as a connection
// cut after the PSP processed the request: what it made exists, and its
// answer never leaves.
func loseAnswer(r *http.Request) {
	note(r, slog.Bool("answer_lost", true))
	panic(http.ErrAbortHandler)
}

// holdAnswer waits d, noted as name, before the handler answers. If the
// request ends first (the client gave up, or the server is shutting down),
// the answer is lost as with a real PSP, and what the request made exists
// all the same: it aborts rather than return, which would send an empty
// 200 that a client still listening would take for an answer.
func holdAnswer(r *http.Request, name string, d time.Duration) {
	if d <= 0 {
		return
	}
	note(r, slog.String(name, d.String()))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		loseAnswer(r)
	case <-t.C:
	}
}

// behaviorRoutes are the routes of one kind of behaviour, B, set per key:
//
//	PUT    {path}/{key}  set one, 204
//	DELETE {path}/{key}  back to the fallback, 204
//	GET    {path}        list them, {list:[L...]} by key
type behaviorRoutes[B behavior, L any] struct {
	reg  *registry[B]
	path string
	// param is the key's path wildcard, and logKey its name in the
	// request log.
	param, logKey string
	// list is the name of GET's list, and listing makes its entries.
	list    string
	listing func(key string, e entry[B]) L
}

func (rt behaviorRoutes[B, L]) register(mux *http.ServeMux) {
	keyed := rt.path + "/{" + rt.param + "}"
	mux.HandleFunc("PUT "+keyed, rt.put)
	mux.HandleFunc("DELETE "+keyed, rt.delete)
	mux.HandleFunc("GET "+rt.path, rt.get)
}

// key is the request's key, noted for the log.
func (rt behaviorRoutes[B, L]) key(r *http.Request) string {
	key := r.PathValue(rt.param)
	note(r, slog.String(rt.logKey, key))
	return key
}

func (rt behaviorRoutes[B, L]) put(w http.ResponseWriter, r *http.Request) {
	key := rt.key(r)
	var b B
	if err := decodeBody(w, r, &b); err != nil {
		writeDecodeError(w, err)
		return
	}
	if err := rt.reg.set(key, b); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
		return
	}
	note(r, slog.String("mode", b.modeName()))
	w.WriteHeader(http.StatusNoContent)
}

func (rt behaviorRoutes[B, L]) delete(w http.ResponseWriter, r *http.Request) {
	rt.reg.remove(rt.key(r))
	w.WriteHeader(http.StatusNoContent)
}

func (rt behaviorRoutes[B, L]) get(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{rt.list: entries(rt.reg, rt.listing)})
}

// behaviorRoutes are the routes of the Pix keys' behaviours.
func (s *Simulator) behaviorRoutes() behaviorRoutes[Behavior, behaviorListing] {
	return behaviorRoutes[Behavior, behaviorListing]{reg: &s.behaviors, path: "/behaviors", param: "pix_key", logKey: "pix_key",
		list: "behaviors", listing: func(pixKey string, e entry[Behavior]) behaviorListing {
			return behaviorListing{PixKey: pixKey, behaviorJSON: e.behavior.wire(), Submissions: e.requests, Resubmissions: e.resubmissions}
		}}
}

// behaviorListing is one entry of GET /behaviors.
type behaviorListing struct {
	PixKey string `json:"pix_key"`
	behaviorJSON
	Submissions   int `json:"submissions"`
	Resubmissions int `json:"resubmissions,omitempty"`
}

// errBodyTooLarge and errTrailingData are decodeBody's refusals that are not
// JSON syntax or type errors.
var (
	errBodyTooLarge = errors.New("body too large")
	errTrailingData = errors.New("body holds more than one JSON value")
)

// decodeBody decodes the request's one JSON value into v, refusing unknown
// fields, so that a misspelt field is an error rather than a default.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return errBodyTooLarge
		}
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return errBodyTooLarge
		}
		return errTrailingData
	}
	return nil
}

func writeDecodeError(w http.ResponseWriter, err error) {
	if errors.Is(err, errBodyTooLarge) {
		writeError(w, http.StatusRequestEntityTooLarge, CodePayloadTooLarge, fmt.Sprintf("body larger than %d bytes", maxBodyBytes))
		return
	}
	writeError(w, http.StatusBadRequest, CodeInvalidRequest, "malformed JSON body: "+err.Error())
}

// errorBody is the envelope of every error answer.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{errorDetail{Code: code, Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// The status is sent; an encoding or write error can only be a client
	// gone away, which the request log shows.
	_ = json.NewEncoder(w).Encode(v)
}

// jsonMuxErrors makes the mux's own 404 and 405 answers (plain text) JSON
// error bodies, keeping their status and the 405's Allow header.
func jsonMuxErrors(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			w = &muxErrorWriter{ResponseWriter: w, route: r.Method + " " + r.URL.Path}
		}
		mux.ServeHTTP(w, r)
	})
}

// muxErrorWriter replaces the body of a 404 or 405 with the JSON envelope.
type muxErrorWriter struct {
	http.ResponseWriter
	route    string
	replaced bool
}

func (m *muxErrorWriter) WriteHeader(code int) {
	switch code {
	case http.StatusNotFound:
		m.replaced = true
		writeError(m.ResponseWriter, code, CodeNotFound, "no route "+m.route)
	case http.StatusMethodNotAllowed:
		m.replaced = true
		writeError(m.ResponseWriter, code, CodeMethodNotAllowed, "method not allowed: "+m.route)
	default:
		m.ResponseWriter.WriteHeader(code)
	}
}

func (m *muxErrorWriter) Write(b []byte) (int, error) {
	if m.replaced {
		return len(b), nil
	}
	return m.ResponseWriter.Write(b)
}

// requestNotes collects what a handler learned about its request (the
// end_to_end_id is in the body, which only the handler reads) for the one
// log line per request.
type requestNotes struct{ attrs []slog.Attr }

type notesKey struct{}

// note adds attributes to the request's log line.
func note(r *http.Request, attrs ...slog.Attr) {
	if n, ok := r.Context().Value(notesKey{}).(*requestNotes); ok {
		n.attrs = append(n.attrs, attrs...)
	}
}

// statusWriter records the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (sw *statusWriter) WriteHeader(code int) {
	if sw.status == 0 {
		sw.status = code
	}
	sw.ResponseWriter.WriteHeader(code)
}

func (sw *statusWriter) Write(b []byte) (int, error) {
	if sw.status == 0 {
		sw.status = http.StatusOK
	}
	return sw.ResponseWriter.Write(b)
}

// logRequests logs one line per request, after it, with what the handler
// noted. It logs from a defer so that a request aborted during a hang (see
// handleSubmit) is logged too, with status 0: nothing was answered.
func (s *Simulator) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		notes := &requestNotes{}
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			attrs := append([]slog.Attr{
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.Int("status", sw.status),
				slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
			}, notes.attrs...)
			s.log.LogAttrs(context.WithoutCancel(r.Context()), slog.LevelInfo, "psp simulator request", attrs...)
		}()
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), notesKey{}, notes)))
	})
}
