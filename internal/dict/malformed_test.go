package dict_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/beevik/etree"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/tooling/dictsim"
)

// spoil makes the simulator's list answers carry, for the item whose Id
// is id (an element named item), what change does to it, the answer signed
// by the DICT all the same (and not checked against the document: it
// breaks it on purpose); sign signs it otherwise.
func spoil(ts *dictsim.TestServer, item, id string, sign dictsim.SignMode, change func(e *etree.Element)) {
	spoilAnswers(ts, []string{"listInfractionReport", "listRefund"}, item, id, sign, change)
}

// spoilAnswers is spoil for the answers of ops.
func spoilAnswers(ts *dictsim.TestServer, ops []string, item, id string, sign dictsim.SignMode, change func(e *etree.Element)) {
	hook(ts, func(x *dictsim.Exchange, model func() dictsim.Answer) dictsim.Answer {
		a := model()
		if !slices.Contains(ops, x.Op) {
			return a
		}
		for _, e := range a.Body.FindElements("//" + item) {
			if el := e.SelectElement("Id"); el != nil && el.Text() == id {
				change(e)
				a.Unchecked, a.Sign = true, sign
			}
		}
		return a
	})
}

func setText(name, v string) func(*etree.Element) {
	return func(e *etree.Element) { e.SelectElement(name).SetText(v) }
}

func drop(name string) func(*etree.Element) {
	return func(e *etree.Element) { e.RemoveChild(e.SelectElement(name)) }
}

// TestAMalformedReportIsReportedAndTheWalkGoesOn: a verified page whose
// one report is not the specification's (a Status it does not have, an
// element required and missing, a LastModified unreadable) hands the
// others and reports that one in its place, what can be read of it kept
// (its Id, its LastModified or where the walk met it); without a taker of
// malformed items the walk stops at it (ErrMalformedItem), as the whole
// page failed before. A page whose signature does not verify still fails
// whole: nothing of it is taken.
func TestAMalformedReportIsReportedAndTheWalkGoesOn(t *testing.T) {
	ts := newDICT(t, dictsim.Options{Now: frozen})
	c := newClient(t, ts.Config)
	ctx := context.Background()
	start := ts.Now()
	var reps []dict.InfractionReport
	for range 5 {
		if _, err := ts.Advance(time.Millisecond); err != nil {
			t.Fatal(err)
		}
		reps = append(reps, openReport(t, ts, c, dict.ReportOpen))
	}
	bad := reps[2]
	var others []string
	for _, r := range reps {
		if r.ID != bad.ID {
			others = append(others, r.ID)
		}
	}
	for _, tc := range []struct {
		name, field string
		change      func(*etree.Element)
		unplaced    bool
	}{
		{"unknown status", "Status", setText("Status", "SUSPENDED"), false},
		{"unknown infraction type", "InfractionType", setText("InfractionType", "SCAM"), false},
		{"missing transaction", "TransactionId", drop("TransactionId"), false},
		{"missing last modified", "LastModified", drop("LastModified"), true},
		{"unreadable creation time", "CreationTime", setText("CreationTime", "yesterday"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spoil(ts, "InfractionReport", bad.ID, dictsim.SignDICT, tc.change)
			var got []string
			var malformed []dict.MalformedItem
			_, err := c.WalkInfractionReports(ctx, dict.ReportQuery{Role: dict.Credited, ModifiedAfter: start, Limit: 2,
				Malformed: func(m dict.MalformedItem) error { malformed = append(malformed, m); return nil }},
				func(r dict.InfractionReport) error { got = append(got, r.ID); return nil })
			if err != nil || !slices.Equal(got, others) {
				t.Fatalf("walk: handed %v, want %v; %v", got, others, err)
			}
			if len(malformed) != 1 {
				t.Fatalf("malformed: %+v, want the one report %s", malformed, bad.ID)
			}
			m := malformed[0]
			if m.ID != bad.ID || m.Field != tc.field || m.Op != "listInfractionReport" || !errors.Is(m, dict.ErrMalformedItem) {
				t.Errorf("malformed %+v: want report %s, field %s", m, bad.ID, tc.field)
			}
			switch {
			case tc.unplaced && (!m.LastModified.IsZero() || !m.At.Equal(reps[1].LastModified)):
				t.Errorf("malformed without LastModified: %+v, want it placed at the report before's %s", m, reps[1].LastModified)
			case !tc.unplaced && !m.LastModified.Equal(bad.LastModified):
				t.Errorf("malformed LastModified %s, want %s", m.LastModified, bad.LastModified)
			}

			page, err := c.ListInfractionReports(ctx, dict.ReportQuery{Role: dict.Credited, ModifiedAfter: start})
			if err != nil || len(page.Reports) != 4 || len(page.Malformed) != 1 || page.Malformed[0].ID != bad.ID {
				t.Errorf("a page: %d reports, malformed %+v, %v", len(page.Reports), page.Malformed, err)
			}

			got = nil
			_, err = c.WalkInfractionReports(ctx, dict.ReportQuery{Role: dict.Credited, ModifiedAfter: start},
				func(r dict.InfractionReport) error { got = append(got, r.ID); return nil })
			var mi dict.MalformedItem
			if !errors.Is(err, dict.ErrMalformedItem) || !errors.As(err, &mi) || mi.ID != bad.ID || dict.Classify(err) != dict.Malformed {
				t.Errorf("a walk that takes no malformed item: %v (class %s), want it stopped at %s", err, dict.Classify(err), bad.ID)
			}
		})
	}

	t.Run("tampered", func(t *testing.T) {
		spoil(ts, "InfractionReport", bad.ID, dictsim.SignTampered, setText("Status", "SUSPENDED"))
		var got []string
		var malformed int
		_, err := c.WalkInfractionReports(ctx, dict.ReportQuery{Role: dict.Credited, ModifiedAfter: start,
			Malformed: func(dict.MalformedItem) error { malformed++; return nil }},
			func(r dict.InfractionReport) error { got = append(got, r.ID); return nil })
		if dict.Classify(err) != dict.Unverified || len(got) != 0 || malformed != 0 {
			t.Fatalf("a tampered page: handed %v, %d malformed, %v (class %s); want nothing, unverified", got, malformed, err, dict.Classify(err))
		}
	})
}

// TestAMalformedRefundIsReportedAndTheWalkGoesOn: the refund requests'
// walk does the same: an amount that can't be read, a RefundReason the
// specification does not have.
func TestAMalformedRefundIsReportedAndTheWalkGoesOn(t *testing.T) {
	ts := newDICT(t, dictsim.Options{Now: frozen})
	c := newClient(t, ts.Config)
	ctx := context.Background()
	start := ts.Now()
	var refs []dict.Refund
	for range 3 {
		if _, err := ts.Advance(time.Millisecond); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, openRefund(t, ts, c))
	}
	bad := refs[1]
	for _, tc := range []struct {
		name, field string
		change      func(*etree.Element)
	}{
		{"bad amount", "RefundAmount", setText("RefundAmount", "12.345")},
		{"negative amount", "RefundAmount", setText("RefundAmount", "-5.00")},
		{"unknown reason", "RefundReason", setText("RefundReason", "REGRET")},
		{"missing amount", "RefundAmount", drop("RefundAmount")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spoil(ts, "Refund", bad.ID, dictsim.SignDICT, tc.change)
			var got []string
			var malformed []dict.MalformedItem
			_, err := c.WalkRefunds(ctx, dict.RefundQuery{ModifiedAfter: start,
				Malformed: func(m dict.MalformedItem) error { malformed = append(malformed, m); return nil }},
				func(r dict.Refund) error { got = append(got, r.ID); return nil })
			if err != nil || !slices.Equal(got, []string{refs[0].ID, refs[2].ID}) {
				t.Fatalf("walk: handed %v; %v", got, err)
			}
			if len(malformed) != 1 || malformed[0].ID != bad.ID || malformed[0].Field != tc.field || malformed[0].Op != "listRefund" ||
				!malformed[0].LastModified.Equal(bad.LastModified) {
				t.Errorf("malformed: %+v, want refund request %s, field %s", malformed, bad.ID, tc.field)
			}
		})
	}
}

// TestAMalformedSingleAnswerIsRefusedAsTheListsItems: the report or refund
// request of a single answer (getInfractionReport, getRefund, and a
// write's) is checked as a list's items are (required elements,
// enumerations, uuids, date-times, amounts): one that is not the
// specification's fails the call (ErrMalformedItem, a MalformedItem of the
// call's operation; dict.Malformed), never a copy with an element empty
// or a value no enumeration has, which the saga would decide on.
func TestAMalformedSingleAnswerIsRefusedAsTheListsItems(t *testing.T) {
	ts := newDICT(t, dictsim.Options{Now: frozen})
	c := newClient(t, ts.Config)
	ctx := context.Background()
	ref := openRefund(t, ts, c)
	rep := openReport(t, ts, c, dict.ReportOpen)
	for _, tc := range []struct {
		name, op, item, id, field string
		change                    func(*etree.Element)
		call                      func() error
	}{
		{"a report's unknown status", "getInfractionReport", "InfractionReport", rep.ID, "Status", setText("Status", "SUSPENDED"),
			func() error { _, err := c.GetInfractionReport(ctx, rep.ID); return err }},
		{"a report's missing status", "getInfractionReport", "InfractionReport", rep.ID, "Status", drop("Status"),
			func() error { _, err := c.GetInfractionReport(ctx, rep.ID); return err }},
		{"a report's unknown reporter", "getInfractionReport", "InfractionReport", rep.ID, "ReportedBy", setText("ReportedBy", "SOMEONE"),
			func() error { _, err := c.GetInfractionReport(ctx, rep.ID); return err }},
		{"an acknowledge's answer", "acknowledgeInfractionReport", "InfractionReport", rep.ID, "CreditedParticipant", drop("CreditedParticipant"),
			func() error { _, err := c.AcknowledgeInfractionReport(ctx, rep.ID); return err }},
		{"a refund's unknown status", "getRefund", "Refund", ref.ID, "Status", setText("Status", "PENDING"),
			func() error { _, err := c.GetRefund(ctx, ref.ID); return err }},
		{"a refund's missing amount", "getRefund", "Refund", ref.ID, "RefundAmount", drop("RefundAmount"),
			func() error { _, err := c.GetRefund(ctx, ref.ID); return err }},
		{"a refund's unknown rejection", "getRefund", "Refund", ref.ID, "RefundRejectionReason",
			func(e *etree.Element) { e.CreateElement("RefundRejectionReason").SetText("REGRET") },
			func() error { _, err := c.GetRefund(ctx, ref.ID); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spoilAnswers(ts, []string{tc.op}, tc.item, tc.id, dictsim.SignDICT, tc.change)
			err := tc.call()
			var mi dict.MalformedItem
			if !errors.Is(err, dict.ErrMalformedItem) || !errors.As(err, &mi) || dict.Classify(err) != dict.Malformed {
				t.Fatalf("%s: %v (class %s), want a malformed item", tc.op, err, dict.Classify(err))
			}
			if mi.Op != tc.op || mi.ID != tc.id || mi.Field != tc.field {
				t.Errorf("malformed %+v: want %s of %s, field %s", mi, tc.op, tc.id, tc.field)
			}
		})
	}
	hook(ts, nil)
	if _, err := c.GetInfractionReport(ctx, rep.ID); err != nil {
		t.Errorf("the report as the specification writes it: %v", err)
	}
	if _, err := c.GetRefund(ctx, ref.ID); err != nil {
		t.Errorf("the refund request as the specification writes it: %v", err)
	}
}
