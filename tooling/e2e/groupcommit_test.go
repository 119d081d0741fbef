//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/pix"
)

// postRaw sends body as it is, signed as the stack's PSP, to path.
func (s *stack) postRaw(path string, body []byte) (int, map[string]any, error) {
	req, err := http.NewRequest(http.MethodPost, s.baseURL+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	asCaller(req, path, body)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
		return res.StatusCode, nil, fmt.Errorf("decode answer %d: %w", res.StatusCode, err)
	}
	return res.StatusCode, m, nil
}

// Group commit through the whole service: concurrent webhooks of both
// formats, mixing new PIX, copies, mismatches, invalid bodies and API Pix
// requests refused for one item, all at once. Each answer is checked
// against what the request carried, and the rows against the answers: an
// acknowledged delivery is counted on its row, a refused request left
// nothing of its own, each PIX has one first delivery, and every
// acknowledged PIX is credited once, to the cent. The inserts were shared
// by transactions (the group commit's histogram says so).
func TestGroupCommitAnswersEachWebhookAsAlone(t *testing.T) {
	ctx := context.Background()
	s := newStack(t, shared, nil)
	s.openAccount("acc-g1", 0)
	s.openAccount("acc-g2", 0)
	key := "group-" + randomSuffix() + "@example.com"
	_, err := s.store.CreatePixKey(ctx, db.NewPixKey{Key: key, KeyType: "email", AccountID: "acc-g2"})
	require.NoError(t, err)

	const ids = 24
	native, apiPix := make([]string, ids), make([]string, ids)
	for i := range ids {
		native[i], apiPix[i] = pixID(), pixID()
	}
	amount := func(i int) int64 { return int64(1_000 + i) }
	valor := func(cents int64) string { return fmt.Sprintf("%d.%02d", cents/100, cents%100) }
	apiPixItem := func(id string, cents int64) map[string]any {
		return map[string]any{"endToEndId": id, "chave": key, "valor": valor(cents), "horario": "2026-12-01T10:00:00Z"}
	}
	// The even PIX of each format were delivered before: a mismatch is
	// sent only for them, so that it is one whatever the order.
	before := map[string]bool{}
	for i := 0; i < ids; i += 2 {
		r := s.post(webhook{native[i], "acc-g1", amount(i)})
		require.Equal(t, http.StatusAccepted, r.Status, "%v", r.Body)
		r = s.request(http.MethodPost, "/webhooks/api-pix/pix", map[string]any{"pix": []any{apiPixItem(apiPix[i], amount(i))}})
		require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
		before[native[i]], before[apiPix[i]] = true, true
	}

	type request struct {
		path, kind string
		body       []byte
		ids        []string // the PIX it carries
		status     int
		answer     map[string]any
		err        error
	}
	rng := rand.New(rand.NewPCG(7, 11))
	var reqs []*request
	for range 300 {
		i := rng.IntN(ids)
		var q request
		switch k := rng.IntN(12); {
		case k < 5:
			q.kind, q.path, q.ids = "native", "/webhooks/pix", []string{native[i]}
			q.body, _ = json.Marshal(webhook{native[i], "acc-g1", amount(i)})
		case k < 6:
			i -= i % 2
			q.kind, q.path, q.ids = "mismatch", "/webhooks/pix", []string{native[i]}
			q.body, _ = json.Marshal(webhook{native[i], "acc-g1", amount(i) + 1})
		case k < 7:
			q.kind, q.path = "invalid", "/webhooks/pix"
			q.body = []byte(`{"end_to_end_id":"` + native[i] + `","account_id":"acc-g1","amount_cents":1.5}`)
		case k < 8:
			q.kind, q.path = "invalid", "/webhooks/pix"
			q.body = []byte(`{"end_to_end_id":"` + native[i] + `","account_id":`)
		default:
			q.kind, q.path = "apipix", "/webhooks/api-pix/pix"
			var items []any
			for range 1 + rng.IntN(3) {
				j := rng.IntN(ids)
				cents := amount(j)
				if rng.IntN(6) == 0 {
					j -= j % 2
					cents, q.kind = amount(j)+1, "apipix-mismatch"
				}
				items = append(items, apiPixItem(apiPix[j], cents))
				q.ids = append(q.ids, apiPix[j])
			}
			q.body, _ = json.Marshal(map[string]any{"pix": items})
		}
		reqs = append(reqs, &q)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, q := range reqs {
		wg.Go(func() {
			<-start
			q.status, q.answer, q.err = s.postRaw(q.path, q.body)
		})
	}
	close(start)
	wg.Wait()

	acknowledged := map[string]int{}
	firsts := map[string]int{}
	for id := range before {
		acknowledged[id], firsts[id] = 1, 1
	}
	for _, q := range reqs {
		require.NoError(t, q.err, "%s", q.body)
		code := ""
		if e, ok := q.answer["error"].(map[string]any); ok {
			code, _ = e["code"].(string)
		}
		switch q.kind {
		case "native":
			require.Equal(t, http.StatusAccepted, q.status, "%s: %v", q.body, q.answer)
			acknowledged[q.ids[0]]++
			if !q.answer["duplicate"].(bool) {
				firsts[q.ids[0]]++
			}
		case "mismatch", "apipix-mismatch":
			require.Equal(t, http.StatusUnprocessableEntity, q.status, "%s: %v", q.body, q.answer)
			require.Equal(t, "payload_mismatch", code)
		case "invalid":
			require.Equal(t, http.StatusBadRequest, q.status, "%s: %v", q.body, q.answer)
			require.Equal(t, "invalid_request", code)
		case "apipix":
			require.Equal(t, http.StatusOK, q.status, "%s: %v", q.body, q.answer)
			for _, id := range q.ids {
				acknowledged[id]++
			}
			// The API Pix answer has no per-item duplicate flag: firsts
			// are counted from the rows below.
		}
	}

	// Every acknowledged PIX is credited once; nothing else is stored.
	for id := range acknowledged {
		s.waitStatus(id, pix.StatusDone, 60*time.Second)
	}
	for _, id := range append(native, apiPix...) {
		c, err := s.store.GetCredit(ctx, id)
		n, ok := acknowledged[id]
		if !ok {
			require.ErrorIs(t, err, pix.ErrCreditNotFound, "%s: only refused requests carried it, yet it is stored", id)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, n, c.Deliveries, "%s: its deliveries are the acknowledged requests that carried it", id)
		require.Equal(t, 1, s.creditRows(id), id)
	}
	for _, id := range native {
		if _, ok := acknowledged[id]; ok {
			require.Equal(t, 1, firsts[id], "%s: one first delivery (duplicate=false) among its acknowledgements", id)
		}
	}
	var g1, g2 int64
	for i := range ids {
		if _, ok := acknowledged[native[i]]; ok {
			g1 += amount(i)
		}
		if _, ok := acknowledged[apiPix[i]]; ok {
			g2 += amount(i)
		}
	}
	require.Equal(t, g1, s.balance("acc-g1"), "each acknowledged native PIX credited once, to the cent")
	require.Equal(t, g2, s.balance("acc-g2"), "each acknowledged API Pix PIX credited once, to the cent")
	s.assertBooksBalance()

	grouped, groups := groupedCommits(t, s)
	t.Logf("%d of %d transactions held several requests", grouped, groups)
	require.Positive(t, grouped, "300 requests at once: some shared a commit")
}

// groupedCommits reads the group commit's histogram: how many transactions
// held more than one request, of how many.
func groupedCommits(t *testing.T, s *stack) (grouped, total uint64) {
	t.Helper()
	families, err := s.app.Metrics.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "pix_webhook_group_requests" {
			continue
		}
		h := f.GetMetric()[0].GetHistogram()
		total = h.GetSampleCount()
		for _, b := range h.GetBucket() {
			if b.GetUpperBound() == 1 {
				return total - b.GetCumulativeCount(), total
			}
		}
	}
	t.Fatal("no pix_webhook_group_requests histogram")
	return 0, 0
}
