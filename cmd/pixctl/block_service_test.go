package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/cli"
	reconcilesaga "github.com/pixbank/pix/saga/reconcile"
)

// The cautionary block's commands against the running service (the API
// and the worker on a real Temporal server and a real database, the
// simulator as the PSP): a PIX received through the PSP, a block held at
// once and released by pixctl, a second one returned, which the devolução
// saga has the PSP make and the block's run then ends returned; what a
// customer's token may not do; the books exact.
func TestBlocksAgainstTheService(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const token = "pixctl-test-admin-token"
	issuer := newDevIssuer(t)
	base, store, pspURL := runServiceWithSimulator(t, token, issuer)

	const account, key = "acc-block", "block@example.com"
	_, err := store.CreateAccount(ctx, db.NewAccount{ID: account, OwnerName: "Maria"})
	require.NoError(t, err)
	_, err = store.CreatePixKey(ctx, db.NewPixKey{Key: key, KeyType: "email", AccountID: account})
	require.NoError(t, err)
	dev, err := openDevTokens(envOf(issuer))
	require.NoError(t, err)
	c := &apiClient{base: base, adminToken: token, dev: dev}
	e2e := demoID(fmt.Sprintf("%014d", time.Now().UnixMilli()%1e14), 7)
	_, err = demoReceiveThroughPSP(ctx, c, &apiClient{base: pspURL}, e2e, map[string]any{
		"endToEndId": e2e, "valor": "100.00", "horario": time.Now().UTC().Format(time.RFC3339), "chave": key,
	}, 30*time.Second, func(string, ...any) {})
	require.NoError(t, err)
	getenv := envOf(issuer, "PIX_API_URL", base, "ADMIN_TOKEN", token)
	money := func() (balance, held int64) {
		require.NoError(t, store.Pool().QueryRow(ctx, `SELECT balance_cents, held_cents FROM accounts WHERE id = $1`, account).Scan(&balance, &held))
		return balance, held
	}
	create := func(amount, reason string) pixBlock {
		r := pixctl(t, getenv, "block", "create", "-amount", amount, "-reason", reason, "-o", "json", e2e)
		r.requireStatus(t, cli.ExitOK)
		var b pixBlock
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &b), r.stdout)
		require.Equal(t, "active", b.Status)
		return b
	}

	first := create("3000", "conta de passagem")
	b, h := money()
	require.Equal(t, [2]int64{10_000, 3_000}, [2]int64{b, h}, "held once the answer came")
	again := create("3000", "conta de passagem")
	require.Equal(t, first.ID, again.ID, "the same command after a lost answer: the same block")
	r := pixctl(t, getenv, "block", "create", "-amount", "7001", "-reason", "x", e2e)
	r.requireStatus(t, cli.ExitProblem)
	require.Contains(t, r.stderr, "block_exceeds_credit")

	r = pixctl(t, getenv, "block", "release", e2e, first.ID)
	r.requireStatus(t, cli.ExitOK)
	require.Contains(t, r.stdout, "released")
	r = pixctl(t, getenv, "block", "return", e2e, first.ID)
	r.requireStatus(t, cli.ExitProblem)
	require.Contains(t, r.stderr, "block_released")
	b, h = money()
	require.Equal(t, [2]int64{10_000, 0}, [2]int64{b, h})

	second := create("2500", "devolver ao pagador")
	r = pixctl(t, getenv, "block", "return", e2e, second.ID)
	r.requireStatus(t, cli.ExitOK)
	require.Contains(t, r.stdout, "returning")
	var ended pixBlock
	require.Eventually(t, func() bool {
		_, err := c.asOperator().read(ctx, blocksPath(e2e)+"/"+second.ID, "show block", &ended)
		return err == nil && ended.Status != "returning"
	}, 90*time.Second, 200*time.Millisecond, "the devolução ends, and with it the block")
	require.Equal(t, "returned", ended.Status, "%+v", ended)
	b, h = money()
	require.Equal(t, [2]int64{7_500, 0}, [2]int64{b, h})
	r = pixctl(t, getenv, "block", "list", e2e)
	r.requireStatus(t, cli.ExitOK)
	require.Equal(t, 3, strings.Count(r.stdout, "\n"), "a header and two blocks: %s", r.stdout)

	// A customer's token reaches none of it.
	customer := c.as(account)
	for _, path := range []string{blocksPath(e2e), blocksPath(e2e) + "/" + second.ID} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		require.NoError(t, err)
		tok, _, err := customer.bearer(http.MethodGet, path)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		require.Equal(t, http.StatusForbidden, res.StatusCode, path)
	}

	books, err := reconcilesaga.NewStore(store).Reconcile(ctx)
	require.NoError(t, err)
	require.True(t, books.Balanced(), "%+v", books)
}
