package api

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/pixbank/pix/internal/pix"
)

// TestErrorResponseFollowsKinds checks that every business kind the API
// answers is answered with its declared status, code and message, wrapped
// or not, and that a kind without an HTTP answer is an internal error.
func TestErrorResponseFollowsKinds(t *testing.T) {
	httpCodes := map[string]bool{
		CodeInvalidRequest: true, CodePayloadTooLarge: true, CodeBatchTooLarge: true, CodeSignatureMissing: true,
		CodeSignatureInvalid: true, CodeSignatureExpired: true, CodeClientCertRequired: true, CodeAdminDisabled: true,
		CodeUnauthorized: true, CodeInsufficientScope: true, CodeForbiddenAccount: true, CodeIdempotencyKeyNeeded: true,
		CodeInvalidIdempotency: true, CodeUnsupportedMediaType: true, CodeNotFound: true, CodeMethodNotAllowed: true,
		CodeNotReady: true, CodeInternal: true,
	}
	for _, k := range pix.Kinds {
		err := fmt.Errorf("context: %w", k.Err)
		status, detail := errorResponse(err)
		if k.Status == 0 {
			if status != http.StatusInternalServerError || detail.Code != CodeInternal {
				t.Errorf("%v: answered %d %s, want an internal error", k.Err, status, detail.Code)
			}
			continue
		}
		if status != k.Status || detail.Code != k.Code || detail.Message != k.APIMessage(err) {
			t.Errorf("%v: answered %d %+v, want %d %s %q", k.Err, status, detail, k.Status, k.Code, k.APIMessage(err))
		}
		if httpCodes[k.Code] {
			t.Errorf("%v: code %q is also one of the HTTP layer's", k.Err, k.Code)
		}
	}
}
