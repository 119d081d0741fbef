package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// ProbeTimeout bounds one health probe: under a container runtime's own
// timeout, so that a hung server reads as unhealthy, not as a stuck check.
const ProbeTimeout = 3 * time.Second

// Probe GETs url and succeeds when it answers 2xx within ProbeTimeout: the
// healthcheck of a container whose image has neither a shell nor curl
// (`pixd healthcheck URL`, `pspsim healthcheck URL`).
func Probe(ctx context.Context, url string) error {
	return probe(ctx, url, ProbeTimeout)
}

// probe is Probe within timeout (a test's hung server is given up on in
// milliseconds, not seconds).
func probe(ctx context.Context, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck %s: %w", url, err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck %s: %w", url, err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10)) // drained for a clean close; its content is not judged
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("healthcheck %s: %s", url, res.Status)
	}
	return nil
}
