package psp_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/psp"
)

// The PSP answer table of docs/outgoing.md, answer by answer, as the HTTP client
// and Classify see it. Only a Result ever leads to a refund (and a
// rejection only after the PSP's status confirms it).
func TestSubmitAnswerTable(t *testing.T) {
	rejected := `{"end_to_end_id":"` + e2e + `","status":"rejected","reason":"receiver account closed"}`
	pending := `{"end_to_end_id":"` + e2e + `","status":"pending"}`
	errBody := `{"error":{"code":"x","message":"y"}}`
	table := []struct {
		status int
		body   string
		want   psp.Answer
	}{
		{201, pending, psp.AnswerResult},
		{200, pending, psp.AnswerResult},
		{422, rejected, psp.AnswerResult},
		{409, errBody, psp.AnswerAlreadySubmitted},
		{400, errBody, psp.AnswerRequestRefused},
		{401, errBody, psp.AnswerRequestRefused},
		{403, errBody, psp.AnswerRequestRefused},
		{404, errBody, psp.AnswerRequestRefused},
		{413, errBody, psp.AnswerRequestRefused},
		{422, errBody, psp.AnswerRequestRefused},
		{408, errBody, psp.AnswerTransient},
		{425, errBody, psp.AnswerTransient},
		{429, errBody, psp.AnswerTransient},
		{500, errBody, psp.AnswerTransient},
		{502, "bad gateway", psp.AnswerTransient},
		{503, errBody, psp.AnswerTransient},
		{200, `{"end_to_end_id":"Eother","status":"settled"}`, psp.AnswerTransient},
		{201, `not json`, psp.AnswerTransient},
		{302, "", psp.AnswerTransient},
	}
	for _, row := range table {
		t.Run(fmt.Sprintf("%d %s", row.status, row.body), func(t *testing.T) {
			c := psp.NewHTTPClient(server(t, row.status, row.body).URL, time.Second)
			res, err := c.Submit(t.Context(), transfer)
			require.Equal(t, row.want, psp.Classify(err), "%v", err)
			if row.want == psp.AnswerResult {
				require.Equal(t, e2e, res.EndToEndID)
			}
		})
	}
}

func TestStatusAnswerTable(t *testing.T) {
	table := []struct {
		status int
		want   psp.Answer
	}{
		{200, psp.AnswerResult},
		{404, psp.AnswerNotFound},
		{401, psp.AnswerRequestRefused},
		{403, psp.AnswerRequestRefused},
		{503, psp.AnswerTransient},
	}
	for _, row := range table {
		c := psp.NewHTTPClient(server(t, row.status, `{"end_to_end_id":"`+e2e+`","status":"settled"}`).URL, time.Second)
		_, err := c.Status(t.Context(), e2e)
		require.Equal(t, row.want, psp.Classify(err), "http %d: %v", row.status, err)
	}
}
