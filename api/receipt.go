package api

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/workflows"
)

// What a webhook's answer and its "webhook accepted" line cost, every
// request, is written here by hand: the same bytes as c.JSON and the same
// line as the logger's variadic form, without reflection or boxing.

// jsonContentType is the Content-Type c.JSON sends (shared, as gin's own
// is: nothing changes a header's values in place).
var jsonContentType = []string{"application/json; charset=utf-8"}

// writeJSON answers status with body, an encoded JSON value, as c.JSON
// does after encoding it (gin's Context.Render and render.WriteJSON).
func writeJSON(c *gin.Context, status int, body []byte) {
	c.Status(status)
	if header := c.Writer.Header(); len(header["Content-Type"]) == 0 {
		header["Content-Type"] = jsonContentType
	}
	if _, err := c.Writer.Write(body); err != nil {
		_ = c.Error(err)
		c.Abort()
	}
}

// answerReceipt answers one receipt as c.JSON(status, r) would.
func answerReceipt(c *gin.Context, status int, r pix.Receipt) {
	body, ok := appendReceipt(make([]byte, 0, 96), r)
	if !ok {
		c.JSON(status, r)
		return
	}
	writeJSON(c, status, body)
}

// answerReceiptBatch answers the receipts of an API Pix webhook as
// c.JSON(status, gin.H{"pix": rs}) would.
func answerReceiptBatch(c *gin.Context, status int, rs []pix.Receipt) {
	if rs == nil { // "pix":null, json.Marshal's spelling
		c.JSON(status, gin.H{"pix": rs})
		return
	}
	body := append(make([]byte, 0, 16+96*len(rs)), `{"pix":[`...)
	for i, r := range rs {
		if i > 0 {
			body = append(body, ',')
		}
		var ok bool
		if body, ok = appendReceipt(body, r); !ok {
			c.JSON(status, gin.H{"pix": rs})
			return
		}
	}
	writeJSON(c, status, append(body, "]}"...))
}

// appendReceipt appends r as json.Marshal encodes it; ok is false when a
// string would need an escape (json.Marshal's job then).
func appendReceipt(b []byte, r pix.Receipt) ([]byte, bool) {
	if !plainJSONString(r.EndToEndID) || !plainJSONString(r.Status) {
		return b, false
	}
	b = append(b, `{"end_to_end_id":"`...)
	b = append(b, r.EndToEndID...)
	b = append(b, `","status":"`...)
	b = append(b, r.Status...)
	b = append(b, `","duplicate":`...)
	b = strconv.AppendBool(b, r.Duplicate)
	return append(b, '}'), true
}

// plainJSONString reports whether json.Marshal writes s as it is, between
// quotes: printable ASCII but the quote, the backslash and the characters
// it escapes for HTML (<, >, &).
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// logAccepted writes the "webhook accepted" line of a native webhook, when
// info is logged.
func (h *handlers) logAccepted(ctx context.Context, n pix.Notification, r pix.Receipt) {
	if !h.Logger.Enabled(ctx, slog.LevelInfo) {
		return
	}
	// workflows.CreditLogAttrs's attributes first, then the webhook's.
	h.Logger.LogAttrs(ctx, slog.LevelInfo, "webhook accepted",
		slog.String("end_to_end_id", n.EndToEndID), slog.String("workflow_id", workflows.CreditWorkflowID(n.EndToEndID)), slog.Int("attempt", r.Attempts),
		slog.String("account_id", n.AccountID), slog.Int64("amount_cents", n.AmountCents),
		slog.String("psp", n.PSP), slog.Bool("duplicate", r.Duplicate), slog.Bool("redriven", r.Redriven), slog.String("status", r.Status))
}

// logAPIPixAccepted writes the "webhook accepted" line of one PIX of an API
// Pix webhook, when info is logged.
func (h *handlers) logAPIPixAccepted(ctx context.Context, n pix.Notification, r pix.Receipt) {
	if !h.Logger.Enabled(ctx, slog.LevelInfo) {
		return
	}
	h.Logger.LogAttrs(ctx, slog.LevelInfo, "webhook accepted",
		slog.String("end_to_end_id", n.EndToEndID), slog.String("workflow_id", workflows.CreditWorkflowID(n.EndToEndID)), slog.Int("attempt", r.Attempts),
		slog.String("format", n.Source), slog.String("pix_key", n.PixKey), slog.String("txid", n.TxID),
		slog.Int64("amount_cents", n.AmountCents), slog.String("psp", n.PSP), slog.Bool("refund_notice", len(n.RefundNotice) > 0),
		slog.Bool("duplicate", r.Duplicate), slog.Bool("redriven", r.Redriven), slog.String("status", r.Status))
}
