package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// shownMembers are the members of a credit's view that show prints as its
// rows, or as its refunds. Any other member is a saga's section of the
// view (api.CreditSection), which show prints after them, under its name,
// as the API wrote it: a saga added to the service is shown without a
// change here.
var shownMembers = []string{"end_to_end_id", "source", "account_id", "pix_key", "txid", "amount_cents", "status", "attempts",
	"last_error", "deliveries", "received_at", "processed_at", "credited_at", "charge", "workflow_id", "workflow_status",
	"temporal_ui_url", "refunds"}

// printSections prints the sections of the credit's view raw (a JSON
// object), in the order the API wrote them: each one's name, then its
// value, indented.
func printSections(out io.Writer, raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("a credit's view is not a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := t.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return err
		}
		if slices.Contains(shownMembers, name) {
			continue
		}
		var indented bytes.Buffer
		if err := json.Indent(&indented, value, "  ", "  "); err != nil {
			return err
		}
		fmt.Fprintf(out, "\n%s\n  %s\n", name, indented.Bytes())
	}
	return nil
}
