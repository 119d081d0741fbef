package registry_test

import (
	"cmp"
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/refund"
	"github.com/pixbank/pix/saga/registry"
)

// A workflow sees its activities' results, signals and errors' details only
// as Temporal's data converter carries them: JSON. A field encoding/json
// does not carry (json:"-", unexported, a func) is nil in the run whatever
// the activity returned, and a branch the workflow takes on it is dead
// (fec46d2: med.Report.RefundCloseSentAt). A field omitted when zero
// (omitempty, omitzero) in a value the workflow decodes keeps, in a
// variable the workflow decodes into again, the value it read before
// (med.Report.RefundCloseSentAt's omitempty). TestWhatCrossesTheBoundaryIsCarried
// fails on either in every type that crosses, unless notCarried says why
// the field may stay so.

// notCarried are the fields the boundary check lets through, by
// "<package>.<Type>.<Field>", each with why the workflows can do without
// it as the JSON carries it. An entry no longer met fails the test too:
// drop it with the field.
var notCarried = map[string]string{
	// med.Report is the store's row; the run reads it as the activities
	// return it (LoadReport, the transitions), the activities read their
	// own row again (current), and only that row's fields below.
	"med.Report.DICTAnalysisResult":      `json:"-": read by CloseReport on the row it reads (cur), never by workflow code`,
	"med.Report.RefundRequestModifiedAt": `json:"-": the store's, on its own row (IntakeRefund's order); no workflow code reads it`,
	"med.Report.RefundRequestDICTReason": `json:"-": the store's, on its own row (Finish's end cause, closedByTheDICT); no workflow code reads it`,
	"med.Report.AcknowledgeSentAt":       `json:"-": Report.Sent, asked by the activities on the row they read (markSent), never by workflow code`,
	"med.Report.CloseSentAt":             `json:"-": Report.Sent and the activities on the row they read (markSent, CloseKeptRequests' KeptToClose), never by workflow code`,
	"med.Report.Traceparent":             `json:"-": store and API only; no workflow code reads it`,
	"med.Report.DispatchDueAt":           `json:"-": the durable start's column (internal/durable), the store's only`,
	"med.Report.DispatchedAt":            `json:"-": the durable start's column (internal/durable), the store's only`,
	"scheduled.Scheduled.RequestedBy":    `json:"-": not shown by the API; read by the store on its own row (Run: the transfer's requester), never by workflow code`,

	// Results decoded once, into a variable of their own: nothing before
	// to keep (catchup/workflow.go, med/lister_workflow.go).
	"catchup.Window.CoveredFrom": `omitempty: BeginCatchUp's and BeginManualCatchUp's result, decoded once per run into a zero w (pspCatchUp; pspCatchUpWhole's out.Window)`,
	"catchup.Window.Manual":      `omitempty: as catchup.Window.CoveredFrom`,
	"catchup.Window.PartPages":   `omitempty: as catchup.Window.CoveredFrom`,
	"catchup.Part.NextPartPages": `omitempty: ListPSPPart's result, decoded into a fresh part each part (pspCatchUp's loop)`,
	"covered.Window.CoveredFrom": `omitempty: BeginDICTList's result, decoded once per run into a zero w (ListerWorkflow)`,
}

// signalsAndDetails are the types a workflow decodes beside its
// activities' results: signals' payloads (GetSignalChannel's Receive) and
// ApplicationErrors' details (Details). A signal received without one
// (Receive(ctx, nil): block, scheduled, med) has none. A new one is listed
// here.
var signalsAndDetails = []any{
	refund.Notice{}, // refund.NoticeSignal (awaitNotice: Receive, then ReceiveAsync into the same n)
	med.StopNote{},  // StoppedType's details (movedSinceStop)
	med.NotYet{},    // NotYetType's details (notYetLeft)
}

// leaves are the types with their own (Un)Marshal that the check takes as
// carried, whose round trips their own tests hold; any other type with
// its own is a failure until listed here.
var leaves = map[reflect.Type]bool{
	reflect.TypeFor[time.Time]():        true,
	reflect.TypeFor[uuid.UUID]():        true,
	reflect.TypeFor[payload.Duration](): true, // internal/payload's tests
}

var (
	contextType         = reflect.TypeFor[context.Context]()
	workflowContextType = reflect.TypeFor[workflow.Context]()
	errorType           = reflect.TypeFor[error]()
)

// boundary walks the types that cross: what it finds not carried goes into
// found, by field (or position, for a type not carried as a whole), with
// the positions it was met at.
type boundary struct {
	found map[string][]string
}

func (b *boundary) note(key, problem, at string) {
	b.found[key+" ("+problem+")"] = append(b.found[key+" ("+problem+")"], at)
}

// fn walks a workflow's or activity's parameters (decoded fresh by the
// SDK) and results (decoded by the workflow, maybe into a variable it
// decoded into before: decoded), the receiver and contexts left out.
func (b *boundary) fn(name string, ft reflect.Type, receiver bool, resultsDecoded bool) {
	for i := 0; i < ft.NumIn(); i++ {
		in := ft.In(i)
		if (receiver && i == 0) || in == contextType || in == workflowContextType {
			continue
		}
		at := fmt.Sprintf("%s parameter %d (%s)", name, i, in)
		b.walk(in, at, at, false, map[reflect.Type]bool{})
	}
	for i := 0; i < ft.NumOut(); i++ {
		if out := ft.Out(i); out != errorType {
			at := fmt.Sprintf("%s result %d (%s)", name, i, out)
			b.walk(out, at, at, resultsDecoded, map[reflect.Type]bool{})
		}
	}
}

// implementsCustom says whether t (or *t) encodes or decodes itself.
func implementsCustom(t reflect.Type) bool {
	for _, i := range []reflect.Type{reflect.TypeFor[json.Marshaler](), reflect.TypeFor[json.Unmarshaler](),
		reflect.TypeFor[encoding.TextMarshaler](), reflect.TypeFor[encoding.TextUnmarshaler]()} {
		if t.Implements(i) || reflect.PointerTo(t).Implements(i) {
			return true
		}
	}
	return false
}

// walk notes what in t encoding/json does not carry: at is where t was
// met, key what names t (its field, or at); decoded, t is decoded by
// workflow code.
func (b *boundary) walk(t reflect.Type, at, key string, decoded bool, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if seen[t] {
		return
	}
	seen[t] = true
	if implementsCustom(t) {
		if !leaves[t] {
			b.note(t.String(), "its own (Un)Marshal: add it to leaves with the test of its round trip", at)
		}
		return
	}
	switch t.Kind() {
	case reflect.Interface, reflect.Func, reflect.Chan, reflect.UnsafePointer, reflect.Complex64, reflect.Complex128:
		b.note(key, t.Kind().String()+" not carried", at)
	case reflect.Map:
		b.note(key, "map: decoded into a map the run holds, merged into it", at)
		b.walk(t.Elem(), at, key, decoded, seen)
	case reflect.Slice, reflect.Array:
		b.walk(t.Elem(), at, key, decoded, seen)
	case reflect.Struct:
		b.fields(t, at, decoded, seen)
	}
}

// fields walks the fields of the struct t.
func (b *boundary) fields(t reflect.Type, at string, decoded bool, seen map[reflect.Type]bool) {
	names := map[string]string{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		key := t.String() + "." + f.Name
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Tag.Get("json") == "-":
			b.note(key, `json:"-"`, at)
			continue
		case !f.IsExported() && !f.Anonymous:
			b.note(key, "unexported", at)
			continue
		case f.Anonymous && name == "":
			// Its fields are promoted into t's object.
			b.walk(f.Type, at, key, decoded, seen)
			continue
		}
		name = cmp.Or(name, f.Name)
		if other, twice := names[name]; twice {
			b.note(key, "JSON name "+name+" also "+other+"'s: encoding/json drops both", at)
		}
		names[name] = f.Name
		if decoded && omitted(f.Type, opts) {
			b.note(key, "omitted when zero ("+f.Tag.Get("json")+") in a value workflow code decodes: a variable decoded into again keeps its value", at)
		}
		b.walk(f.Type, at, key, decoded, seen)
	}
}

// omitted says whether a field of type t tagged with opts is left out of
// the JSON when zero (omitempty leaves a struct in; omitzero leaves out
// any zero value).
func omitted(t reflect.Type, opts string) bool {
	o := strings.Split(opts, ",")
	if slices.Contains(o, "omitzero") {
		return true
	}
	return slices.Contains(o, "omitempty") && t.Kind() != reflect.Struct
}

// crossing walks every type that crosses a workflow's boundary: every
// saga's registered workflows' parameters and results, its activities'
// (registry.All), and the signals and error details the workflows decode.
func crossing(t *testing.T) map[string][]string {
	b := &boundary{found: map[string][]string{}}
	e := env(t)
	for _, d := range registry.All {
		for name, fn := range d.Workflows {
			b.fn("workflow "+d.Name+"/"+name, reflect.TypeOf(fn), false, false)
		}
		for _, a := range d.Activities(d.Deps(e)) {
			v := reflect.ValueOf(a)
			if v.Kind() == reflect.Func {
				b.fn("activity "+d.Name+" "+v.Type().String(), v.Type(), false, true)
				continue
			}
			// A struct: each exported method is an activity.
			for i := 0; i < v.Type().NumMethod(); i++ {
				m := v.Type().Method(i)
				b.fn("activity "+d.Name+" "+v.Type().String()+"."+m.Name, m.Type, true, true)
			}
		}
	}
	for _, s := range signalsAndDetails {
		at := "signal or error details " + reflect.TypeOf(s).String()
		b.walk(reflect.TypeOf(s), at, at, true, map[reflect.Type]bool{})
	}
	return b.found
}

// TestWhatCrossesTheBoundaryIsCarried: every field of every type that
// crosses a workflow's boundary is carried by the JSON data converter as
// workflow code needs it, or is in notCarried with why it may not be.
func TestWhatCrossesTheBoundaryIsCarried(t *testing.T) {
	used := map[string]bool{}
	found := crossing(t)
	for _, what := range slices.Sorted(maps.Keys(found)) {
		field, _, _ := strings.Cut(what, " (")
		if _, ok := notCarried[field]; ok {
			used[field] = true
			continue
		}
		at := found[what]
		t.Errorf("%s, at %d positions, e.g. %s: carry it as workflow code needs it, or add it to notCarried with why none needs it",
			what, len(at), at[0])
	}
	for _, field := range slices.Sorted(maps.Keys(notCarried)) {
		if !used[field] {
			t.Errorf("notCarried lists %s, which the boundary check does not meet: drop the entry", field)
		}
	}
}

// boundaryFixture has one field of each kind the check fails on, and some
// it lets through.
type boundaryFixture struct {
	Dropped *string `json:"-"`
	hidden  int
	Fn      func()
	Any     any
	Counts  map[string]int
	Omitted *time.Time `json:"omitted,omitempty"`
	Zeroed  time.Time  `json:"zeroed,omitzero"`
	Nested  []struct {
		Gone bool `json:"gone,omitempty"`
	}
	Carried *time.Time      `json:"carried"`
	Struct  struct{ A int } `json:"struct,omitempty"` // omitempty never omits a struct
	Text    customText
}

type customText string

func (customText) MarshalText() ([]byte, error) { return nil, nil }

// TestTheBoundaryCheckFindsWhatIsNotCarried: the check, on a type decoded
// by workflow code and on one only passed in, notes each field the JSON
// does not carry as it is, and only those.
func TestTheBoundaryCheckFindsWhatIsNotCarried(t *testing.T) {
	fixture := reflect.TypeOf(boundaryFixture{hidden: 1})
	const f = "registry_test.boundaryFixture."
	always := []string{f + "Any (interface not carried)",
		f + "Counts (map: decoded into a map the run holds, merged into it)", f + `Dropped (json:"-")`, f + "Fn (func not carried)",
		f + "hidden (unexported)", "registry_test.customText (its own (Un)Marshal: add it to leaves with the test of its round trip)"}
	for _, decoded := range []bool{false, true} {
		b := &boundary{found: map[string][]string{}}
		b.walk(fixture, "fixture", "fixture", decoded, map[reflect.Type]bool{})
		want := slices.Clone(always)
		if decoded {
			const why = " in a value workflow code decodes: a variable decoded into again keeps its value)"
			want = append(want, f+"Omitted (omitted when zero (omitted,omitempty)"+why, f+"Zeroed (omitted when zero (zeroed,omitzero)"+why,
				"struct { Gone bool \"json:\\\"gone,omitempty\\\"\" }.Gone (omitted when zero (gone,omitempty)"+why)
		}
		slices.Sort(want)
		if got := slices.Sorted(maps.Keys(b.found)); !slices.Equal(got, want) {
			t.Errorf("decoded=%v: found\n%s\nwant\n%s", decoded, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	// Two fields of one JSON name (built here: vet refuses the tags
	// written so).
	twice := reflect.StructOf([]reflect.StructField{
		{Name: "Twice", Type: reflect.TypeFor[string](), Tag: `json:"same"`},
		{Name: "Again", Type: reflect.TypeFor[string](), Tag: `json:"same"`}})
	b := &boundary{found: map[string][]string{}}
	b.walk(twice, "twice", "twice", false, map[reflect.Type]bool{})
	if got := slices.Collect(maps.Keys(b.found)); len(got) != 1 || !strings.Contains(got[0], ".Again (JSON name same also Twice's") {
		t.Errorf("two fields named same: found %q", got)
	}
}
