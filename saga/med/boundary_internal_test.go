package med

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/converter"

	"github.com/pixbank/pix/internal/codec"
	"github.com/pixbank/pix/internal/dict"
)

// The run never sees the store's row: it sees the report as the activities'
// results carry it, through Temporal's data converter (JSON, sealed by the
// payload codec), decoded into the one variable the run keeps (Workflow's
// r: load, act, returnOrWait). fec46d2 fixed a field the converter dropped
// (RefundCloseSentAt, json:"-") that closedCopy read: in the run the branch
// could never be taken. These tests hold the run's decisions to the row's.

// productionConverter is the data converter pixd's workers use with
// TEMPORAL_CODEC_KEYS set (app.encryptPayloads): the SDK's default JSON,
// sealed by the codec.
func productionConverter(t testing.TB) converter.DataConverter {
	t.Helper()
	ring, err := codec.ParseKeyRing("boundary=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, codec.KeySize)))
	if err != nil {
		t.Fatal(err)
	}
	return codec.NewConverters(codec.New(ring)).DataConverter
}

// boundaryStrings is the domain of every random string field: every value
// the run's decisions compare a string with, and others.
var boundaryStrings = []string{"", StatusReceived, StatusHeld, StatusAcknowledged, StatusAnalysed, StatusAwaitingRequest,
	StatusReturning, StatusAwaitingCredit, StatusEnded, StatusNotOurs, EndCancelled, EndReleased, "account_closed", "x",
	string(dict.RefundOpen), string(dict.RefundClosed), string(dict.RefundCancelled), string(dict.Rejected),
	string(dict.Disagreed), string(dict.ReportCancelled), string(dict.ReportOpen), string(dict.ReportAcknowledged), string(dict.ReportClosed)}

// randomize sets v (and everything under it) at random around now; a
// pointer is nil one time in nilOneIn (never when nilOneIn is 0). A kind
// it has no value for panics: a new field of the report gets one here.
func randomize(rng *rand.Rand, v reflect.Value, now time.Time, nilOneIn int) {
	switch v.Interface().(type) {
	case time.Time:
		v.Set(reflect.ValueOf(now.Add(time.Duration(rng.IntN(9)-4) * time.Hour)))
		return
	case uuid.UUID:
		v.Set(reflect.ValueOf(uuid.UUID(randomBytes(rng))))
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if nilOneIn > 0 && rng.IntN(nilOneIn) == 0 {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		p := reflect.New(v.Type().Elem())
		randomize(rng, p.Elem(), now, nilOneIn)
		v.Set(p)
	case reflect.String:
		v.SetString(boundaryStrings[rng.IntN(len(boundaryStrings))])
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(rng.IntN(3) * 100))
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			randomize(rng, v.Field(i), now, nilOneIn)
		}
	default:
		panic(fmt.Sprintf("randomize: no random %s (%s)", v.Kind(), v.Type()))
	}
}

func randomBytes(rng *rand.Rand) [16]byte {
	var b [16]byte
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// randomReport is a report drawn at random: every field set, its pointers
// nil half of the time, and the row's invariants the run relies on (its
// deadlines set, a request's state with its id) kept seven times in eight.
func randomReport(rng *rand.Rand, now time.Time) Report {
	var r Report
	randomize(rng, reflect.ValueOf(&r).Elem(), now, 2)
	at := func() *time.Time { u := now.Add(time.Duration(rng.IntN(9)-4) * time.Hour); return &u }
	if r.ReturnUntil == nil && rng.IntN(8) > 0 {
		r.ReturnUntil = at()
	}
	if r.RequestDueAt == nil && rng.IntN(8) > 0 {
		r.RequestDueAt = at()
	}
	if r.RefundRequestState != nil && r.RefundRequestID == nil && rng.IntN(8) > 0 {
		id := uuid.UUID(randomBytes(rng))
		r.RefundRequestID = &id
	}
	return r
}

// runDecisions is everything the workflow decides or reads on a report
// (workflow.go, keptclose.go; the fields the activities read of the
// report the run hands them: ID, Gen, Status, RefundID), as values that
// compare with ==. A decision that panics (a report against the row's
// invariants) is "panic".
type runDecisions struct {
	stepOn, stepOff, stepMixed string
	endsWithKept               string
	requestDueAt, returnUntil  string
	gen, heldCents             int64
	id                         uuid.UUID
	status, refundID           string
}

func decide(r Report, now time.Time, mask uint64) runDecisions {
	mixed := func(change string) bool {
		h := fnv.New64a()
		h.Write([]byte(change))
		return mask>>(h.Sum64()%64)&1 == 1
	}
	step := func(versioned func(string) bool) string {
		return safely(func() string { return string(runStep(r, now, versioned)) })
	}
	at := func(t *time.Time) string {
		if t == nil {
			return "nil"
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	return runDecisions{
		stepOn:       step(func(string) bool { return true }),
		stepOff:      step(func(string) bool { return false }),
		stepMixed:    step(mixed),
		endsWithKept: safely(func() string { return fmt.Sprint(EndsWithKeptRequests(r)) }),
		requestDueAt: at(r.RequestDueAt), returnUntil: at(r.ReturnUntil),
		gen: r.Gen, heldCents: r.HeldCents, id: r.ID, status: r.Status, refundID: deref(r.RefundID),
	}
}

func safely(f func() string) (out string) {
	defer func() {
		if recover() != nil {
			out = "panic"
		}
	}()
	return f()
}

// differing names the fields of a and b that differ (times by Equal).
func differing(a, b Report) []string {
	var out []string
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := 0; i < va.NumField(); i++ {
		x, y := va.Field(i).Interface(), vb.Field(i).Interface()
		same := reflect.DeepEqual(x, y)
		switch x := x.(type) {
		case time.Time:
			same = x.Equal(y.(time.Time))
		case *time.Time:
			y := y.(*time.Time)
			same = (x == nil) == (y == nil) && (x == nil || x.Equal(*y))
		}
		if !same {
			out = append(out, va.Type().Field(i).Name)
		}
	}
	return out
}

// TestTheRunDecidesAsTheStoreRowSays: every decision the run takes on a
// report (runStep with its changes all taken, none, or some; what it ends
// with; the deadlines its timers wait for, and what it compares and hands
// on) is the same on the row as the store returns it and on the report as
// the run holds it: the row through the production data converter,
// decoded into the run's variable as it stood after the report before.
// A difference names a field the run does not see as the store wrote it
// (with fec46d2's json:"-" on RefundCloseSentAt back, closedCopy's branch).
// One case in 16 goes through the codec as production seals payloads (it
// seals the JSON bytes as they are, and costs twice the round trip); the
// others through the same JSON converter unsealed.
func TestTheRunDecidesAsTheStoreRowSays(t *testing.T) {
	sealed, plain := productionConverter(t), converter.GetDefaultDataConverter()
	rng := rand.New(rand.NewPCG(20261207, 1))
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	var run Report // the run's variable, reused as Workflow reuses r
	failures := 0
	for i := 0; i < boundaryCases && failures < 5; i++ {
		row := randomReport(rng, now)
		dc := plain
		if i%16 == 0 {
			dc = sealed
		}
		p, err := dc.ToPayload(row)
		if err != nil {
			t.Fatal(err)
		}
		if err := dc.FromPayload(p, &run); err != nil {
			t.Fatal(err)
		}
		mask := rng.Uint64()
		if want, got := decide(row, now, mask), decide(run, now, mask); want != got {
			failures++
			t.Errorf("case %d: the run decides otherwise than the row says:\n row: %+v\n run: %+v\n fields that differ: %v",
				i, want, got, differing(row, run))
		}
	}
}

// TestTheRunsReportKeepsNothingStale: a report decoded into the run's
// variable (as load, act and returnOrWait do) is the report decoded into a
// fresh one: the SDK's JSON converter unmarshals into the value as it is,
// so a field the payload omits (omitempty on a nil) kept the value the
// run read before (RefundCloseSentAt, before it was written as null).
func TestTheRunsReportKeepsNothingStale(t *testing.T) {
	dc := productionConverter(t)
	rng := rand.New(rand.NewPCG(20261207, 2))
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	decode := func(r Report, into *Report) {
		p, err := dc.ToPayload(r)
		if err != nil {
			t.Fatal(err)
		}
		if err := dc.FromPayload(p, into); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 200; i++ {
		var run, fresh Report
		before := Report{}
		randomize(rng, reflect.ValueOf(&before).Elem(), now, 0) // every pointer set
		decode(before, &run)
		next := randomReport(rng, now)
		if i%2 == 0 {
			next = Report{ID: before.ID, Gen: before.Gen + 1, Status: before.Status} // every pointer nil
		}
		decode(next, &run)
		decode(next, &fresh)
		if d := differing(fresh, run); len(d) > 0 {
			t.Fatalf("case %d: the run's report kept the value read before in %v", i, d)
		}
	}
}
