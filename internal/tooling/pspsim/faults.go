package pspsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"
)

// The PSP-wide faults: the token endpoint down for a while, the webhooks
// dropped for a while, the client secret rotated, GET /pix's pages cut
// short. Each is set through the
// control API (see Handler) or the methods below, as the per-key
// behaviours are, so that the fault suite can drive them.

// TokenEndpointMode is how the token endpoint is down.
type TokenEndpointMode string

// The modes of a TokenEndpointFault.
const (
	// TokenEndpointUnavailable answers every token request 503
	// temporarily_unavailable.
	TokenEndpointUnavailable TokenEndpointMode = "unavailable"
	// TokenEndpointCut closes the connection of every token request
	// without an answer, as a token endpoint that is down.
	TokenEndpointCut TokenEndpointMode = "cut"
)

// TokenEndpointFault takes the token endpoint down: its JSON form is the
// body of PUT /sim/token-endpoint, {"mode":"unavailable","for":"30s"}.
type TokenEndpointFault struct {
	Mode TokenEndpointMode `json:"mode"`
	// For is how long, by Options.Now, from when it is set; 0 means until
	// it is cleared.
	For Duration `json:"for,omitempty"`
}

// Duration is a time.Duration whose JSON form is a Go duration string
// ("30s").
type Duration time.Duration

// MarshalJSON writes d as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Duration(d).String() + `"`), nil
}

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := parseDuration("for", s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// SetTokenEndpointFault takes the token endpoint down as f says, from now
// on. An error when OAuth is off or f is malformed.
func (s *Simulator) SetTokenEndpointFault(f TokenEndpointFault) error {
	if s.oauth == nil {
		return errors.New("oauth is off: there is no token endpoint")
	}
	switch {
	case f.Mode != TokenEndpointUnavailable && f.Mode != TokenEndpointCut:
		return fmt.Errorf("mode %q is not one of %s, %s", f.Mode, TokenEndpointUnavailable, TokenEndpointCut)
	case f.For < 0:
		return errors.New("for must not be negative")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.oauth.endpoint, s.oauth.endpointUntil = f, time.Time{}
	if f.For > 0 {
		s.oauth.endpointUntil = s.now().Add(time.Duration(f.For))
	}
	return nil
}

// ClearTokenEndpointFault brings the token endpoint back.
func (s *Simulator) ClearTokenEndpointFault() {
	if s.oauth == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.oauth.endpoint, s.oauth.endpointUntil = TokenEndpointFault{}, time.Time{}
}

// tokenEndpointDown is how the token endpoint is down now, "" when it is
// up.
func (s *Simulator) tokenEndpointDown() TokenEndpointMode {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.oauth
	if st.endpoint.Mode == "" || (!st.endpointUntil.IsZero() && !s.now().Before(st.endpointUntil)) {
		return ""
	}
	return st.endpoint.Mode
}

// DropWebhooks drops, for d from now (by Options.Now), every webhook the
// simulator would send: each message due in that time is given up
// without being sent, as by a PSP past its retry budget. What changes
// after it is delivered as usual, in the newest state of its PIX. The
// PIX stay in GET /pix.
func (s *Simulator) DropWebhooks(d time.Duration) error {
	if d <= 0 {
		return errors.New("the drop's duration must be positive")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropWebhooksUntil = s.now().Add(d)
	return nil
}

// StopDroppingWebhooks ends DropWebhooks's period now.
func (s *Simulator) StopDroppingWebhooks() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropWebhooksUntil = time.Time{}
}

// ListPageSize is the most PIX a page of GET /pix lists, whatever
// paginacao.itensPorPagina asks (the spec's itensPorPagina is a maximum:
// the PSP may list fewer): the body of PUT /sim/list-page-size, {"max":2}.
type ListPageSize struct {
	Max int `json:"max"`
}

// SetListPageSize makes every page of GET /pix list at most l.Max PIX from
// now on, until ClearListPageSize: a query asking for more is answered in
// pages of l.Max, which its answer's paginacao says (see listPix). It
// restarts the count of pages answered (FaultsView). An error when l.Max
// is not from 1 to MaxItemsPerPage.
func (s *Simulator) SetListPageSize(l ListPageSize) error {
	if l.Max < 1 || l.Max > MaxItemsPerPage {
		return fmt.Errorf("max must be from 1 to %d", MaxItemsPerPage)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listPageMax, s.listPageAnswers = l.Max, 0
	return nil
}

// ClearListPageSize lists again as many PIX a page as each query asks.
func (s *Simulator) ClearListPageSize() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listPageMax, s.listPageAnswers = 0, 0
}

// FaultsView is GET /sim/faults: the PSP-wide faults in force.
type FaultsView struct {
	// TokenEndpoint is the token endpoint's outage, nil when it is up;
	// Until is zero when it lasts until cleared.
	TokenEndpoint *TokenEndpointView `json:"token_endpoint"`
	// WebhooksDroppedUntil is the end of DropWebhooks's period, nil when
	// none is in force.
	WebhooksDroppedUntil *time.Time `json:"webhooks_dropped_until"`
	// ListPageSize is SetListPageSize's limit, nil when none is in force.
	ListPageSize *ListPageSizeView `json:"list_page_size"`
}

// ListPageSizeView is the limit of GET /pix's pages in force, and how many
// pages of GET /pix were answered since it was set (a listing of n PIX in
// pages of Max takes n/Max of them at least).
type ListPageSizeView struct {
	Max   int `json:"max"`
	Pages int `json:"pages"`
}

// TokenEndpointView is the token endpoint's outage in force.
type TokenEndpointView struct {
	Mode  TokenEndpointMode `json:"mode"`
	Until *time.Time        `json:"until,omitempty"`
}

// Faults are the PSP-wide faults in force now.
func (s *Simulator) Faults() FaultsView {
	var v FaultsView
	if s.oauth != nil {
		if mode := s.tokenEndpointDown(); mode != "" {
			v.TokenEndpoint = &TokenEndpointView{Mode: mode}
			s.mu.Lock()
			if until := s.oauth.endpointUntil; !until.IsZero() {
				v.TokenEndpoint.Until = &until
			}
			s.mu.Unlock()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if until := s.dropWebhooksUntil; s.now().Before(until) {
		v.WebhooksDroppedUntil = &until
	}
	if s.listPageMax > 0 {
		v.ListPageSize = &ListPageSizeView{Max: s.listPageMax, Pages: s.listPageAnswers}
	}
	return v
}

// webhooksDropped reports whether the webhooks are dropped now. The caller
// holds s.mu.
func (s *Simulator) webhooksDropped(now time.Time) bool {
	return now.Before(s.dropWebhooksUntil)
}

// faultRoutes are the control routes of the PSP-wide faults:
//
//	PUT    /sim/token-endpoint           a TokenEndpointFault, 204
//	DELETE /sim/token-endpoint           the token endpoint back, 204
//	PUT    /sim/webhook-drop             {"for":"2m"}: DropWebhooks, 204
//	DELETE /sim/webhook-drop             StopDroppingWebhooks, 204
//	PUT    /sim/oauth-clients/{client_id} {"secret":"...","revoke_tokens":true}: SetClientSecret, 204
//	PUT    /sim/list-page-size           a ListPageSize, {"max":2}: SetListPageSize, 204
//	DELETE /sim/list-page-size           ClearListPageSize, 204
//	GET    /sim/faults                   a FaultsView
func (s *Simulator) faultRoutes(mux *http.ServeMux) {
	mux.HandleFunc("PUT /sim/token-endpoint", func(w http.ResponseWriter, r *http.Request) {
		var f TokenEndpointFault
		if err := decodeBody(w, r, &f); err != nil {
			writeDecodeError(w, err)
			return
		}
		if err := s.SetTokenEndpointFault(f); err != nil {
			writeError(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
			return
		}
		note(r, slog.String("mode", string(f.Mode)), slog.String("for", time.Duration(f.For).String()))
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE /sim/token-endpoint", func(w http.ResponseWriter, _ *http.Request) {
		s.ClearTokenEndpointFault()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("PUT /sim/webhook-drop", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			For Duration `json:"for"`
		}
		if err := decodeBody(w, r, &body); err != nil {
			writeDecodeError(w, err)
			return
		}
		if err := s.DropWebhooks(time.Duration(body.For)); err != nil {
			writeError(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
			return
		}
		note(r, slog.String("for", time.Duration(body.For).String()))
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE /sim/webhook-drop", func(w http.ResponseWriter, _ *http.Request) {
		s.StopDroppingWebhooks()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("PUT /sim/oauth-clients/{client_id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("client_id")
		note(r, slog.String("client_id", id))
		var body struct {
			Secret       string `json:"secret"`
			RevokeTokens bool   `json:"revoke_tokens"`
		}
		if err := decodeBody(w, r, &body); err != nil {
			writeDecodeError(w, err)
			return
		}
		if err := s.SetClientSecret(id, body.Secret, body.RevokeTokens); err != nil {
			writeError(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("PUT /sim/list-page-size", func(w http.ResponseWriter, r *http.Request) {
		var l ListPageSize
		if err := decodeBody(w, r, &l); err != nil {
			writeDecodeError(w, err)
			return
		}
		if err := s.SetListPageSize(l); err != nil {
			writeError(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
			return
		}
		note(r, slog.Int("max", l.Max))
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("DELETE /sim/list-page-size", func(w http.ResponseWriter, _ *http.Request) {
		s.ClearListPageSize()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /sim/faults", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.Faults())
	})
}
