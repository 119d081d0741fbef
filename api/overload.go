package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/pixbank/pix/internal/pix"
)

// errOverloaded is the answer to work beyond the API's caps on requests in
// flight and on connections: a 503 of the kind ErrUnavailable (the code
// every client retries after Retry-After), nothing stored.
var errOverloaded = fmt.Errorf("%w: the API holds as many requests or connections as it is configured to (HTTP_MAX_IN_FLIGHT, HTTP_MAX_CONNECTIONS)", pix.ErrUnavailable)

// overloadRetryAfter is the Retry-After of errOverloaded, in seconds: the
// caps clear as fast as requests are answered.
const overloadRetryAfter = "1"

// OverloadResponse is the whole HTTP/1.1 answer errOverloaded makes, with
// Connection: close: what the connection cap (package connlimit) writes on
// a connection it will not serve, before any handler could.
func OverloadResponse() []byte {
	status, detail := errorResponse(errOverloaded)
	body, _ := json.Marshal(ErrorBody{detail}) //nolint:errcheck // two strings can't fail to marshal
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nRetry-After: %s\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), overloadRetryAfter, len(body), body)
}

// InFlight caps the requests the API's handlers hold at once, across every
// listener given the same InFlight: past it a request is answered 503 at
// once, never queued, for a queue of requests is memory the storm
// decides. The PSPs' webhooks have places of their own, as many: the
// customer routes (anyone may call them, slow bodies included, and some
// wait for Temporal) can't take the places of the money coming in. The
// operations routes (probes, scrapes) are never refused.
type InFlight struct {
	slots, webhookSlots chan struct{}
	shed                func()
}

// NewInFlight returns a cap of max requests (0: none, nil returned); shed,
// when set, is called for each request refused.
func NewInFlight(max int, shed func()) *InFlight {
	if max <= 0 {
		return nil
	}
	if shed == nil {
		shed = func() {}
	}
	return &InFlight{slots: make(chan struct{}, max), webhookSlots: make(chan struct{}, max), shed: shed}
}

// limit is the InFlight's middleware. It answers without logging: under a
// storm, a line per refused request would be the next cost; the shed
// counter says it.
func (l *InFlight) limit(c *gin.Context) {
	slots := l.slots
	switch path := c.FullPath(); {
	case path == "/healthz" || path == "/readyz" || path == "/metrics":
		c.Next()
		return
	case strings.HasPrefix(path, "/webhooks/"):
		slots = l.webhookSlots
	}
	select {
	case slots <- struct{}{}:
		defer func() { <-slots }()
		c.Next()
	default:
		l.shed()
		status, detail := errorResponse(errOverloaded)
		c.Header("Retry-After", overloadRetryAfter)
		c.Set(ctxErrorCode, detail.Code)
		c.AbortWithStatusJSON(status, ErrorBody{detail})
	}
}
