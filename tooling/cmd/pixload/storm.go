package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/pixbank/pix/internal/webhooksig"
	"github.com/pixbank/pix/tooling/load"
)

// stormTargetMB is the bound of the API's resident memory at peak, the
// same as the sweep's (issue 29: "whatever the number of connections").
const stormTargetMB = 100

// stormReport is what `pixload storm` measured.
type stormReport struct {
	Label       string  `json:"label,omitempty"`
	Rate        float64 `json:"rate_per_s"`
	Connections int     `json:"connections"`
	Duration    string  `json:"duration"`
	Requests    uint64  `json:"requests"`
	// Throughput is the successful answers (2xx) per second.
	Throughput  float64           `json:"throughput_2xx_per_s"`
	StatusCodes map[string]int    `json:"status_codes"`
	Errors      []string          `json:"errors,omitempty"`
	LatencyP50  string            `json:"latency_p50"`
	LatencyP99  string            `json:"latency_p99"`
	LatencyMax  string            `json:"latency_max"`
	Shed        map[string]int64  `json:"shed,omitempty"`
	Memory      []load.MemoryPeak `json:"memory"`
	// PeakRSSMB is the highest VmHWM of the API processes; Met compares it
	// with stormTargetMB (nil: no API watched).
	PeakRSSMB float64 `json:"api_peak_rss_mb"`
	Met       *bool   `json:"met,omitempty"`
}

// storm is `pixload storm`: an independent many-connections case. Vegeta
// (not this command's own generator, whose connections are capped at
// -max-in-flight) offers -rate signed webhooks per second for -duration
// over up to -connections connections, an open model as a PSP fleet or a
// retry storm would; the API's resident memory is read meanwhile, and its
// peak (VmHWM) is the figure, against the bound of 100 MB. Nothing is
// asserted: the report says.
func storm(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("pixload storm", flag.ContinueOnError)
	api := fs.String("api", envOr("PIX_API_URL", "http://127.0.0.1:8080"), "the service's HTTP API")
	rate := fs.Float64("rate", 8000, "webhooks offered per second")
	conns := fs.Int("connections", 2000, "the most connections (and requests in flight) the attack opens")
	d := fs.Duration("duration", 20*time.Second, "how long the webhooks are offered")
	watch := fs.String("watch", "", "the API's processes whose memory is read, api=pid,...; empty: found by name")
	jsonOut := fs.String("json", "", "also write the report as JSON to this file")
	label := fs.String("label", "", "a label for the report")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rate <= 0 || *conns <= 0 || *d <= 0 {
		return errors.New("pixload storm: -rate, -connections and -duration must be positive")
	}
	key, err := webhooksig.ClientKey(os.Getenv("WEBHOOK_SECRETS"))
	if err != nil {
		return fmt.Errorf("WEBHOOK_SECRETS: %w", err)
	}
	procs, err := load.ParseProcesses(*watch)
	if err != nil {
		return fmt.Errorf("-watch: %w", err)
	}
	if len(procs) == 0 {
		procs = load.FindProcesses(map[string]string{apiProcess: "api"})
	}
	url := strings.TrimRight(*api, "/")
	runID := load.NewRunID()
	var seq atomic.Int64
	targeter := func(t *vegeta.Target) error {
		n := seq.Add(1)
		id := load.EndToEndID(runID, n)
		body := fmt.Appendf(nil, `{"end_to_end_id":%q,"account_id":%q,"amount_cents":%d,"occurred_at":%q}`,
			id, load.AccountID(runID, int(n%200)), 1+n%100_000, time.Now().UTC().Format(time.RFC3339))
		h := http.Header{"Content-Type": {"application/json"}}
		if key != nil {
			webhooksig.SetHeaders(h, "msg_"+id, time.Now(), body, key)
		}
		*t = vegeta.Target{Method: http.MethodPost, URL: url + "/webhooks/pix", Body: body, Header: h}
		return nil
	}
	// The attack's own transport, so that its connections are closed
	// before the API's counters are read (which the cap would refuse
	// while they are held).
	transport := &http.Transport{MaxIdleConnsPerHost: *conns, MaxConnsPerHost: *conns, IdleConnTimeout: 30 * time.Second}
	attacker := vegeta.NewAttacker(vegeta.MaxWorkers(uint64(*conns)),
		vegeta.Client(&http.Client{Transport: transport, Timeout: 10 * time.Second}))
	sampler := load.StartMemorySampler(procs, 100*time.Millisecond)
	fmt.Fprintf(out, "storm: %.0f webhooks/s offered for %s over up to %d connections to %s (vegeta)\n", *rate, *d, *conns, url)
	var m vegeta.Metrics
	results := attacker.Attack(targeter, vegeta.Rate{Freq: int(*rate), Per: time.Second}, *d, "storm")
	for done := false; !done; {
		select {
		case res, ok := <-results:
			if !ok {
				done = true
				break
			}
			m.Add(res)
		case <-ctx.Done():
			attacker.Stop()
		}
	}
	m.Close()
	peaks := sampler.Stop()
	transport.CloseIdleConnections()

	rep := stormReport{Label: *label, Rate: *rate, Connections: *conns, Duration: d.String(), Requests: m.Requests,
		Throughput: m.Throughput, StatusCodes: m.StatusCodes, Errors: m.Errors, Memory: peaks,
		LatencyP50: m.Latencies.P50.String(), LatencyP99: m.Latencies.P99.String(), LatencyMax: m.Latencies.Max.String(),
		Shed: shedCounters(ctx, url)}
	if peak, n := peakOf(peaks, "api"); n > 0 {
		rep.PeakRSSMB = mib(peak)
		_, rep.Met = atMost(rep.PeakRSSMB, stormTargetMB)
	}
	printStorm(out, rep)
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ") //nolint:errcheck // plain data
		return os.WriteFile(*jsonOut, b, 0o644)
	}
	return ctx.Err()
}

func printStorm(out io.Writer, rep stormReport) {
	codes := slices.Sorted(maps.Keys(rep.StatusCodes))
	var parts []string
	for _, c := range codes {
		name := c
		if c == "0" {
			name = "transport error"
		}
		parts = append(parts, fmt.Sprintf("%s: %d", name, rep.StatusCodes[c]))
	}
	fmt.Fprintf(out, "  requests %d, answers %s\n", rep.Requests, strings.Join(parts, ", "))
	fmt.Fprintf(out, "  2xx/s %.0f; latency p50 %s, p99 %s, max %s\n", rep.Throughput, rep.LatencyP50, rep.LatencyP99, rep.LatencyMax)
	if len(rep.Errors) > 0 {
		fmt.Fprintf(out, "  errors (kinds, as vegeta words them): %s\n", strings.Join(rep.Errors[:min(len(rep.Errors), 5)], "; "))
	}
	if len(rep.Shed) > 0 {
		fmt.Fprintf(out, "  shed by the API: %d connections (HTTP_MAX_CONNECTIONS), %d requests (HTTP_MAX_IN_FLIGHT)\n",
			rep.Shed["pix_http_connections_shed_total"], rep.Shed["pix_http_requests_shed_total"])
	}
	verdict := "not measured (no API process watched)"
	if rep.Met != nil {
		verdict = fmt.Sprintf("%.1f MB, target ≤ %d MB: %s", rep.PeakRSSMB, stormTargetMB, map[bool]string{true: "met", false: "NOT MET"}[*rep.Met])
	}
	fmt.Fprintf(out, "  API peak resident memory (VmHWM): %s\n", verdict)
}

// shedCounters reads the API's shedding counters from its /metrics (none
// when it serves them elsewhere or has none: a build before the caps).
func shedCounters(ctx context.Context, api string) map[string]int64 {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, api+"/metrics", nil)
	if err != nil {
		return nil
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if ok && strings.HasPrefix(name, "pix_http_") && strings.HasSuffix(name, "_shed_total") {
			if v, err := strconv.ParseFloat(value, 64); err == nil {
				out[name] = int64(v)
			}
		}
	}
	return out
}
