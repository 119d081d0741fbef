package registry_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/saga/refund"
	"github.com/pixbank/pix/saga/registry"
)

// signalPayloads are the payloads of the signals the sagas receive, which
// no workflow's or activity's signature names (a cancel of a scheduled
// PIX carries none).
var signalPayloads = []any{refund.Notice{}}

// No payload of any saga holds a time.Duration, which encoding/json writes
// as integer nanoseconds and the Temporal UI shows so: every duration an
// input, a result or a signal carries is a payload.Duration ("1s"). The
// payloads are every registered workflow's input and result and every
// activity's, as the worker registers them (registry.All), Schedule
// arguments included (they are their workflow's input); a new field of
// type time.Duration anywhere in them fails here.
func TestNoPayloadHoldsATimeDuration(t *testing.T) {
	e := env(t)
	var types []reflect.Type
	for _, d := range registry.All {
		for name, fn := range d.Workflows {
			in, out := signature(t, reflect.TypeOf(fn))
			require.NotEmpty(t, in, "%s: workflow %s takes no workflow.Context", d.Name, name)
			require.Equal(t, reflect.TypeFor[workflow.Context](), in[0], "%s: workflow %s", d.Name, name)
			types = append(types, in[1:]...)
			types = append(types, out...)
		}
		for _, a := range d.Activities(d.Deps(e)) {
			for _, fn := range activityFuncs(reflect.ValueOf(a)) {
				in, out := signature(t, fn)
				types = append(types, in...)
				types = append(types, out...)
			}
		}
	}
	for _, s := range signalPayloads {
		types = append(types, reflect.TypeOf(s))
	}
	require.Greater(t, len(types), 20, "the sagas' payload types were not found")

	seen := map[reflect.Type]bool{}
	var found []string
	for _, typ := range types {
		found = append(found, durations(typ, typ.String(), seen)...)
	}
	require.Empty(t, found, "time.Duration in a payload: make it a payload.Duration (internal/payload), which reads both forms")

	// And the walk finds one where there is one.
	type withDuration struct {
		Settings struct{ Poll *time.Duration }
		Timeout  payload.Duration
		ByName   map[string][]time.Duration
	}
	require.Equal(t, []string{"x.Settings.Poll", "x.ByName[]"}, durations(reflect.TypeFor[withDuration](), "x", map[reflect.Type]bool{}))
}

// signature is fn's parameters and results that are payloads: all but a
// context and an error.
func signature(t *testing.T, fn reflect.Type) (in, out []reflect.Type) {
	t.Helper()
	require.Equal(t, reflect.Func, fn.Kind(), "%s is not a function", fn)
	for i := range fn.NumIn() {
		if p := fn.In(i); p != reflect.TypeFor[context.Context]() {
			in = append(in, p)
		}
	}
	for i := range fn.NumOut() {
		if r := fn.Out(i); r != reflect.TypeFor[error]() {
			out = append(out, r)
		}
	}
	return in, out
}

// activityFuncs are the activities RegisterActivity registers for a: a
// function, or each exported method of a struct.
func activityFuncs(a reflect.Value) []reflect.Type {
	if a.Kind() == reflect.Func {
		return []reflect.Type{a.Type()}
	}
	var fns []reflect.Type
	for i := range a.NumMethod() {
		fns = append(fns, a.Method(i).Type())
	}
	return fns
}

// durations are the paths, from path, of the time.Durations in what
// encoding/json writes of typ: its exported fields, elements and map
// values, each type walked once. A type that marshals itself is its own
// form.
func durations(typ reflect.Type, path string, seen map[reflect.Type]bool) []string {
	if typ == reflect.TypeFor[time.Duration]() {
		return []string{path}
	}
	if seen[typ] || typ.Implements(reflect.TypeFor[json.Marshaler]()) {
		return nil
	}
	seen[typ] = true
	switch typ.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return durations(typ.Elem(), path, seen)
	case reflect.Map:
		return slices.Concat(durations(typ.Key(), path+"[key]", seen), durations(typ.Elem(), path+"[]", seen))
	case reflect.Struct:
		var found []string
		for i := range typ.NumField() {
			if f := typ.Field(i); f.IsExported() || f.Anonymous {
				found = append(found, durations(f.Type, path+"."+f.Name, seen)...)
			}
		}
		return found
	}
	return nil
}
