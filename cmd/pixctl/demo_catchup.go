package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// demoCatchUpWait bounds the demo's wait for the catch-up to credit the
// PIX the PSP never notified. Its Schedule runs every PSP_CATCHUP_INTERVAL:
// 10 s under make run, 1 min by default (and a Schedule made by an earlier
// run keeps the interval it was made with); two default intervals and some.
const demoCatchUpWait = 3 * time.Minute

// catchUpFoundMetric counts the PIX the catch-up stored first: each one a
// webhook that never came (its inbox row's psp is catchup).
const catchUpFoundMetric = "pix_psp_catchup_found_total"

// demoCatchUp has the PSP receive a PIX to Maria's key whose webhook it
// never sends (the simulator's webhook behaviour never, for that one PIX:
// as the API Pix does for a PIX without a txid, or a PSP that gave up
// redelivering), so that the PIX is only in the PSP's own record (GET
// /pix); then it waits, for at most within, for the catch-up to list it
// into the inbox and credit it. It returns the PIX's end_to_end_id.
func demoCatchUp(ctx context.Context, c, psp *apiClient, run string, within time.Duration, say func(string, ...any)) (string, error) {
	e2e := demoID(run, 8)
	say("\n14. Maria receives R$ 35,00 through the PSP, which never sends its webhook (a PIX without a txid, or a PSP that gave up)")
	status, err := psp.call(ctx, http.MethodPut, "/webhook-behaviors/"+url.PathEscape(demoRefundPixKey),
		map[string]any{"mode": "never", "times": 1}, nil)
	if err != nil || status != http.StatusNoContent {
		return "", fmt.Errorf("configure the PSP simulator at %s (status %d): %v", psp.base, status, err)
	}
	before, metrics := catchUpFound(ctx, c)
	received := map[string]any{
		"endToEndId": e2e, "valor": "35.00", "horario": time.Now().UTC().Format(time.RFC3339),
		"chave": demoRefundPixKey, "infoPagador": "pixctl demo: no webhook",
	}
	var sim struct {
		Webhook string `json:"webhook"`
	}
	status, err = psp.call(ctx, http.MethodPost, "/sim/pix", received, &sim)
	if err != nil {
		return "", fmt.Errorf("tell the PSP simulator at %s of the PIX received: %w", psp.base, err)
	}
	if status != http.StatusAccepted || sim.Webhook != "never" {
		return "", fmt.Errorf("the PSP simulator at %s answered POST /sim/pix %d webhook=%q, not a PIX it never notifies", psp.base, status, sim.Webhook)
	}
	say("   POST %s/sim/pix -> %d webhook=%q: the PIX is in the PSP's record (GET /pix) alone", psp.base, status, sim.Webhook)
	// Not in our inbox: nothing told us of it (unless the catch-up was
	// quicker than this question).
	if _, status, err := readCredit(ctx, c, e2e); err != nil {
		return "", err
	} else if status == http.StatusNotFound {
		say("   GET /admin/pix/credits/%s -> 404: no webhook told us of it", e2e)
	}

	say("15. Waiting (at most %s) for the catch-up (its Schedule lists the PSP's GET /pix every PSP_CATCHUP_INTERVAL)...", within)
	ok, err := awaitCredit(ctx, c, e2e, within)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("PIX %s not credited within %s: is the catch-up on (PSP_CATCHUP_INTERVAL, not 0) and does the worker reach the PSP (pixd's log)? pixctl show %s",
			e2e, within, e2e)
	}
	cr, status, err := readCredit(ctx, c, e2e)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("read PIX %s: HTTP %d", e2e, status)
	}
	if err != nil {
		return "", err
	}
	say("   %s -> %s to %s status=%s: credited by the catch-up, not by a webhook", e2e, brl(cr.AmountCents), cr.AccountID, cr.Status)
	if after, ok := catchUpFound(ctx, c); metrics && ok {
		say("   %s %s -> %s: stored first from the PSP's record (its inbox row's psp is \"catchup\")", catchUpFoundMetric,
			strconv.FormatFloat(before, 'f', -1, 64), strconv.FormatFloat(after, 'f', -1, 64))
	}
	return e2e, nil
}

// readCredit is the operator's view of one PIX (GET /admin/pix/credits/{id});
// status is 200, or 404 when no such PIX is stored; another answer is an
// error.
func readCredit(ctx context.Context, c *apiClient, e2e string) (credit, int, error) {
	var cr struct {
		apiError
		credit
	}
	status, err := c.call(ctx, http.MethodGet, "/admin/pix/credits/"+url.PathEscape(e2e), nil, &cr)
	if err == nil && status != http.StatusNotFound {
		err = check(status, cr.apiError, "read PIX "+e2e)
	}
	return cr.credit, status, err
}

// catchUpFound reads catchUpFoundMetric, all its series summed, from the
// service's GET /metrics (the main listener's unless OPS_HTTP_ADDR moves
// it; one process, API and worker, under make run); ok is false when it
// could not be read there.
func catchUpFound(ctx context.Context, c *apiClient) (sum float64, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/metrics", nil)
	if err != nil {
		return 0, false
	}
	res, err := c.http.Do(req)
	if err != nil {
		return 0, false
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, false
	}
	lines := bufio.NewScanner(res.Body)
	lines.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for lines.Scan() {
		line := lines.Text()
		rest, found := strings.CutPrefix(line, catchUpFoundMetric)
		if !found || (!strings.HasPrefix(rest, "{") && !strings.HasPrefix(rest, " ")) {
			continue
		}
		fields := strings.Fields(rest[strings.LastIndex(rest, "}")+1:])
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		sum, ok = sum+v, true
	}
	return sum, ok && lines.Err() == nil
}
