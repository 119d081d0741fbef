package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/pixbank/pix/internal/webhooksig"
)

// apiClient calls the PIX service's HTTP API.
type apiClient struct {
	base string
	http http.Client
	// signingKey signs what is posted to /webhooks/ (as a PSP would);
	// adminToken authorizes /admin/ calls.
	signingKey []byte
	adminToken string
}

// call sends body (if any) as JSON and decodes the answer into out (if
// any), returning the HTTP status. Only transport failures are errors.
func (c *apiClient) call(ctx context.Context, method, path string, body, out any) (int, error) {
	status, _, err := c.callWith(ctx, method, path, nil, body, out)
	return status, err
}

// callWith is call with extra request headers, returning the answer's
// headers too.
func (c *apiClient) callWith(ctx context.Context, method, path string, header http.Header, body, out any) (int, http.Header, error) {
	var buf bytes.Buffer
	if body != nil {
		if err := json.NewEncoder(&buf).Encode(body); err != nil {
			return 0, nil, fmt.Errorf("encode request: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, &buf)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	switch {
	case strings.HasPrefix(path, "/webhooks/") && c.signingKey != nil:
		webhooksig.SetHeaders(req.Header, fmt.Sprintf("msg_pixctl_%d", time.Now().UnixNano()), time.Now(), buf.Bytes(), c.signingKey)
	case strings.HasPrefix(path, "/admin/") && c.adminToken != "":
		req.Header.Set("Authorization", "Bearer "+c.adminToken)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	if out != nil && res.StatusCode != http.StatusNoContent {
		if err := json.NewDecoder(res.Body).Decode(out); err != nil {
			return res.StatusCode, res.Header, fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return res.StatusCode, res.Header, nil
}
