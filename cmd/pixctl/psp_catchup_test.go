package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/saga/catchup"
)

// pspRecord is a PSP's API Pix answering GET /pix (the spec's
// PixConsultados, one page) with the PIX the test puts in it.
type pspRecord struct {
	mu    sync.Mutex
	items []map[string]any
}

func (p *pspRecord) add(item map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.items = append(p.items, item)
}

func (p *pspRecord) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || r.URL.Path != "/pix" {
		http.NotFound(w, r)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	page, _ := strconv.Atoi(r.URL.Query().Get("paginacao.paginaAtual"))
	perPage, _ := strconv.Atoi(r.URL.Query().Get("paginacao.itensPorPagina"))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"parametros": map[string]any{"inicio": r.URL.Query().Get("inicio"), "fim": r.URL.Query().Get("fim"),
			"paginacao": map[string]any{"paginaAtual": page, "itensPorPagina": perPage, "quantidadeDePaginas": 1, "quantidadeTotalDeItens": len(p.items)}},
		"pix": p.items,
	})
}

// runWorkerOf runs pixd's worker (no schedule of the catch-up) on a Temporal
// dev server and a database of the test's own, calling the PSP at pspURL;
// it returns the environment pixctl needs to reach it, and the store.
func runWorkerOf(t *testing.T, pspURL string) (func(string) string, *db.Store) {
	t.Helper()
	cfg := config.Default()
	cfg.PSPURL = pspURL
	cfg.DatabaseURL = dbtest.URL(t)
	cfg.TemporalAddress = temporaltest.StartT(t).Address
	cfg.DispatchPollInterval = 100 * time.Millisecond
	cfg.OutboxRelayEnabled = false
	onlyAsked := app.WithSettings(map[string]string{"PSP_CATCHUP_INTERVAL": "0", "MED_DICT_DISABLED": "true"}) // only the window pixctl asks for
	a, err := app.New(context.Background(), cfg, logging.New(io.Discard, "error"), onlyAsked)
	require.NoError(t, err)
	require.NoError(t, a.Migrate(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	var g errgroup.Group
	g.Go(func() error { return a.RunWorker(ctx) })
	t.Cleanup(func() {
		cancel()
		require.NoError(t, g.Wait())
		a.Close()
	})
	return env("TEMPORAL_ADDRESS", cfg.TemporalAddress), a.Store
}

// A window asked for by an operator stores and credits the PIX the PSP's
// record lists and no webhook told of; a PIX stored with another amount is
// reported (exit 1); the scheduled catch-up's covered window is moved only
// by a window that starts at or before its end, and pixctl says which.
func TestPSPCatchUpListsAWindowOnDemand(t *testing.T) {
	record := &pspRecord{}
	psp := httptest.NewServer(record)
	defer psp.Close()
	getenv, store := runWorkerOf(t, psp.URL)
	ctx := context.Background()
	_, err := store.CreateAccount(ctx, db.NewAccount{ID: "acc-outage", OwnerName: "O"})
	require.NoError(t, err)
	_, err = store.CreatePixKey(ctx, db.NewPixKey{Key: "outage@example.com", KeyType: "email", AccountID: "acc-outage"})
	require.NoError(t, err)
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	lost := fmt.Sprintf("E%031d", time.Now().UnixNano()%1e15)
	record.add(map[string]any{"endToEndId": lost, "chave": "outage@example.com", "valor": "25.00", "horario": at.Format(time.RFC3339)})
	window := []string{"psp", "catchup", "-from", "2026-11-20T00:00:00Z", "-to", "2026-11-21T00:00:00Z"}

	r := pixctl(t, getenv, window...)
	r.requireStatus(t, 0)
	for _, want := range []string{`listed\s+1`, `new\s+1`, `duplicate\s+0`, `mismatched\s+0`, `refused\s+0`,
		`workflow\s+pix-psp-catchup-window:pix-credit:2026-11-20T00:00:00Z/2026-11-21T00:00:00Z`} {
		require.Regexp(t, regexp.MustCompile(want), r.stdout)
	}
	waitStatus(t, store, lost, pix.StatusDone)
	account, err := store.GetAccount(ctx, "acc-outage")
	require.NoError(t, err)
	require.EqualValues(t, 2500, account.BalanceCents)
	require.Regexp(t, `covered end\s+not moved: the window starts after it \(or none was ever covered\)`, r.stdout)
	_, covered, err := catchup.NewStore(store).CoveredUntil(ctx)
	require.NoError(t, err)
	require.False(t, covered, "an operator's window moves no covered window when none was covered (the lookback would be skipped)")

	// The schedule covered up to 06:00 that day: the window from before
	// it moves it to the window's end, and says so.
	_, err = catchup.NewStore(store).Advance(ctx, nil, at.Add(-4*time.Hour))
	require.NoError(t, err)
	r = pixctl(t, getenv, window...)
	r.requireStatus(t, 0)
	require.Regexp(t, `covered end\s+advanced to 2026-11-21T00:00:00Z`, r.stdout)
	until, _, err := catchup.NewStore(store).CoveredUntil(ctx)
	require.NoError(t, err)
	require.True(t, until.Equal(at.Add(14*time.Hour)), "covered until %s", until)

	// Asked again: a duplicate; and a PIX stored with another amount is
	// reported, never credited twice.
	mismatched := fmt.Sprintf("E%031d", time.Now().UnixNano()%1e15+1)
	_, err = store.ReceiveBatch(ctx, []pix.Notification{{EndToEndID: mismatched, Source: pix.SourceAPIPix, PixKey: "outage@example.com",
		AmountCents: 100, Payload: json.RawMessage(`{}`)}})
	require.NoError(t, err)
	record.add(map[string]any{"endToEndId": mismatched, "chave": "outage@example.com", "valor": "9999.00", "horario": at.Format(time.RFC3339)})
	r = pixctl(t, getenv, append(window, "-o", "json")...)
	r.requireStatus(t, cli.ExitProblem)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Equal(t, map[string]any{"workflow_id": "pix-psp-catchup-window:pix-credit:2026-11-20T00:00:00Z/2026-11-21T00:00:00Z",
		"from": "2026-11-20T00:00:00Z", "to": "2026-11-21T00:00:00Z",
		"parts": 1.0, "pages": 1.0, "listed": 2.0, "new": 0.0, "duplicate": 1.0, "mismatched": 1.0, "refused": 0.0,
		"advanced_covered_end": false}, got, "the covered end is at the window's end already")
	require.Contains(t, r.stderr, "1 mismatched")
}

// The window's bounds are the caller's to get right: exit 2, nothing asked.
func TestPSPCatchUpUsage(t *testing.T) {
	nowhere := env("TEMPORAL_ADDRESS", "127.0.0.1:1")
	for _, args := range [][]string{
		{"psp", "catchup"},
		{"psp", "catchup", "-from", "2026-11-20T00:00:00Z"},
		{"psp", "catchup", "-from", "yesterday", "-to", "2026-11-21T00:00:00Z"},
		{"psp", "catchup", "-from", "2026-11-21T00:00:00Z", "-to", "2026-11-20T00:00:00Z"},
		{"psp", "catchup", "-from", "2026-11-20T00:00:00Z", "-to", "2026-11-21T00:00:00Z", "extra"},
		{"psp", "catchup", "-from", "2026-11-20T00:00:00.5Z", "-to", "2026-11-21T00:00:00Z"},
		{"psp", "catchup", "-from", "2026-11-20T00:00:00Z", "-to", "2026-11-21T00:00:00.999Z"},
	} {
		pixctl(t, nowhere, args...).requireStatus(t, cli.ExitUsage)
	}
	r := pixctl(t, env(), "help", "psp", "catchup")
	r.requireStatus(t, 0)
	require.Contains(t, r.stdout, "usage: pixctl psp catchup -from")
}
