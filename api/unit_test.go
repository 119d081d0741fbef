package api_test

// The unit tier: the router over an in-memory fake store and a fake
// Temporal, so that input validation, access control, error mapping and
// the probes are tested without PostgreSQL or Temporal (they run under
// go test -short). What only the database can tell (idempotency under
// concurrency, the books) stays in the PostgreSQL tests.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/reconcile"
	"github.com/pixbank/pix/saga/transfer"
)

// What production passes satisfies what the handlers ask for (*db.Store
// every saga's store: api.StoresOf does not compile otherwise).
var _ api.Temporal = client.Client(nil)

// fakeStore is the state of the in-memory stores, and the record of which
// of their methods were called. Each saga's handlers get their own fake,
// over one fakeStore (stores): it has only the methods of that saga's
// interface. fail, when set, is what every method but Ping and OutboxLag
// returns; panicIn names a method that panics.
type fakeStore struct {
	mu        sync.Mutex
	calls     []string
	fail      error
	pingErr   error
	panicIn   string
	inbox     map[string]pix.Notification
	credits   map[string]pix.Credit
	transfers map[uuid.UUID]pix.Transfer
	accounts  map[string]pix.Account
	keys      map[string]*fakeKey
}

type fakeKey struct {
	hash string
	resp *db.RecordedResponse
}

func newFakeStore() *fakeStore {
	return &fakeStore{
		inbox:     map[string]pix.Notification{},
		credits:   map[string]pix.Credit{},
		transfers: map[uuid.UUID]pix.Transfer{},
		accounts:  map[string]pix.Account{},
		keys:      map[string]*fakeKey{},
	}
}

// The fakes of each saga's handlers, over one fakeStore.
type (
	fakeWebhooks  struct{ *fakeStore }
	fakeCredits   struct{ *fakeStore }
	fakeAccounts  struct{ *fakeStore }
	fakeKeys      struct{ *fakeStore } // the Idempotency-Key layer, shared by the keyed creates
	fakeTransfers struct{ fakeKeys }
	fakeAdmin     struct{ *fakeStore }
	fakeProbe     struct{ *fakeStore }
)

// stores are the fakes of the handlers of package api over fs.
func (fs *fakeStore) stores() api.Stores {
	return api.Stores{Webhooks: fakeWebhooks{fs}, Credits: fakeCredits{fs}, Accounts: fakeAccounts{fs},
		Admin: fakeAdmin{fs}, Probe: fakeProbe{fs}}
}

// call records method; it returns fs.fail. The caller holds fs.mu.
func (fs *fakeStore) call(method string) error {
	fs.calls = append(fs.calls, method)
	if fs.panicIn == method {
		panic("fake store: " + method)
	}
	return fs.fail
}

// called is the methods called so far, in order.
func (fs *fakeStore) called() []string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return slices.Clone(fs.calls)
}

func (fs *fakeStore) addAccount(id string, balance int64) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.accounts[id] = pix.Account{ID: id, OwnerName: "Owner " + id, Status: pix.AccountActive, BalanceCents: balance}
}

func (fs *fakeStore) receive(n pix.Notification) (pix.Receipt, error) {
	if old, ok := fs.inbox[n.EndToEndID]; ok {
		if old.AccountID != n.AccountID || old.AmountCents != n.AmountCents || old.PixKey != n.PixKey || old.TxID != n.TxID {
			return pix.Receipt{}, pix.ErrPayloadMismatch
		}
		return pix.Receipt{EndToEndID: n.EndToEndID, Status: pix.StatusPending, Duplicate: true}, nil
	}
	fs.inbox[n.EndToEndID] = n
	return pix.Receipt{EndToEndID: n.EndToEndID, Status: pix.StatusPending}, nil
}

func (fs fakeWebhooks) Receive(_ context.Context, n pix.Notification) (pix.Receipt, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.call("Receive"); err != nil {
		return pix.Receipt{}, err
	}
	return fs.receive(n)
}

func (fs fakeWebhooks) ReceiveBatch(_ context.Context, ns []pix.Notification) ([]pix.Receipt, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.call("ReceiveBatch"); err != nil {
		return nil, err
	}
	rs := make([]pix.Receipt, 0, len(ns))
	for i, n := range ns {
		r, err := fs.receive(n)
		if err != nil {
			return nil, &pix.ItemError{Index: i, Err: err} // (the fake does not roll back)
		}
		rs = append(rs, r)
	}
	return rs, nil
}

func (fs fakeCredits) GetCredit(_ context.Context, id string) (pix.Credit, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.call("GetCredit"); err != nil {
		return pix.Credit{}, err
	}
	c, ok := fs.credits[id]
	if !ok {
		return pix.Credit{}, pix.ErrCreditNotFound
	}
	if c.Charge != nil {
		// A fresh copy, as a database read is: handlers may change it.
		charge := *c.Charge
		c.Charge = &charge
	}
	return c, nil
}

func (fs fakeTransfers) GetTransfer(_ context.Context, id uuid.UUID) (pix.Transfer, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.call("GetTransfer"); err != nil {
		return pix.Transfer{}, err
	}
	t, ok := fs.transfers[id]
	if !ok {
		return pix.Transfer{}, pix.ErrTransferNotFound
	}
	return t, nil
}

func (fs fakeAccounts) GetAccount(_ context.Context, id string) (pix.Account, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.call("GetAccount"); err != nil {
		return pix.Account{}, err
	}
	a, ok := fs.accounts[id]
	if !ok {
		return pix.Account{}, pix.ErrAccountNotFound
	}
	return a, nil
}

func (fs fakeKeys) ReserveKey(_ context.Context, caller string, key uuid.UUID, hash string, _ db.KeyPolicy) (*db.Reservation, *db.RecordedResponse, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.call("ReserveKey"); err != nil {
		return nil, nil, err
	}
	k := caller + "/" + key.String()
	if held, ok := fs.keys[k]; ok {
		switch {
		case held.hash != hash:
			return nil, nil, pix.ErrIdempotencyKeyReused
		case held.resp == nil:
			return nil, nil, &db.KeyInProgressError{RetryAfter: time.Second}
		}
		return nil, held.resp, nil
	}
	fs.keys[k] = &fakeKey{hash: hash}
	return &db.Reservation{Caller: caller, Key: key, Token: uuid.New()}, nil, nil
}

func (fs *fakeStore) record(r db.Reservation, status int, body []byte) {
	fs.keys[r.Caller+"/"+r.Key.String()].resp = &db.RecordedResponse{StatusCode: status, Body: body}
}

func (fs fakeTransfers) CreateTransfer(_ context.Context, r db.Reservation, t db.NewTransfer, render func(pix.Transfer) ([]byte, error)) (pix.Transfer, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.call("CreateTransfer"); err != nil {
		return pix.Transfer{}, err
	}
	a, ok := fs.accounts[t.AccountID]
	switch {
	case !ok:
		return pix.Transfer{}, pix.ErrAccountNotFound
	case a.BalanceCents < t.AmountCents:
		return pix.Transfer{}, pix.ErrInsufficientFunds
	}
	a.BalanceCents -= t.AmountCents
	fs.accounts[a.ID] = a
	out := pix.Transfer{ID: t.ID.String(), EndToEndID: t.EndToEndID, AccountID: t.AccountID, AmountCents: t.AmountCents,
		PixKey: t.PixKey, Status: "debited", BalanceAfterCents: a.BalanceCents, CreatedAt: time.Now()}
	if t.Description != "" {
		out.Description = &t.Description
	}
	body, err := render(out)
	if err != nil {
		return pix.Transfer{}, err
	}
	fs.transfers[t.ID] = out
	fs.record(r, http.StatusCreated, body)
	return out, nil
}

func (fs fakeKeys) RecordResponse(_ context.Context, r db.Reservation, status int, body []byte) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.call("RecordResponse"); err != nil {
		return err
	}
	fs.record(r, status, body)
	return nil
}

func (fs fakeKeys) ReleaseKey(_ context.Context, r db.Reservation) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.call("ReleaseKey"); err != nil {
		return err
	}
	delete(fs.keys, r.Caller+"/"+r.Key.String())
	return nil
}

func (fs fakeAdmin) Redrive(_ context.Context, id string) (int, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.call("Redrive"); err != nil {
		return 0, err
	}
	c, ok := fs.credits[id]
	switch {
	case !ok:
		return 0, pix.ErrCreditNotFound
	case c.Status != pix.StatusFailed:
		return 0, fmt.Errorf("%w: it is %s", pix.ErrNotFailed, c.Status)
	}
	c.Status = pix.StatusPending
	fs.credits[id] = c
	return c.Attempts, nil
}

func (fs fakeAdmin) RedriveFailed(_ context.Context, accountID string) ([]db.Redriven, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.call("RedriveFailed"); err != nil {
		return nil, err
	}
	return nil, nil
}

func (fs fakeAdmin) FailedCredits(_ context.Context, accountID string, _ *db.FailedKey, limit int) ([]pix.Credit, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.call("FailedCredits"); err != nil {
		return nil, err
	}
	return []pix.Credit{}, nil
}

// Reconcile is the reconciliation's route's store (saga/reconcile).
func (fs fakeAdmin) Reconcile(context.Context) (reconcile.Reconciliation, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.call("Reconcile"); err != nil {
		return reconcile.Reconciliation{}, err
	}
	return reconcile.Reconciliation{}, nil
}

func (fs fakeProbe) Ping(context.Context) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.calls = append(fs.calls, "Ping")
	return fs.pingErr
}

func (fs fakeProbe) OutboxLag(context.Context) (db.OutboxLag, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.calls = append(fs.calls, "OutboxLag")
	return db.OutboxLag{Unpublished: 3, OldestAge: 1.5}, nil
}

// fakeTemporal answers that no workflow run exists, or err; health is
// healthErr.
type fakeTemporal struct {
	err, healthErr error
}

func (f fakeTemporal) DescribeWorkflow(context.Context, string, string) (*client.WorkflowExecutionDescription, error) {
	if f.err != nil {
		return nil, f.err
	}
	return nil, serviceerror.NewNotFound("workflow not found")
}

func (f fakeTemporal) CheckHealth(context.Context, *client.CheckHealthRequest) (*client.CheckHealthResponse, error) {
	if f.healthErr != nil {
		return nil, f.healthErr
	}
	return &client.CheckHealthResponse{}, nil
}

// newUnitServer serves the router over the fakes of fs (stores) and a
// healthy fake Temporal, configured like newServer's; tune changes the
// dependencies.
func newUnitServer(t *testing.T, fs *fakeStore, tune ...func(*api.Deps)) *httptest.Server {
	t.Helper()
	return newServerOf(t, fs.stores(), append([]func(*api.Deps){func(d *api.Deps) {
		d.Temporal = fakeTemporal{}
		d.Sagas = sagasOf(fakeTransfers{fakeKeys{fs}}, newFakeRefunds(fs), fakeAdmin{fs})
	}}, tune...)...)
}

// unitTokens are the bearer tokens of the access-control unit tests.
var unitTokens = fakeTokens{
	"tok-a":     {Subject: "sub-a", Scopes: []string{auth.ScopeRead, auth.ScopeWrite}, Accounts: []string{"acc-a"}},
	"tok-read":  {Subject: "sub-r", Scopes: []string{auth.ScopeRead}, Accounts: []string{"acc-a"}},
	"tok-write": {Subject: "sub-w", Scopes: []string{auth.ScopeWrite}, Accounts: []string{"acc-a"}},
	"tok-admin": {Subject: "ops", Scopes: []string{auth.ScopeAdmin}},
}

func withTokens(d *api.Deps) { d.OpenCustomerRoutes = false; d.Tokens = unitTokens }

// requireError checks an attackReply's status and error code, and returns
// the error's message.
func requireError(t *testing.T, r attackReply, status int, code string) string {
	t.Helper()
	require.Equal(t, status, r.status, r.raw)
	var body api.ErrorBody
	require.NoError(t, json.Unmarshal([]byte(r.raw), &body), r.raw)
	require.Equal(t, code, body.Error.Code, r.raw)
	return body.Error.Message
}

func TestUnitWebhookRefusesInvalidInput(t *testing.T) {
	fs := newFakeStore()
	srv := newUnitServer(t, fs)
	url := srv.URL + "/webhooks/pix"
	requireWebhookRefusals(t, url)
	require.Empty(t, fs.called(), "no refused webhook reached the store")

	// The control: a valid body is stored, once.
	r := do(t, http.MethodPost, url, "application/json", nativeWebhookBody(t, "payer", `{"name":"A","ispb":"12345678"}`))
	require.Equal(t, http.StatusAccepted, r.status, "%v", r.body)
	require.Equal(t, map[string]any{"end_to_end_id": validID, "status": "pending", "duplicate": false}, r.body)
	require.Equal(t, []string{"Receive"}, fs.called())
	// A store refusal is the store's: mapped, not re-validated.
	r = do(t, http.MethodPost, url, "application/json", nativeWebhookBody(t, "amount_cents", `15001`))
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%v", r.body)
	code, _ := errorOf(t, r)
	require.Equal(t, api.CodePayloadMismatch, code)
}

func TestUnitAPIPixRefusesInvalidInput(t *testing.T) {
	fs := newFakeStore()
	srv := newUnitServer(t, fs)
	url := srv.URL + apiPixPath
	requireAPIPixRefusals(t, url)
	require.Empty(t, fs.called(), "no refused webhook reached the store")

	// The control, then a mismatch in the second item: the item's index is told.
	second := "E1234567820261129120000000000002"
	r := do(t, http.MethodPost, url, "application/json", batch(apiPixItem(t, validID, nil), apiPixItem(t, second, nil)))
	require.Equal(t, http.StatusOK, r.status, "%v", r.body)
	require.Len(t, r.body["pix"], 2)
	r = do(t, http.MethodPost, url, "application/json", batch(apiPixItem(t, validID, nil), apiPixItem(t, second, map[string]string{"valor": `"1.00"`})))
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%v", r.body)
	code, msg := errorOf(t, r)
	require.Equal(t, api.CodePayloadMismatch, code)
	require.True(t, strings.HasPrefix(msg, "pix[1]:"), msg)
	require.Equal(t, []string{"ReceiveBatch", "ReceiveBatch"}, fs.called())
}

func TestUnitTransferRefusals(t *testing.T) {
	fs := newFakeStore()
	fs.addAccount("acc-1", 1_000)
	srv := newUnitServer(t, fs)

	t.Run("idempotency key", func(t *testing.T) {
		for _, k := range badIdempotencyKeys {
			r := postPix(t, srv.URL, k.key, transferBody(t, "acc-1", 1))
			require.Equal(t, http.StatusBadRequest, r.status, k.name)
			require.Equal(t, k.code, r.body["error"].(map[string]any)["code"], k.name)
		}
		require.Empty(t, fs.called(), "a refused key reaches no store")
	})
	t.Run("content type and size", func(t *testing.T) {
		r := attackSend(t, http.MethodPost, srv.URL+"/pix", "", uuid.NewString(), "")
		requireError(t, r, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType)
		big := `{"account_id":"acc-1","amount_cents":1,"pix_key":"k","description":"` + strings.Repeat("x", transfer.MaxBodyBytes) + `"}`
		r = attackSend(t, http.MethodPost, srv.URL+"/pix", "", uuid.NewString(), big)
		requireError(t, r, http.StatusRequestEntityTooLarge, api.CodePayloadTooLarge)
		require.Empty(t, fs.called())
	})
	for _, b := range invalidTransferBodies {
		t.Run(b.name, func(t *testing.T) { requireRefusalReplayed(t, srv.URL, b.body, api.CodeInvalidRequest) })
	}
	t.Run("store refusals are recorded", func(t *testing.T) {
		for body, code := range map[string]string{
			transferBody(t, "acc-1", 1_001):  api.CodeInsufficientFunds,
			transferBody(t, "acc-none", 100): api.CodeAccountNotFound,
		} {
			key := uuid.NewString()
			r := postPix(t, srv.URL, key, body)
			require.Equal(t, http.StatusUnprocessableEntity, r.status, "%v", r.body)
			require.Equal(t, code, r.body["error"].(map[string]any)["code"])
			require.True(t, postPix(t, srv.URL, key, body).replay)
		}
	})
	t.Run("created, replayed, key reused", func(t *testing.T) {
		key := uuid.NewString()
		r := postPix(t, srv.URL, key, transferBody(t, "acc-1", 400))
		require.Equal(t, http.StatusCreated, r.status, "%v", r.body)
		require.EqualValues(t, 600, r.body["balance_after_cents"])
		require.Equal(t, "pix-transfer:"+r.body["id"].(string), r.body["workflow_id"])
		again := postPix(t, srv.URL, key, transferBody(t, "acc-1", 400))
		require.True(t, again.replay)
		require.Equal(t, r.body, again.body)
		reused := postPix(t, srv.URL, key, transferBody(t, "acc-1", 401))
		require.Equal(t, http.StatusUnprocessableEntity, reused.status)
		require.Equal(t, api.CodeIdempotencyKeyReused, reused.body["error"].(map[string]any)["code"])
	})
	t.Run("technical failure frees the key", func(t *testing.T) {
		key := uuid.NewString()
		before := len(fs.called())
		// ReserveKey succeeds, CreateTransfer fails: the key is released.
		failing := failAfterReserve{fakeTransfers{fakeKeys{fs}}}
		srv := newUnitServer(t, fs, func(d *api.Deps) { d.Sagas = sagasOf(failing, newFakeRefunds(fs), fakeAdmin{fs}) })
		r := postPix(t, srv.URL, key, transferBody(t, "acc-1", 1))
		require.Equal(t, http.StatusInternalServerError, r.status, "%v", r.body)
		require.Equal(t, map[string]any{"error": map[string]any{"code": api.CodeInternal, "message": "internal error"}}, r.body)
		require.Equal(t, []string{"ReserveKey", "ReleaseKey"}, fs.called()[before:])
	})
}

// failAfterReserve is the transfers' fake with CreateTransfer failing
// technically.
type failAfterReserve struct{ fakeTransfers }

func (failAfterReserve) CreateTransfer(context.Context, db.Reservation, db.NewTransfer, func(pix.Transfer) ([]byte, error)) (pix.Transfer, error) {
	return pix.Transfer{}, errors.New("injected: disk on fire at 10.0.0.7")
}

func TestUnitAccessControl(t *testing.T) {
	fs := newFakeStore()
	fs.addAccount("acc-a", 100_000)
	fs.addAccount("acc-b", 100_000)
	accA, accB := "acc-a", "acc-b"
	creditA, creditB, missingCredit := validID, "E1234567820261129120000000000002", "E1234567820261129120000000000003"
	fs.credits[creditA] = pix.Credit{EndToEndID: creditA, AccountID: &accA, AmountCents: 1, Status: pix.StatusPending}
	fs.credits[creditB] = pix.Credit{EndToEndID: creditB, AccountID: &accB, AmountCents: 1, Status: pix.StatusPending}
	transferA, transferB := uuid.New(), uuid.New()
	fs.transfers[transferA] = pix.Transfer{ID: transferA.String(), AccountID: accA, AmountCents: 1}
	fs.transfers[transferB] = pix.Transfer{ID: transferB.String(), AccountID: accB, AmountCents: 1}
	srv := newUnitServer(t, fs, withTokens)

	reads := []string{"/pix/transfers/" + transferA.String(), "/pix/credits/" + creditA, "/accounts/acc-a"}
	t.Run("no token: 401 with a challenge", func(t *testing.T) {
		for _, path := range append([]string{"/pix"}, reads...) {
			method := http.MethodGet
			if path == "/pix" {
				method = http.MethodPost
			}
			r := attackSend(t, method, srv.URL+path, "", uuid.NewString(), "")
			requireError(t, r, http.StatusUnauthorized, api.CodeUnauthorized)
			require.True(t, strings.HasPrefix(r.headers.Get("WWW-Authenticate"), "Bearer realm="), "%s: %q", path, r.headers.Get("WWW-Authenticate"))
		}
	})
	t.Run("invalid token", func(t *testing.T) {
		r := attackSend(t, http.MethodGet, srv.URL+reads[2], "tok-forged", "", "")
		requireError(t, r, http.StatusUnauthorized, api.CodeUnauthorized)
		require.Contains(t, r.headers.Get("WWW-Authenticate"), `error="invalid_token"`)
	})
	t.Run("insufficient scope: 403", func(t *testing.T) {
		r := attackSend(t, http.MethodPost, srv.URL+"/pix", "tok-read", uuid.NewString(), transferBody(t, "acc-a", 1))
		requireError(t, r, http.StatusForbidden, api.CodeInsufficientScope)
		require.Contains(t, r.headers.Get("WWW-Authenticate"), `error="insufficient_scope"`)
		require.Contains(t, r.headers.Get("WWW-Authenticate"), auth.ScopeWrite)
		for _, path := range reads {
			r := attackSend(t, http.MethodGet, srv.URL+path, "tok-write", "", "")
			requireError(t, r, http.StatusForbidden, api.CodeInsufficientScope)
		}
		r = attackSend(t, http.MethodGet, srv.URL+"/admin/reconcile", "tok-a", "", "")
		requireError(t, r, http.StatusForbidden, api.CodeInsufficientScope)
	})
	require.Empty(t, fs.called(), "no refused request reached the store")

	t.Run("forbidden account: nothing reaches the store", func(t *testing.T) {
		r := attackSend(t, http.MethodPost, srv.URL+"/pix", "tok-a", uuid.NewString(), transferBody(t, "acc-b", 1))
		requireError(t, r, http.StatusForbidden, api.CodeForbiddenAccount)
		require.Contains(t, r.headers.Get("WWW-Authenticate"), `error="insufficient_scope"`)
		require.Empty(t, fs.called(), "not even the Idempotency-Key was reserved")
	})
	t.Run("another account's resources look missing", func(t *testing.T) {
		pairs := []struct{ other, missing string }{
			{"/pix/transfers/" + transferB.String(), "/pix/transfers/" + uuid.NewString()},
			{"/pix/credits/" + creditB, "/pix/credits/" + missingCredit},
			{"/accounts/acc-b", "/accounts/acc-none"},
		}
		for _, p := range pairs {
			other := attackSend(t, http.MethodGet, srv.URL+p.other, "tok-a", "", "")
			missing := attackSend(t, http.MethodGet, srv.URL+p.missing, "tok-a", "", "")
			require.Equal(t, http.StatusNotFound, other.status, "%s: %s", p.other, other.raw)
			require.Equal(t, missing.status, other.status, p.other)
			require.Equal(t, missing.raw, other.raw, p.other)
		}
		require.NotContains(t, fs.called(), "GetAccount", "another's account is not even looked up")
	})
	t.Run("own resources", func(t *testing.T) {
		for _, path := range reads {
			r := attackSend(t, http.MethodGet, srv.URL+path, "tok-a", "", "")
			require.Equal(t, http.StatusOK, r.status, "%s: %s", path, r.raw)
		}
		r := attackSend(t, http.MethodPost, srv.URL+"/pix", "tok-a", uuid.NewString(), transferBody(t, "acc-a", 1))
		require.Equal(t, http.StatusCreated, r.status, r.raw)
		require.Equal(t, http.StatusOK, attackSend(t, http.MethodGet, srv.URL+"/admin/reconcile", "tok-admin", "", "").status)
	})
}

// Each error the store can return has one status and code; a 5xx never
// carries the error's text.
func TestUnitErrorMapping(t *testing.T) {
	const secret = "password=hunter2 host=10.0.0.7"
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{pix.ErrPayloadMismatch, http.StatusUnprocessableEntity, api.CodePayloadMismatch},
		{pix.ErrCreditNotFound, http.StatusNotFound, api.CodeCreditNotFound},
		{pix.ErrAccountNotFound, http.StatusNotFound, api.CodeAccountNotFound},
		{pix.ErrNotFailed, http.StatusConflict, api.CodeNotFailed},
		{pix.ErrInsufficientFunds, http.StatusUnprocessableEntity, api.CodeInsufficientFunds},
		{pix.ErrAccountClosed, http.StatusUnprocessableEntity, api.CodeAccountClosed},
		{pix.ErrIdempotencyKeyReused, http.StatusUnprocessableEntity, api.CodeIdempotencyKeyReused},
		{pix.ErrRequestInProgress, http.StatusConflict, api.CodeRequestInProgress},
		{&db.KeyInProgressError{RetryAfter: 2500 * time.Millisecond}, http.StatusConflict, api.CodeRequestInProgress},
		{pix.ErrTransferNotFound, http.StatusNotFound, api.CodeTransferNotFound},
		{pix.Invalid("account_id", "bad"), http.StatusBadRequest, api.CodeInvalidRequest},
		{fmt.Errorf("query: %w", pix.ErrCreditNotFound), http.StatusNotFound, api.CodeCreditNotFound},
		{fmt.Errorf("dial %s: %w", secret, pix.ErrUnavailable), http.StatusServiceUnavailable, api.CodeUnavailable},
		{context.DeadlineExceeded, http.StatusInternalServerError, api.CodeInternal},
		{errors.New(secret), http.StatusInternalServerError, api.CodeInternal},
		// Refusals of the credit path never meant for an HTTP client.
		{pix.ErrPixKeyNotFound, http.StatusInternalServerError, api.CodeInternal},
		{pix.ErrChargeNotFound, http.StatusInternalServerError, api.CodeInternal},
		{pix.ErrNotPending, http.StatusInternalServerError, api.CodeInternal},
		{pix.ErrSuperseded, http.StatusInternalServerError, api.CodeInternal},
		{fmt.Errorf("%s: %w", secret, pix.ErrBalanceOverflow), http.StatusInternalServerError, api.CodeInternal},
		{pix.ErrTransferFinal, http.StatusInternalServerError, api.CodeInternal},
	}
	fs := newFakeStore()
	srv := newUnitServer(t, fs)
	for _, tc := range cases {
		t.Run(tc.err.Error(), func(t *testing.T) {
			fs.mu.Lock()
			fs.fail = tc.err
			fs.mu.Unlock()
			r := attackSend(t, http.MethodGet, srv.URL+"/accounts/acc-1", "", "", "")
			msg := requireError(t, r, tc.status, tc.code)
			require.NotEmpty(t, msg)
			if tc.status >= 500 {
				require.NotContains(t, r.raw, "hunter2")
				require.NotContains(t, r.raw, "10.0.0.7")
				require.NotContains(t, msg, tc.err.Error())
			}
			switch tc.status {
			case http.StatusServiceUnavailable:
				require.Equal(t, "1", r.headers.Get("Retry-After"))
			case http.StatusConflict:
				if tc.code == api.CodeRequestInProgress {
					want := "1"
					if errors.As(tc.err, new(*db.KeyInProgressError)) {
						want = "3" // 2.5s rounded up
					}
					require.Equal(t, want, r.headers.Get("Retry-After"))
				}
			}
		})
	}
}

func TestUnitReadiness(t *testing.T) {
	const secret = "password=hunter2"
	t.Run("ready", func(t *testing.T) {
		srv := newUnitServer(t, newFakeStore())
		r := do(t, http.MethodGet, srv.URL+"/readyz", "", "")
		require.Equal(t, http.StatusOK, r.status, "%v", r.body)
		require.Equal(t, map[string]any{"postgres": "ok", "temporal": "ok",
			"outbox": map[string]any{"unpublished": 3.0, "oldest_age_seconds": 1.5}}, r.body["checks"])
	})
	for name, tc := range map[string]struct {
		ping, health error
		down         string
	}{
		"postgres down": {ping: errors.New(secret), down: "postgres"},
		"temporal down": {health: errors.New(secret), down: "temporal"},
	} {
		t.Run(name, func(t *testing.T) {
			fs := newFakeStore()
			fs.pingErr = tc.ping
			srv := newUnitServer(t, fs, func(d *api.Deps) { d.Temporal = fakeTemporal{healthErr: tc.health} })
			r := attackSend(t, http.MethodGet, srv.URL+"/readyz", "", "", "")
			requireError(t, r, http.StatusServiceUnavailable, api.CodeNotReady)
			require.NotContains(t, r.raw, "hunter2")
			var body struct{ Checks map[string]any }
			require.NoError(t, json.Unmarshal([]byte(r.raw), &body))
			require.Equal(t, "unreachable", body.Checks[tc.down], r.raw)
		})
	}
	t.Run("draining", func(t *testing.T) {
		fs := newFakeStore()
		srv := newUnitServer(t, fs, func(d *api.Deps) { d.Draining = func() bool { return true } })
		requireError(t, attackSend(t, http.MethodGet, srv.URL+"/readyz", "", "", ""), http.StatusServiceUnavailable, api.CodeNotReady)
		require.Empty(t, fs.called(), "a draining process asks nothing")
	})
}

func TestUnitPanicIsA500Envelope(t *testing.T) {
	fs := newFakeStore()
	fs.addAccount("acc-1", 7)
	fs.panicIn = "GetAccount"
	srv := newUnitServer(t, fs)
	r := attackSend(t, http.MethodGet, srv.URL+"/accounts/acc-1", "", "", "")
	require.Equal(t, http.StatusInternalServerError, r.status, r.raw)
	require.JSONEq(t, `{"error":{"code":"internal_error","message":"internal error"}}`, r.raw)
	require.NotContains(t, r.raw, "fake store")

	// The server goes on serving.
	fs.mu.Lock()
	fs.panicIn = ""
	fs.mu.Unlock()
	r = attackSend(t, http.MethodGet, srv.URL+"/accounts/acc-1", "", "", "")
	require.Equal(t, http.StatusOK, r.status, r.raw)
}

// GET /pix/credits/{id}: the workflow's status as the fake Temporal says,
// and what a customer is not told.
func TestUnitCreditView(t *testing.T) {
	fs := newFakeStore()
	acc, reason := "acc-1", "ledger said no: internal detail"
	fs.credits[validID] = pix.Credit{EndToEndID: validID, AccountID: &acc, AmountCents: 5, Status: pix.StatusFailed, LastError: &reason,
		Charge: &pix.ChargeView{TxID: "t1", Outcome: db.ChargeOtherAccount}}
	srv := newUnitServer(t, fs)
	r := do(t, http.MethodGet, srv.URL+"/pix/credits/"+validID, "", "")
	require.Equal(t, http.StatusOK, r.status, "%v", r.body)
	require.Equal(t, "none", r.body["workflow_status"])
	require.Nil(t, r.body["last_error"])
	require.Equal(t, db.ChargeUnknown, r.body["charge"].(map[string]any)["outcome"])

	r = do(t, http.MethodGet, srv.URL+"/admin/pix/credits/"+validID, "", "")
	require.Equal(t, http.StatusOK, r.status, "%v", r.body)
	require.Equal(t, reason, r.body["last_error"])
	require.Equal(t, db.ChargeOtherAccount, r.body["charge"].(map[string]any)["outcome"])

	down := newUnitServer(t, fs, func(d *api.Deps) { d.Temporal = fakeTemporal{err: errors.New("connection refused")} })
	r = do(t, http.MethodGet, down.URL+"/pix/credits/"+validID, "", "")
	require.Equal(t, http.StatusOK, r.status, "the row is the answer")
	require.Equal(t, "unknown", r.body["workflow_status"])

	r = do(t, http.MethodPost, srv.URL+"/admin/pix/credits/"+validID+"/retry", "", "")
	require.Equal(t, http.StatusAccepted, r.status, "%v", r.body)
	r = do(t, http.MethodPost, srv.URL+"/admin/pix/credits/"+validID+"/retry", "", "")
	require.Equal(t, http.StatusConflict, r.status, "pending now: %v", r.body)
}
