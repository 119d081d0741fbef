//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/proxy"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/codec"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/workflows"
)

// The payer of an incoming PIX is personal data: what Temporal stores of
// its run (history, memo, failures) is ciphertext to anyone without the
// keys (the Temporal UI's users, a database dump, `temporal workflow
// show`), and the codec server shows it to an operator.
func TestTemporalPayloadsAreEncrypted(t *testing.T) {
	s := newStack(t, shared, func(c *config.Config) { c.InboxAttemptsMax = 2 })
	account := "acc-codec-" + randomSuffix()
	s.openAccount(account, 0)
	const payerName, payerDocument = "Benedita Quintanilha", "98765432100"
	secrets := []string{"Benedita", "Quintanilha", payerDocument}
	payer := map[string]any{"name": payerName, "document": payerDocument, "ispb": "12345678"}

	credited, lost := pixID(), pixID()
	for _, w := range []map[string]any{
		{"end_to_end_id": credited, "account_id": account, "amount_cents": 4_200, "payer": payer},
		// An unknown account: the attempts fail, and their failures are
		// recorded too.
		{"end_to_end_id": lost, "account_id": "acc-missing-" + randomSuffix(), "amount_cents": 100, "payer": payer},
	} {
		r := s.request(http.MethodPost, "/webhooks/pix", w)
		require.Equal(t, http.StatusAccepted, r.Status, "%v", r.Body)
	}
	s.waitStatus(credited, pix.StatusDone, 30*time.Second)
	s.waitStatus(lost, pix.StatusFailed, 30*time.Second)
	// The service itself reads its runs back (through its keys).
	require.Equal(t, "Completed", s.request(http.MethodGet, "/pix/credits/"+credited, nil).Body["workflow_status"])

	// A client without the codec sees what Temporal stores.
	raw := s.srv.Client(t)
	ctx := context.Background()
	var encrypted []*commonpb.Payload
	failures := 0
	for _, id := range []string{credited, lost} {
		workflowID := workflows.CreditWorkflowID(id)
		payloads, failed := requireEncrypted(t, secrets, "history of "+workflowID, rawHistory(t, raw, workflowID))
		encrypted = append(encrypted, payloads...)
		failures += failed

		described, err := raw.DescribeWorkflow(ctx, workflowID, "")
		require.NoError(t, err)
		desc := described.RawResponse
		memo := desc.GetWorkflowExecutionInfo().GetMemo()
		require.Contains(t, memo.GetFields(), "payer")
		require.Equal(t, codec.EncodingEncrypted, string(memo.GetFields()["payer"].GetMetadata()[codec.MetadataEncoding]))
		wire, err := desc.Marshal()
		require.NoError(t, err)
		requireNoSecrets(t, secrets, "description of "+workflowID, wire)
	}
	require.Positive(t, failures, "the lost PIX's attempts failed")

	// The visibility listing the UI shows carries the memo too.
	listing := s.list("PixEndToEndId = '"+credited+"'", 1)
	wire, err := listing[0].Marshal()
	require.NoError(t, err)
	requireNoSecrets(t, secrets, "visibility listing", wire)

	// The API's codec server decodes them for an operator, as the Temporal
	// UI asks it: {"payloads":[...]} in protojson, from the UI's origin.
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: encrypted})
	require.NoError(t, err)

	res := postCodec(t, s.baseURL+"/codec/decode", "", body)
	require.Equal(t, http.StatusUnauthorized, res.status, "no operator, no payer data")
	requireNoSecrets(t, secrets, "refused decode", res.body)
	customer, err := e2eIssuer.Mint(auth.TokenSpec{Subject: "a-customer", Scopes: []string{auth.ScopeRead, auth.ScopeWrite},
		Accounts: []string{"acc-1"}, TTL: time.Minute}, time.Now())
	require.NoError(t, err)
	res = postCodec(t, s.baseURL+"/codec/decode", "Bearer "+customer, body)
	require.Equal(t, http.StatusUnauthorized, res.status, "a customer's token is not an operator's")
	requireNoSecrets(t, secrets, "refused decode", res.body)

	res = postCodec(t, s.baseURL+"/codec/decode", "Bearer "+e2eAdminToken, body)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	require.Equal(t, e2eTemporalUIOrigin, res.header.Get("Access-Control-Allow-Origin"))
	var decoded commonpb.Payloads
	require.NoError(t, protojson.Unmarshal(res.body, &decoded))
	require.Len(t, decoded.Payloads, len(encrypted))
	var plain bytes.Buffer
	for _, p := range decoded.Payloads {
		require.NotEqual(t, codec.EncodingEncrypted, string(p.GetMetadata()[codec.MetadataEncoding]))
		plain.Write(p.GetData())
		plain.WriteByte('\n')
	}
	require.Contains(t, plain.String(), payerName, "the decoded memo names the payer")
	require.Contains(t, plain.String(), payerDocument)
	require.Contains(t, plain.String(), `"stack_trace"`, "the failures' messages and stack traces decode too")

	// `temporal workflow show` reads ciphertext without the codec server,
	// and the payer through it.
	cli, err := temporaltest.CLIPath()
	require.NoError(t, err)
	show := func(extra ...string) (*historypb.History, []byte) {
		args := append([]string{"workflow", "show", "--address", s.cfg.TemporalAddress, "--namespace", s.cfg.TemporalNamespace,
			"--workflow-id", workflows.CreditWorkflowID(credited), "--output", "json"}, extra...)
		cmd := exec.Command(cli, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "temporal %s: %s", strings.Join(args, " "), stderr.String())
		history, err := client.HistoryFromJSON(bytes.NewReader(out), client.HistoryJSONOptions{})
		require.NoError(t, err, "temporal workflow show's output: %s", out)
		return history, out
	}
	withoutCodec, out := show()
	requireNoSecrets(t, secrets, "temporal workflow show's output", out)
	requireEncrypted(t, secrets, "temporal workflow show", withoutCodec)
	withCodec, _ := show("--codec-endpoint", s.baseURL+"/codec", "--codec-auth", "Bearer "+e2eAdminToken)
	var shownPayer map[string]any
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(
		withCodec.Events[0].GetWorkflowExecutionStartedEventAttributes().GetMemo().GetFields()["payer"], &shownPayer))
	require.Equal(t, payerName, shownPayer["name"], "temporal workflow show --codec-endpoint")
}

// requireEncrypted checks that a history, as Temporal stores it, holds
// none of the secrets, and only encrypted payloads and failure messages;
// it returns the payloads and the number of failures.
func requireEncrypted(t *testing.T, secrets []string, what string, history *historypb.History) (payloads []*commonpb.Payload, failures int) {
	t.Helper()
	wire, err := history.Marshal()
	require.NoError(t, err)
	asJSON, err := protojson.Marshal(history)
	require.NoError(t, err)
	requireNoSecrets(t, secrets, what, wire, asJSON)
	ctx := context.Background()
	require.NoError(t, proxy.VisitPayloads(ctx, history, proxy.VisitPayloadsOptions{
		// Temporal indexes search attributes: never encoded, and holding
		// no payer data.
		SkipSearchAttributes: true,
		Visitor: func(_ *proxy.VisitPayloadsContext, visited []*commonpb.Payload) ([]*commonpb.Payload, error) {
			for _, p := range visited {
				require.Equal(t, codec.EncodingEncrypted, string(p.GetMetadata()[codec.MetadataEncoding]), "a plain payload in %s", what)
				require.Equal(t, e2eCodecKeys.NewestID(), string(p.GetMetadata()[codec.MetadataKeyID]), "the newest key encrypts")
				payloads = append(payloads, p)
			}
			return visited, nil
		},
	}))
	require.NotEmpty(t, payloads, what)
	require.NoError(t, proxy.VisitFailures(ctx, history, proxy.VisitFailuresOptions{
		Visitor: func(_ *proxy.VisitFailuresContext, f *failurepb.Failure) error {
			require.Equal(t, "Encoded failure", f.GetMessage(), "a failure message in plain text in %s", what)
			require.Empty(t, f.GetStackTrace())
			require.NotNil(t, f.GetEncodedAttributes())
			failures++
			return nil
		},
	}))
	return payloads, failures
}

// rawHistory reads a run's whole history as Temporal stores it.
func rawHistory(t *testing.T, c client.Client, workflowID string) *historypb.History {
	t.Helper()
	history := &historypb.History{}
	it := c.GetWorkflowHistory(context.Background(), workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		event, err := it.Next()
		require.NoError(t, err)
		history.Events = append(history.Events, event)
	}
	require.NotEmpty(t, history.Events)
	require.Equal(t, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, history.Events[0].GetEventType())
	return history
}

func requireNoSecrets(t *testing.T, secrets []string, where string, blobs ...[]byte) {
	t.Helper()
	for _, b := range blobs {
		for _, secret := range secrets {
			require.False(t, bytes.Contains(b, []byte(secret)), "%s holds %q in plain text", where, secret)
		}
	}
}

type codecReply struct {
	status int
	header http.Header
	body   []byte
}

// postCodec posts body to the codec server as the Temporal UI does.
func postCodec(t *testing.T, url, authorization string, body []byte) codecReply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Namespace", "default")
	req.Header.Set("Origin", e2eTemporalUIOrigin)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return codecReply{res.StatusCode, res.Header, b}
}
