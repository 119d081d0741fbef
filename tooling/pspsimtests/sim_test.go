package pspsimtests_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/tooling/pspsim"
)

// The tests run the simulator behind a real HTTP server and talk to it with
// the real psp.HTTPClient, so both sides of the API are tested together.

// clock is a settable clock, so that transfers settle without sleeping.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type env struct {
	sim    *pspsim.Simulator
	url    string
	client *psp.HTTPClient
	clock  *clock
}

func setup(t *testing.T) *env {
	t.Helper()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	sim := pspsim.New(pspsim.Options{Now: clk.Now})
	srv := httptest.NewServer(checked(t, "", sim.Handler()))
	t.Cleanup(srv.Close)
	return &env{sim: sim, url: srv.URL, client: psp.NewHTTPClient(srv.URL, 5*time.Second), clock: clk}
}

// id returns a valid end_to_end_id numbered n.
func id(n int) string { return fmt.Sprintf("E12345678202611291200%011d", n) }

func transfer(n int, pixKey string) psp.Transfer {
	return psp.Transfer{EndToEndID: id(n), AccountID: "acc-1", AmountCents: 1500, PixKey: pixKey}
}

// do sends a raw request and returns the status and body.
func do(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	code, b, err := send(t, method, url, body)
	require.NoError(t, err)
	return code, b
}

// send sends a request over raw HTTP, on a connection of its own, and
// returns the status and body, or the transport error when no answer came.
func send(t *testing.T, method, url, body string) (int, []byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	// A connection per request: the transport must not retry a request
	// whose answer was cut on a reused connection, nor hide a cut behind
	// a kept-alive connection.
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b, nil
}

// requestError returns err as the *psp.RequestError of an answer status,
// failing the test when it is not one.
func requestError(t *testing.T, err error, status int) *psp.RequestError {
	t.Helper()
	reqErr, ok := errors.AsType[*psp.RequestError](err)
	require.True(t, ok, "want a RequestError: %v", err)
	require.Equal(t, status, reqErr.StatusCode)
	return reqErr
}

// requireReturned waits for the error of Serve (or of what stops it) on
// errc, which must be nil, failing the test when none comes within 5 s.
func requireReturned(t *testing.T, errc <-chan error) {
	t.Helper()
	select {
	case err := <-errc:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
}

func (e *env) setBehavior(t *testing.T, pixKey, body string) {
	t.Helper()
	code, resp := do(t, http.MethodPut, e.url+"/behaviors/"+pixKey, body)
	require.Equal(t, http.StatusNoContent, code, "%s", resp)
}

func (e *env) view(t *testing.T, endToEndID string) pspsim.TransferView {
	t.Helper()
	v, ok := e.sim.Transfer(endToEndID)
	require.True(t, ok, "the psp has no transfer %s", endToEndID)
	return v
}

// problemBody is an API Pix problem, its type's name (after
// problemTypeBase) in name.
type problemBody struct {
	name      string
	status    int
	violacoes json.RawMessage
}

// problem decodes an API Pix problem.
func problem(t *testing.T, body []byte) problemBody {
	t.Helper()
	var p struct {
		Type      string          `json:"type"`
		Title     string          `json:"title"`
		Status    int             `json:"status"`
		Violacoes json.RawMessage `json:"violacoes"`
	}
	require.NoError(t, json.Unmarshal(body, &p), "%s", body)
	name, ok := strings.CutPrefix(p.Type, "https://pix.bcb.gov.br/api/v2/error/")
	require.True(t, ok, "problem type %q", p.Type)
	require.NotEmpty(t, p.Title)
	return problemBody{name: name, status: p.Status, violacoes: p.Violacoes}
}

// errorCode returns the code of an error body.
func errorCode(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &e), "%s", body)
	require.NotEmpty(t, e.Error.Message)
	return e.Error.Code
}

func TestAcceptSettlesAfterSettleAfter(t *testing.T) {
	t.Parallel()
	e := setup(t)
	tr := transfer(1, "maria@example.com")

	r, err := e.client.Submit(t.Context(), tr)
	require.NoError(t, err)
	require.Equal(t, psp.Result{EndToEndID: tr.EndToEndID, Status: psp.StatusPending}, r)

	e.clock.Advance(pspsim.DefaultSettleAfter - time.Millisecond)
	r, err = e.client.Status(t.Context(), tr.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, psp.StatusPending, r.Status)

	e.clock.Advance(time.Millisecond)
	r, err = e.client.Status(t.Context(), tr.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, held(tr, psp.Result{EndToEndID: tr.EndToEndID, Status: psp.StatusSettled}), r, "a status names what the PSP holds")

	// A resubmission answers with the transfer as it stands: 200, settled.
	body, err := json.Marshal(tr)
	require.NoError(t, err)
	code, resp := do(t, http.MethodPost, e.url+"/transfers", string(body))
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"end_to_end_id":"`+tr.EndToEndID+`","status":"settled"}`, string(resp))

	v := e.view(t, tr.EndToEndID)
	require.Equal(t, 2, v.Received)
	require.Equal(t, tr.AmountCents, v.AmountCents)
}

func TestCreationIs201(t *testing.T) {
	t.Parallel()
	e := setup(t)
	code, resp := do(t, http.MethodPost, e.url+"/transfers",
		`{"end_to_end_id":"`+id(1)+`","account_id":"acc-1","amount_cents":100,"pix_key":"k"}`)
	require.Equal(t, http.StatusCreated, code)
	require.JSONEq(t, `{"end_to_end_id":"`+id(1)+`","status":"pending"}`, string(resp))
}

func TestSettleAfterOfTheBehavior(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setBehavior(t, "slow", `{"mode":"accept","settle_after":"2s"}`)
	tr := transfer(1, "slow")
	_, err := e.client.Submit(t.Context(), tr)
	require.NoError(t, err)
	e.clock.Advance(time.Second)
	require.Equal(t, psp.StatusPending, e.view(t, tr.EndToEndID).Status)
	e.clock.Advance(time.Second)
	require.Equal(t, psp.StatusSettled, e.view(t, tr.EndToEndID).Status)
}

func TestRejectIsAResultNotAnError(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setBehavior(t, "closed", `{"mode":"reject"}`)
	e.setBehavior(t, "fraud", `{"mode":"reject","reason":"suspected fraud"}`)

	for n, c := range []struct{ key, reason string }{
		{"closed", pspsim.DefaultReason},
		{"fraud", "suspected fraud"},
	} {
		tr := transfer(n, c.key)
		want := psp.Result{EndToEndID: tr.EndToEndID, Status: psp.StatusRejected, Reason: c.reason}
		r, err := e.client.Submit(t.Context(), tr)
		require.NoError(t, err)
		require.Equal(t, want, r)
		r, err = e.client.Status(t.Context(), tr.EndToEndID)
		require.NoError(t, err)
		require.Equal(t, held(tr, want), r)
		// A duplicate is rejected again, without a second transfer.
		r, err = e.client.Submit(t.Context(), tr)
		require.NoError(t, err)
		require.Equal(t, want, r)
		require.Equal(t, 2, e.view(t, tr.EndToEndID).Received)
	}

	body, err := json.Marshal(transfer(0, "closed"))
	require.NoError(t, err)
	code, _ := do(t, http.MethodPost, e.url+"/transfers", string(body))
	require.Equal(t, http.StatusUnprocessableEntity, code)
}

func TestRejectLater(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setBehavior(t, "later", `{"mode":"reject_later","settle_after":"200ms","reason":"limit exceeded"}`)
	tr := transfer(1, "later")

	r, err := e.client.Submit(t.Context(), tr)
	require.NoError(t, err)
	require.Equal(t, psp.Result{EndToEndID: tr.EndToEndID, Status: psp.StatusPending}, r)

	e.clock.Advance(200 * time.Millisecond)
	r, err = e.client.Status(t.Context(), tr.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, held(tr, psp.Result{EndToEndID: tr.EndToEndID, Status: psp.StatusRejected, Reason: "limit exceeded"}), r)
}

func TestFailTimesThenAccept(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setBehavior(t, "flaky", `{"mode":"fail","times":3}`)
	tr := transfer(1, "flaky")

	for range 3 {
		_, err := e.client.Submit(t.Context(), tr)
		require.ErrorIs(t, err, psp.ErrTransient)
		_, err = e.client.Status(t.Context(), tr.EndToEndID)
		require.ErrorIs(t, err, psp.ErrNotFound, "a failed submission creates nothing")
	}
	r, err := e.client.Submit(t.Context(), tr)
	require.NoError(t, err)
	require.Equal(t, psp.StatusPending, r.Status)

	v := e.view(t, tr.EndToEndID)
	require.Equal(t, 4, v.Received, "the 503s count too")
	require.Equal(t, []pspsim.BehaviorView{{PixKey: "flaky", Behavior: pspsim.Behavior{Mode: pspsim.ModeFail, Times: 3}, Submissions: 4}},
		e.sim.Behaviors())
}

func TestFailWithoutTimesFailsEveryTime(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setBehavior(t, "down", `{"mode":"fail"}`)
	for range 5 {
		_, err := e.client.Submit(t.Context(), transfer(1, "down"))
		require.ErrorIs(t, err, psp.ErrTransient)
	}
	e.setBehavior(t, "down", `{"mode":"accept"}`)
	_, err := e.client.Submit(t.Context(), transfer(1, "down"))
	require.NoError(t, err)
	require.Equal(t, 6, e.view(t, id(1)).Received)
}

func TestTimeoutCreatesThenHangs(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setBehavior(t, "lost", `{"mode":"timeout","times":1,"delay":"5s"}`)
	tr := transfer(1, "lost")
	impatient := psp.NewHTTPClient(e.url, 100*time.Millisecond)

	_, err := impatient.Submit(t.Context(), tr)
	require.ErrorIs(t, err, psp.ErrTransient)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// The PSP processed the request whose answer was lost.
	v := e.view(t, tr.EndToEndID)
	require.Equal(t, psp.StatusPending, v.Status)
	require.Equal(t, 1, v.Received)

	// times is used up: the retry is answered, with the same transfer.
	r, err := impatient.Submit(t.Context(), tr)
	require.NoError(t, err)
	require.Equal(t, psp.Result{EndToEndID: tr.EndToEndID, Status: psp.StatusPending}, r)
	v = e.view(t, tr.EndToEndID)
	require.Equal(t, 2, v.Received)
	require.Equal(t, e.clock.Now(), v.CreatedAt)
}

func TestTimeoutEveryTimeUntilAccept(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setBehavior(t, "lost", `{"mode":"timeout"}`)
	tr := transfer(1, "lost")
	impatient := psp.NewHTTPClient(e.url, 50*time.Millisecond)

	for range 3 {
		_, err := impatient.Submit(t.Context(), tr)
		require.ErrorIs(t, err, psp.ErrTransient)
	}
	// Status is not subject to the behaviour.
	r, err := impatient.Status(t.Context(), tr.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, psp.StatusPending, r.Status)

	e.setBehavior(t, "lost", `{"mode":"accept"}`)
	r, err = impatient.Submit(t.Context(), tr)
	require.NoError(t, err)
	require.Equal(t, psp.StatusPending, r.Status)
	require.Equal(t, 4, e.view(t, tr.EndToEndID).Received, "four POSTs, one transfer")
}

func TestTimeoutAnswersAfterTheDelay(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setBehavior(t, "slow", `{"mode":"timeout","times":1,"delay":"50ms"}`)
	start := time.Now()
	r, err := e.client.Submit(t.Context(), transfer(1, "slow"))
	require.NoError(t, err)
	require.Equal(t, psp.StatusPending, r.Status)
	require.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
}

func TestReusedEndToEndID(t *testing.T) {
	t.Parallel()
	e := setup(t)
	tr := transfer(1, "maria@example.com")
	_, err := e.client.Submit(t.Context(), tr)
	require.NoError(t, err)

	for name, change := range map[string]func(*psp.Transfer){
		"amount":  func(t *psp.Transfer) { t.AmountCents++ },
		"pix key": func(t *psp.Transfer) { t.PixKey = "joao@example.com" },
		"account": func(t *psp.Transfer) { t.AccountID = "acc-2" },
	} {
		t.Run(name, func(t *testing.T) {
			other := tr
			change(&other)
			_, err := e.client.Submit(t.Context(), other)
			require.Equal(t, pspsim.CodeEndToEndIDReused, requestError(t, err, http.StatusConflict).Code)
			require.NotErrorIs(t, err, psp.ErrTransient)
		})
	}
	v := e.view(t, tr.EndToEndID)
	require.Equal(t, tr.AmountCents, v.AmountCents)
	require.Equal(t, tr.PixKey, v.PixKey)
	require.Equal(t, 4, v.Received)
}

func TestStatusOfUnknown(t *testing.T) {
	t.Parallel()
	e := setup(t)
	_, err := e.client.Status(t.Context(), id(404))
	require.ErrorIs(t, err, psp.ErrNotFound)

	code, body := do(t, http.MethodGet, e.url+"/transfers/"+id(404), "")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, pspsim.CodeTransferNotFound, errorCode(t, body))
}

func TestTransferView(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setBehavior(t, "no", `{"mode":"reject"}`)
	tr := transfer(1, "no")
	_, err := e.client.Submit(t.Context(), tr)
	require.NoError(t, err)

	code, body := do(t, http.MethodGet, e.url+"/transfers/"+tr.EndToEndID, "")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"end_to_end_id":"`+tr.EndToEndID+`","status":"rejected","reason":"receiver account closed",
		"amount_cents":1500,"pix_key":"no","account_id":"acc-1","received":1,"created_at":"2026-11-29T12:00:00Z"}`, string(body))
}

func TestConcurrentDuplicatesAreOneTransfer(t *testing.T) {
	t.Parallel()
	e := setup(t)
	tr := transfer(1, "maria@example.com")
	body, err := json.Marshal(tr)
	require.NoError(t, err)

	const n = 50
	codes := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			resp, err := http.Post(e.url+"/transfers", "application/json", bytes.NewReader(body))
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(codes)
	count := map[int]int{}
	for c := range codes {
		count[c]++
	}
	require.Equal(t, map[int]int{http.StatusCreated: 1, http.StatusOK: n - 1}, count)

	// Through the client as well: every one answered with the one transfer.
	results := make(chan error, n)
	for range n {
		wg.Go(func() {
			r, err := e.client.Submit(context.Background(), tr)
			if err == nil && r.EndToEndID != tr.EndToEndID {
				err = fmt.Errorf("result about %s", r.EndToEndID)
			}
			results <- err
		})
	}
	wg.Wait()
	close(results)
	for err := range results {
		require.NoError(t, err)
	}
	require.Equal(t, 2*n, e.view(t, tr.EndToEndID).Received)
}

func TestSubmitValidation(t *testing.T) {
	t.Parallel()
	e := setup(t)
	valid := func(mod string) string {
		return `{"end_to_end_id":"` + id(1) + `","account_id":"acc-1","amount_cents":100,"pix_key":"k"` + mod + `}`
	}
	for _, tc := range []struct{ name, body string }{
		{"short id", `{"end_to_end_id":"E123","amount_cents":100,"pix_key":"k"}`},
		{"long id", `{"end_to_end_id":"` + id(1) + `0","amount_cents":100,"pix_key":"k"}`},
		{"id without E", `{"end_to_end_id":"X` + id(1)[1:] + `","amount_cents":100,"pix_key":"k"}`},
		{"id with a dash", `{"end_to_end_id":"E-` + id(1)[2:] + `","amount_cents":100,"pix_key":"k"}`},
		{"no id", `{"amount_cents":100,"pix_key":"k"}`},
		{"zero amount", `{"end_to_end_id":"` + id(1) + `","amount_cents":0,"pix_key":"k"}`},
		{"negative amount", `{"end_to_end_id":"` + id(1) + `","amount_cents":-5,"pix_key":"k"}`},
		{"amount as string", `{"end_to_end_id":"` + id(1) + `","amount_cents":"100","pix_key":"k"}`},
		{"empty pix key", `{"end_to_end_id":"` + id(1) + `","amount_cents":100,"pix_key":""}`},
		{"unknown field", valid(`,"amount":100`)},
		{"trailing data", valid(``) + `{}`},
		{"malformed", `{"end_to_end_id":`},
		{"empty body", ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, http.MethodPost, e.url+"/transfers", tc.body)
			require.Equal(t, http.StatusBadRequest, code, "%s", body)
			require.Equal(t, pspsim.CodeInvalidRequest, errorCode(t, body))
		})
	}
	_, ok := e.sim.Transfer(id(1))
	require.False(t, ok, "an invalid submission creates nothing")

	// Through the client: a permanent *RequestError.
	tr := transfer(1, "k")
	tr.AmountCents = 0
	_, err := e.client.Submit(t.Context(), tr)
	require.Equal(t, "amount_cents must be positive", requestError(t, err, http.StatusBadRequest).Message)
}

func TestBehaviorAPI(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, body := range []string{
		`{"mode":"accept"}`,
		`{"mode":"accept","settle_after":"1s"}`,
		`{"mode":"reject","reason":"x"}`,
		`{"mode":"reject_later","settle_after":"200ms","reason":"x"}`,
		`{"mode":"fail","times":2}`,
		`{"mode":"timeout","times":1,"delay":"5s","settle_after":"1s"}`,
		`{"mode":"lose_response"}`,
		`{"mode":"lose_response","times":2,"settle_after":"1s"}`,
		`{"mode":"duplicate_conflict","times":1,"settle_after":"1s"}`,
		`{"mode":"unauthorized","times":3}`,
		`{"mode":"unauthorized","status_code":401}`,
		`{"mode":"unauthorized","status_code":403,"status_queries":true,"settle_after":"1s"}`,
		// Last: the listing below shows it as k's behaviour.
		`{"mode":"timeout","delay":"90s"}`,
	} {
		t.Run("ok "+body, func(t *testing.T) {
			code, resp := do(t, http.MethodPut, e.url+"/behaviors/k", body)
			require.Equal(t, http.StatusNoContent, code, "%s", resp)
		})
	}
	for _, body := range []string{
		`{}`,
		`{"mode":"explode"}`,
		`{"mode":"fail","times":-1}`,
		`{"mode":"accept","times":1}`,
		`{"mode":"accept","delay":"5s"}`,
		`{"mode":"accept","reason":"x"}`,
		`{"mode":"reject","settle_after":"1s"}`,
		`{"mode":"accept","settle_after":"-1s"}`,
		`{"mode":"accept","settle_after":"soon"}`,
		`{"mode":"timeout","delay":"91s"}`,
		`{"mode":"timeout","time":1}`,
		`{"mode":"timeout","delay":5}`,
		`{"mode":"lose_response","delay":"5s"}`,
		`{"mode":"duplicate_conflict","reason":"x"}`,
		`{"mode":"duplicate_conflict","times":-1}`,
		`{"mode":"unauthorized","status_code":500}`,
		`{"mode":"unauthorized","status_code":"401"}`,
		`{"mode":"accept","status_code":401}`,
		`{"mode":"fail","status_code":403}`,
		`{"mode":"timeout","status_queries":true}`,
		`{"mode":"reject","times":1}`,
		`{"mode":"lose-response"}`,
		`{"mode":`,
		``,
	} {
		t.Run("bad "+body, func(t *testing.T) {
			code, resp := do(t, http.MethodPut, e.url+"/behaviors/k", body)
			require.Equal(t, http.StatusBadRequest, code, "%s", resp)
			require.Equal(t, pspsim.CodeInvalidRequest, errorCode(t, resp))
		})
	}

	e.setBehavior(t, "b", `{"mode":"timeout","times":1,"delay":"5s"}`)
	e.setBehavior(t, "a", `{"mode":"reject","reason":"closed"}`)
	code, body := do(t, http.MethodGet, e.url+"/behaviors", "")
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"behaviors":[
		{"pix_key":"a","mode":"reject","reason":"closed","submissions":0},
		{"pix_key":"b","mode":"timeout","times":1,"delay":"5s","submissions":0},
		{"pix_key":"k","mode":"timeout","delay":"1m30s","submissions":0}]}`, string(body))

	code, _ = do(t, http.MethodDelete, e.url+"/behaviors/a", "")
	require.Equal(t, http.StatusNoContent, code)
	code, _ = do(t, http.MethodDelete, e.url+"/behaviors/never-set", "")
	require.Equal(t, http.StatusNoContent, code)
	r, err := e.client.Submit(t.Context(), transfer(1, "a"))
	require.NoError(t, err)
	require.Equal(t, psp.StatusPending, r.Status, "a key without behaviour accepts")
}

func TestBehaviorJSONRoundTrip(t *testing.T) {
	t.Parallel()
	b := pspsim.Behavior{Mode: pspsim.ModeTimeout, Times: 2, SettleAfter: 200 * time.Millisecond, Delay: 5 * time.Second}
	data, err := json.Marshal(b)
	require.NoError(t, err)
	require.JSONEq(t, `{"mode":"timeout","times":2,"settle_after":"200ms","delay":"5s"}`, string(data))
	var back pspsim.Behavior
	require.NoError(t, json.Unmarshal(data, &back))
	require.Equal(t, b, back)
}

func TestSetBehaviorValidates(t *testing.T) {
	t.Parallel()
	sim := pspsim.New(pspsim.Options{})
	require.Error(t, sim.SetBehavior("", pspsim.Behavior{Mode: pspsim.ModeAccept}))
	require.Error(t, sim.SetBehavior("k", pspsim.Behavior{Mode: "nope"}))
	require.NoError(t, sim.SetBehavior("k", pspsim.Behavior{Mode: pspsim.ModeFail, Times: 1}))
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	code, _ := do(t, http.MethodGet, e.url+"/healthz", "")
	require.Equal(t, http.StatusOK, code)

	code, body := do(t, http.MethodGet, e.url+"/nowhere", "")
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, pspsim.CodeNotFound, errorCode(t, body))

	code, body = do(t, http.MethodDelete, e.url+"/transfers/"+id(1), "")
	require.Equal(t, http.StatusMethodNotAllowed, code)
	require.Equal(t, pspsim.CodeMethodNotAllowed, errorCode(t, body))
}

// syncBuffer is a bytes.Buffer the server's goroutines can log into.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestOneLogLinePerRequest(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	sim := pspsim.New(pspsim.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(srv.Close)
	c := psp.NewHTTPClient(srv.URL, 5*time.Second)
	_, err := c.Submit(t.Context(), transfer(1, "k"))
	require.NoError(t, err)
	_, err = c.Status(t.Context(), id(1))
	require.NoError(t, err)

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 2)
	for _, l := range lines {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec))
		require.Equal(t, id(1), rec["end_to_end_id"], l)
	}
	require.Contains(t, lines[0], `"outcome":"created"`)
}

// TestServeShutsDownDespiteHangingRequests: a request hanging in timeout
// mode does not hold the shutdown for its delay.
func TestServeShutsDownDespiteHangingRequests(t *testing.T) {
	t.Parallel()
	sim := pspsim.New(pspsim.Options{})
	require.NoError(t, sim.SetBehavior("lost", pspsim.Behavior{Mode: pspsim.ModeTimeout, Delay: pspsim.MaxDelay}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- sim.Serve(ctx, ln) }()

	c := psp.NewHTTPClient("http://"+ln.Addr().String(), time.Minute)
	submitted := make(chan error, 1)
	go func() {
		_, err := c.Submit(t.Context(), transfer(1, "lost"))
		submitted <- err
	}()
	require.Eventually(t, func() bool { _, ok := sim.Transfer(id(1)); return ok }, 5*time.Second, 5*time.Millisecond)

	start := time.Now()
	cancel()
	requireReturned(t, served)
	require.Less(t, time.Since(start), 5*time.Second)
	require.ErrorIs(t, <-submitted, psp.ErrTransient, "the hanging request got no answer")
}

// The modes below are tested over raw HTTP rather than through
// psp.HTTPClient: what is under test is what the simulator answers (the
// status, the error code, no answer at all), whatever a client makes of it.

// post submits tr over raw HTTP (see send).
func post(t *testing.T, url string, tr psp.Transfer) (int, []byte, error) {
	t.Helper()
	body, err := json.Marshal(tr)
	require.NoError(t, err)
	return send(t, http.MethodPost, url+"/transfers", string(body))
}

func TestLoseResponseCreatesThenCuts(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setBehavior(t, "lost", `{"mode":"lose_response","times":2}`)
	tr := transfer(1, "lost")

	for n := 1; n <= 2; n++ {
		code, body, err := post(t, e.url, tr)
		require.Error(t, err, "submission %d was answered %d %s; want the connection cut", n, code, body)
		// The PSP processed it all the same: one transfer, pending.
		v := e.view(t, tr.EndToEndID)
		require.Equal(t, psp.StatusPending, v.Status)
		require.Equal(t, n, v.Received)
	}
	// times is used up: the resubmission is answered, with the same transfer.
	code, body, err := post(t, e.url, tr)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, "%s", body)
	require.JSONEq(t, `{"end_to_end_id":"`+tr.EndToEndID+`","status":"pending"}`, string(body))
	require.Equal(t, 3, e.view(t, tr.EndToEndID).Received)
	require.Equal(t, e.clock.Now(), e.view(t, tr.EndToEndID).CreatedAt, "created by the first, lost, submission")

	// A new transfer to the key is created and answered 201.
	code, _, err = post(t, e.url, transfer(2, "lost"))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, code)
	require.Equal(t, []pspsim.BehaviorView{{PixKey: "lost", Behavior: pspsim.Behavior{Mode: pspsim.ModeLoseResponse, Times: 2}, Submissions: 4}},
		e.sim.Behaviors())
}

func TestLoseResponseThroughTheClientIsTransient(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setBehavior(t, "lost", `{"mode":"lose_response","times":1}`)
	tr := transfer(1, "lost")
	_, err := e.client.Submit(t.Context(), tr)
	require.ErrorIs(t, err, psp.ErrTransient)
	r, err := e.client.Status(t.Context(), tr.EndToEndID)
	require.NoError(t, err, "status queries are not subject to the behaviour")
	require.Equal(t, psp.StatusPending, r.Status)
}

func TestLoseResponseEveryTimeUntilAccept(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setBehavior(t, "lost", `{"mode":"lose_response","settle_after":"1s"}`)
	tr := transfer(1, "lost")
	for range 3 {
		_, _, err := post(t, e.url, tr)
		require.Error(t, err)
	}
	e.clock.Advance(time.Second)
	require.Equal(t, psp.StatusSettled, e.view(t, tr.EndToEndID).Status, "settle_after of the behaviour that created it")

	e.setBehavior(t, "lost", `{"mode":"accept"}`)
	code, body, err := post(t, e.url, tr)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	require.JSONEq(t, `{"end_to_end_id":"`+tr.EndToEndID+`","status":"settled"}`, string(body))
	require.Equal(t, 4, e.view(t, tr.EndToEndID).Received, "four POSTs, one transfer")
	require.Len(t, e.sim.Transfers(), 1)
}

func TestDuplicateConflictEveryTime(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setBehavior(t, "dup", `{"mode":"duplicate_conflict"}`)
	tr := transfer(1, "dup")

	code, body, err := post(t, e.url, tr)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, code, "a first submission is created: %s", body)
	for range 3 {
		code, body, err = post(t, e.url, tr)
		require.NoError(t, err)
		require.Equal(t, http.StatusConflict, code, "%s", body)
		require.Equal(t, pspsim.CodeDuplicateTransfer, errorCode(t, body))
	}
	// The transfer is there, once, and its status is answered.
	e.clock.Advance(pspsim.DefaultSettleAfter)
	code, body = do(t, http.MethodGet, e.url+"/transfers/"+tr.EndToEndID, "")
	require.Equal(t, http.StatusOK, code)
	var v pspsim.TransferView
	require.NoError(t, json.Unmarshal(body, &v))
	require.Equal(t, psp.StatusSettled, v.Status)
	require.Equal(t, 4, v.Received)

	// Another payload under the end_to_end_id is still the other conflict.
	other := tr
	other.AmountCents++
	code, body, err = post(t, e.url, other)
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, code)
	require.Equal(t, pspsim.CodeEndToEndIDReused, errorCode(t, body))
	require.Equal(t, tr.AmountCents, e.view(t, tr.EndToEndID).AmountCents)

	require.Equal(t, []pspsim.BehaviorView{{PixKey: "dup", Behavior: pspsim.Behavior{Mode: pspsim.ModeDuplicateConflict},
		Submissions: 5, Resubmissions: 3}}, e.sim.Behaviors())
}

func TestDuplicateConflictTimesCountsResubmissions(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setBehavior(t, "dup", `{"mode":"duplicate_conflict","times":2}`)
	// Two first submissions: neither counts against times.
	for n := 1; n <= 2; n++ {
		code, _, err := post(t, e.url, transfer(n, "dup"))
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, code)
	}
	want := []int{http.StatusConflict, http.StatusConflict, http.StatusOK, http.StatusOK}
	for i, w := range want {
		code, body, err := post(t, e.url, transfer(1+i%2, "dup"))
		require.NoError(t, err)
		require.Equal(t, w, code, "resubmission %d: %s", i+1, body)
	}
}

// TestLostAnswerThenDuplicateConflict is the sequence of the fault suite's
// lost-response case: the PSP creates the transfer and the answer is lost;
// the bank's resubmission is answered 409, although the PSP holds (and
// settles) the transfer.
func TestLostAnswerThenDuplicateConflict(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setBehavior(t, "k", `{"mode":"lose_response"}`)
	tr := transfer(1, "k")
	_, _, err := post(t, e.url, tr)
	require.Error(t, err)

	e.setBehavior(t, "k", `{"mode":"duplicate_conflict"}`)
	code, body, err := post(t, e.url, tr)
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, code)
	require.Equal(t, pspsim.CodeDuplicateTransfer, errorCode(t, body))
	e.clock.Advance(pspsim.DefaultSettleAfter)
	require.Equal(t, psp.StatusSettled, e.view(t, tr.EndToEndID).Status)
}

func TestUnauthorizedCreatesNothing(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setBehavior(t, "k", `{"mode":"unauthorized","times":2}`)
	tr := transfer(1, "k")
	for range 2 {
		code, body, err := post(t, e.url, tr)
		require.NoError(t, err)
		require.Equal(t, http.StatusUnauthorized, code, "%s", body)
		require.Empty(t, body, "RFC 6750: the challenge is in WWW-Authenticate")
		_, ok := e.sim.Transfer(tr.EndToEndID)
		require.False(t, ok, "a refused submission creates nothing")
		code, _ = do(t, http.MethodGet, e.url+"/transfers/"+tr.EndToEndID, "")
		require.Equal(t, http.StatusNotFound, code)
	}
	code, _, err := post(t, e.url, tr)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, code)
	require.Equal(t, 3, e.view(t, tr.EndToEndID).Received, "the refused POSTs count too")
}

func TestUnauthorizedDoesNotTouchAHeldTransfer(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setBehavior(t, "k", `{"mode":"accept","settle_after":"1s"}`)
	tr := transfer(1, "k")
	code, _, err := post(t, e.url, tr)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, code)

	// Forbidden, every time, for the resubmission of a transfer it holds.
	e.setBehavior(t, "k", `{"mode":"unauthorized","status_code":403}`)
	for range 3 {
		code, body, err := post(t, e.url, tr)
		require.NoError(t, err)
		require.Equal(t, http.StatusForbidden, code)
		require.Equal(t, pspsim.ProblemAcessoNegado, problem(t, body).name)
	}
	// The transfer is untouched and settles; its status is answered.
	e.clock.Advance(time.Second)
	r, err := e.client.Status(t.Context(), tr.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, psp.StatusSettled, r.Status)
	v := e.view(t, tr.EndToEndID)
	require.Equal(t, tr.AmountCents, v.AmountCents)
	require.Equal(t, 4, v.Received)
}

func TestUnauthorizedStatusQueries(t *testing.T) {
	t.Parallel()
	e := setup(t)
	tr := transfer(1, "k")
	code, _, err := post(t, e.url, tr)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, code)

	e.setBehavior(t, "k", `{"mode":"unauthorized","times":1,"status_queries":true}`)
	code, body := do(t, http.MethodGet, e.url+"/transfers/"+tr.EndToEndID, "")
	require.Equal(t, http.StatusUnauthorized, code)
	require.Empty(t, body, "RFC 6750: the challenge is in WWW-Authenticate")
	// The god's-eye view is not an API call.
	require.Equal(t, psp.StatusPending, e.view(t, tr.EndToEndID).Status)
	// An unknown transfer is still 404: the key is unknown too.
	code, _ = do(t, http.MethodGet, e.url+"/transfers/"+id(2), "")
	require.Equal(t, http.StatusNotFound, code)

	// The one refused submission uses times up: queries are answered again.
	code, _, err = post(t, e.url, tr)
	require.NoError(t, err)
	require.Equal(t, http.StatusUnauthorized, code)
	code, _ = do(t, http.MethodGet, e.url+"/transfers/"+tr.EndToEndID, "")
	require.Equal(t, http.StatusOK, code)
}

func TestListTransfers(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setBehavior(t, "no", `{"mode":"reject"}`)
	for n, key := range []string{"yes", "no"} {
		code, _, err := post(t, e.url, transfer(2-n, key))
		require.NoError(t, err)
		require.NotZero(t, code)
	}
	code, body := do(t, http.MethodGet, e.url+"/transfers", "")
	require.Equal(t, http.StatusOK, code)
	var list struct {
		Transfers []pspsim.TransferView `json:"transfers"`
	}
	require.NoError(t, json.Unmarshal(body, &list))
	require.Len(t, list.Transfers, 2)
	require.Equal(t, id(1), list.Transfers[0].EndToEndID, "by end_to_end_id")
	require.Equal(t, psp.StatusRejected, list.Transfers[0].Status)
	require.Equal(t, id(2), list.Transfers[1].EndToEndID)
	require.Equal(t, "yes", list.Transfers[1].PixKey)
}

func TestNewBehaviorsJSONRoundTrip(t *testing.T) {
	t.Parallel()
	for _, b := range []pspsim.Behavior{
		{Mode: pspsim.ModeLoseResponse, Times: 1, SettleAfter: time.Second},
		{Mode: pspsim.ModeDuplicateConflict, Times: 3},
		{Mode: pspsim.ModeUnauthorized, Times: 2, StatusCode: http.StatusForbidden, StatusQueries: true},
	} {
		data, err := json.Marshal(b)
		require.NoError(t, err)
		var back pspsim.Behavior
		require.NoError(t, json.Unmarshal(data, &back))
		require.Equal(t, b, back, "%s", data)
		require.NoError(t, back.Validate())
	}
	data, err := json.Marshal(pspsim.Behavior{Mode: pspsim.ModeUnauthorized, StatusCode: 403, StatusQueries: true})
	require.NoError(t, err)
	require.JSONEq(t, `{"mode":"unauthorized","status_code":403,"status_queries":true}`, string(data))
}

// held is r as a status query answers it: with what the PSP holds.
func held(t psp.Transfer, r psp.Result) psp.Result {
	r.AmountCents, r.PixKey, r.AccountID = t.AmountCents, t.PixKey, t.AccountID
	return r
}
