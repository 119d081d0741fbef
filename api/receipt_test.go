package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/workflows"
)

// The receipts written by hand are what c.JSON wrote: the same status,
// headers and body, on the wire byte for byte (but the Date).

var receiptCases = [][]pix.Receipt{
	{{EndToEndID: "E1234567820261129120000000000001", Status: pix.StatusPending}},
	{{EndToEndID: "E1234567820261129120000000000001", Status: pix.StatusDone, Duplicate: true, Redriven: true, Attempts: 3}},
	{{EndToEndID: "E1234567820261129120000000000001", Status: pix.StatusFailed, Duplicate: true}, {EndToEndID: "E1234567820261129120000000000002", Status: pix.StatusPending}},
	// What json.Marshal escapes goes its way.
	{{EndToEndID: `a"b\c<d>&e` + "\x01\u2028é\xff", Status: "st\tatus"}},
	{{EndToEndID: "", Status: ""}},
	{},
	nil,
}

// rawAnswer is the HTTP/1.1 response that handle writes, as sent, with
// its Date header taken out.
func rawAnswer(t *testing.T, handle gin.HandlerFunc) string {
	t.Helper()
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.POST("/", handle)
	srv := httptest.NewServer(r)
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(bufio.NewReader(conn))
	if err != nil {
		t.Fatal(err)
	}
	return regexp.MustCompile(`(?m)^Date: .*\r\n`).ReplaceAllString(string(raw), "")
}

func TestReceiptsAnswerAsCJSONDid(t *testing.T) {
	for _, rs := range receiptCases {
		if len(rs) == 1 {
			want := rawAnswer(t, func(c *gin.Context) { c.JSON(http.StatusAccepted, rs[0]) })
			if got := rawAnswer(t, func(c *gin.Context) { answerReceipt(c, http.StatusAccepted, rs[0]) }); got != want {
				t.Errorf("receipt %+v:\n got %q\nwant %q", rs[0], got, want)
			}
		}
		want := rawAnswer(t, func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"pix": rs}) })
		if got := rawAnswer(t, func(c *gin.Context) { answerReceiptBatch(c, http.StatusOK, rs) }); got != want {
			t.Errorf("receipts %+v:\n got %q\nwant %q", rs, got, want)
		}
	}
}

// appendReceipt knows the members of a receipt by name: one added to
// pix.Receipt must be added there too.
func TestReceiptMembersAreTheEncodersOwn(t *testing.T) {
	var members []string
	for f := range reflect.TypeFor[pix.Receipt]().Fields() {
		if tag := f.Tag.Get("json"); tag != "-" {
			members = append(members, tag)
		}
	}
	if want := []string{"end_to_end_id", "status", "duplicate"}; !slices.Equal(members, want) {
		t.Fatalf("pix.Receipt's JSON members are %v; appendReceipt writes %v", members, want)
	}
	for _, rs := range receiptCases {
		for _, r := range rs {
			want, _ := json.Marshal(r)
			if got, ok := appendReceipt(nil, r); ok && !bytes.Equal(got, want) {
				t.Errorf("appendReceipt(%+v) = %s, json.Marshal %s", r, got, want)
			}
		}
	}
}

// The "webhook accepted" lines built attribute by attribute are the lines
// the variadic form wrote.
func TestWebhookAcceptedLinesAreUnchanged(t *testing.T) {
	var got, want bytes.Buffer
	h := &handlers{Deps: Deps{Logger: slog.New(slog.NewJSONHandler(&got, nil))}}
	old := slog.New(slog.NewJSONHandler(&want, nil))
	ctx := context.Background()
	n := pix.Notification{EndToEndID: "E1234567820261129120000000000001", AccountID: "acc-1", AmountCents: 15000, PSP: "psp-a", Source: pix.SourceNative}
	r := pix.Receipt{EndToEndID: n.EndToEndID, Status: pix.StatusPending, Duplicate: true, Redriven: true, Attempts: 2}
	h.logAccepted(ctx, n, r)
	old.InfoContext(ctx, "webhook accepted", append(workflows.CreditLogAttrs(n.EndToEndID, r.Attempts),
		"account_id", n.AccountID, "amount_cents", n.AmountCents,
		"psp", n.PSP, "duplicate", r.Duplicate, "redriven", r.Redriven, "status", r.Status)...)

	a := pix.Notification{EndToEndID: "E1234567820261129120000000000002", PixKey: "maria@example.com", TxID: "tx1", AmountCents: 11000,
		PSP: "psp-b", Source: pix.SourceAPIPix, RefundNotice: json.RawMessage(`{"id":"D1"}`)}
	h.logAPIPixAccepted(ctx, a, r)
	old.InfoContext(ctx, "webhook accepted", append(workflows.CreditLogAttrs(a.EndToEndID, r.Attempts),
		"format", a.Source, "pix_key", a.PixKey, "txid", a.TxID,
		"amount_cents", a.AmountCents, "psp", a.PSP, "refund_notice", len(a.RefundNotice) > 0,
		"duplicate", r.Duplicate, "redriven", r.Redriven, "status", r.Status)...)

	untimed := regexp.MustCompile(`"time":"[^"]*",`)
	if g, w := untimed.ReplaceAllString(got.String(), ""), untimed.ReplaceAllString(want.String(), ""); g != w || strings.Count(g, "\n") != 2 {
		t.Fatalf("lines:\n%s\nwant:\n%s", g, w)
	}

	// With info off, nothing is written (nor built).
	got.Reset()
	h.Logger = slog.New(slog.NewJSONHandler(&got, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h.logAccepted(ctx, n, r)
	h.logAPIPixAccepted(ctx, a, r)
	if got.Len() != 0 {
		t.Fatalf("logged at warn: %s", got.String())
	}
}
