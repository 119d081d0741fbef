package dict

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
)

// ErrMalformedItem is an item of a list's page, under the page's verified
// signature, that is not the specification's (MalformedItem): a walk whose
// query takes no MalformedItem (ReportQuery.Malformed, RefundQuery.Malformed)
// stops at it with this error. So is the report or refund request of a
// single answer (getInfractionReport, getRefund, and the writes' answers),
// checked as a list's items are (decodeAnswer): the call fails with it
// (Classify: Malformed), nothing decided on a copy the client could not
// read as the specification writes it.
var ErrMalformedItem = errors.New("dict: an item is not the specification's")

// MalformedItem is an item of a list's page that does not decode as the
// specification writes it (an element required and missing, an
// enumeration's value it does not have, an amount or a date-time that
// can't be read), its page verified whole (the signature covers every
// item, the malformed one included: an answer whose signature does not
// verify fails its page, never a part of it). The page's other items are
// read; this one is reported, what can be read of it kept: a lister
// records it, never drops it unseen.
type MalformedItem struct {
	// Op is the list's operation: listInfractionReport or listRefund.
	Op string
	// ID is the item's Id as written ("" when it has none), which may be
	// no uuid.
	ID string
	// LastModified is the item's LastModified, zero when it can't be
	// read; At is where the walk met it then: the item is at or after
	// At (the lists are in LastModified order); zero for a single answer's.
	LastModified, At time.Time
	// Field is the element at fault (Status, RefundAmount, ...; "" when
	// the item can't be read at all), Reason what is wrong with it: its
	// words may quote the DICT's value, bounded to one line (a log's, not a
	// record's).
	Field, Reason string
	// key tells items apart within a walk's instant: its Id, or a digest
	// of its text when it has none.
	key string
}

// Error says what is wrong with the item.
func (m MalformedItem) Error() string {
	at := "LastModified unreadable, listed at or after " + dateTime(m.At)
	switch {
	case !m.LastModified.IsZero():
		at = "modified " + dateTime(m.LastModified)
	case m.At.IsZero():
		at = "LastModified unreadable"
	}
	return fmt.Sprintf("dict %s: %s: item %q (%s): %s: %s", m.Op, ErrMalformedItem, bounded(m.ID), at, m.Field, m.Reason)
}

// Unwrap makes a MalformedItem ErrMalformedItem.
func (m MalformedItem) Unwrap() error { return ErrMalformedItem }

// rawItem is one item of a list's verified answer, its text kept to be
// decoded on its own (decodeItem): one item that is not the
// specification's fails no other.
type rawItem struct {
	Inner []byte `xml:",innerxml"`
}

// itemSpec is what an item of a list must hold (dict-api.yaml's
// ExtendedInfractionReport, ExtendedRefund): its required elements, the
// values of its enumerations (checked when present), its uuids (when
// present), its date-times and its amounts.
type itemSpec struct {
	element  string
	required []string
	enums    map[string][]string
	uuids    []string
	times    []string
	amounts  []string
}

var reportSpec = itemSpec{
	element:  "InfractionReport",
	required: []string{"TransactionId", "InfractionType", "Id", "ReportedBy", "Status", "DebitedParticipant", "CreditedParticipant", "CreationTime", "LastModified"},
	enums: map[string][]string{
		"InfractionType": {string(InfractionFraud), string(InfractionRefundRequest), string(InfractionRefundCancelled)},
		"ReportedBy":     {string(ReportedByDebited), string(ReportedByCredited)},
		"Status":         {string(ReportOpen), string(ReportAcknowledged), string(ReportClosed), string(ReportCancelled)},
		"AnalysisResult": {string(Agreed), string(Disagreed)},
	},
	uuids: []string{"Id"},
	times: []string{"CreationTime", "LastModified"},
}

var refundSpec = itemSpec{
	element:  "Refund",
	required: []string{"TransactionId", "RefundReason", "RefundAmount", "Id", "Status", "RequestingParticipant", "ContestedParticipant", "CreationTime", "LastModified"},
	enums: map[string][]string{
		"RefundReason":          {string(RefundFraud), string(RefundOperationalFlaw), string(RefundReasonCancelled)},
		"Status":                {string(RefundOpen), string(RefundClosed), string(RefundCancelled)},
		"AnalysisResult":        {string(TotallyAccepted), string(PartiallyAccepted), string(Rejected)},
		"RefundRejectionReason": {string(RejectionNoBalance), string(RejectionAccountClosure), string(RejectionCannotRefund), string(RejectionOther)},
	},
	uuids:   []string{"Id", "InfractionReportId"},
	times:   []string{"CreationTime", "LastModified"},
	amounts: []string{"RefundAmount"},
}

// itemFields are an item's child elements, by name (the last of a name
// written twice, as the typed decoding keeps it).
type itemFields struct {
	Fields []struct {
		XMLName xml.Name
		Text    string `xml:",chardata"`
	} `xml:",any"`
}

// decodeItem decodes raw, an item of op's list, as s says it must be: the
// item, or what can be read of it as a MalformedItem. at is where the walk
// is (the item's place when its LastModified can't be read).
func decodeItem[T any](op string, s itemSpec, raw rawItem, at time.Time) (T, *MalformedItem) {
	var out T
	wrapped := slices.Concat([]byte("<"+s.element+">"), raw.Inner, []byte("</"+s.element+">"))
	sum := sha256.Sum256(raw.Inner)
	bad := &MalformedItem{Op: op, At: at, key: "sha256:" + hex.EncodeToString(sum[:8])}
	var f itemFields
	if err := xml.Unmarshal(wrapped, &f); err != nil {
		bad.Reason = bounded(err.Error())
		return out, bad
	}
	fields := map[string]string{}
	for _, e := range f.Fields {
		fields[e.XMLName.Local] = e.Text
	}
	if id, ok := fields["Id"]; ok && id != "" {
		bad.ID, bad.key = id, "id:"+id
	}
	var mod time.Time
	if mod.UnmarshalText([]byte(fields["LastModified"])) == nil {
		bad.LastModified = mod
	}
	bad.Field, bad.Reason = s.check(fields)
	if bad.Field != "" {
		return out, bad
	}
	if err := xml.Unmarshal(wrapped, &out); err != nil {
		bad.Reason = bounded(err.Error())
		return out, bad
	}
	return out, nil
}

// decodeAnswer decodes raw, the report or refund request of op's single
// answer (a read's, a write's), as a list's items are (decodeItem, s): one
// that is not the specification's is its MalformedItem as the error.
func decodeAnswer[T any](op string, s itemSpec, raw rawItem) (T, error) {
	out, bad := decodeItem[T](op, s, raw, time.Time{})
	if bad != nil {
		return out, *bad
	}
	return out, nil
}

// check says which field of fields breaks s, and how ("", "": none).
func (s itemSpec) check(fields map[string]string) (field, reason string) {
	for _, name := range s.required {
		if _, ok := fields[name]; !ok {
			return name, "required, missing"
		}
	}
	for _, name := range s.uuids {
		if v, ok := fields[name]; ok {
			if _, err := uuid.Parse(v); err != nil || len(v) != 36 {
				return name, fmt.Sprintf("%q is not a uuid", bounded(v))
			}
		}
	}
	for _, name := range sortedKeys(s.enums) {
		if v, ok := fields[name]; ok && !slices.Contains(s.enums[name], v) {
			return name, fmt.Sprintf("%q is none of %v", bounded(v), s.enums[name])
		}
	}
	for _, name := range s.times {
		var t time.Time
		if err := t.UnmarshalText([]byte(fields[name])); err != nil {
			return name, fmt.Sprintf("%q is not a date-time", bounded(fields[name]))
		}
	}
	for _, name := range s.amounts {
		var a Amount
		if err := a.UnmarshalText([]byte(fields[name])); err != nil {
			return name, bounded(err.Error())
		}
	}
	return "", ""
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// listed is an item of a page as its walk hands it: the item, or what is
// wrong with it (bad).
type listed[T any] struct {
	item T
	bad  *MalformedItem
}

// split parts a page's items, in their order, into those read and those
// that are not the specification's (a page's Reports or Refunds, and its
// Malformed); none: nil.
func split[T any](items []listed[T]) (read []T, malformed []MalformedItem) {
	for _, it := range items {
		if it.bad != nil {
			malformed = append(malformed, *it.bad)
		} else {
			read = append(read, it.item)
		}
	}
	return read, malformed
}

// decodeItems decodes each of raws on its own (decodeItem), at the page's
// start after.
func decodeItems[T any](op string, s itemSpec, raws []rawItem, after time.Time) []listed[T] {
	out := make([]listed[T], len(raws))
	for i, raw := range raws {
		out[i].item, out[i].bad = decodeItem[T](op, s, raw, after)
	}
	return out
}
