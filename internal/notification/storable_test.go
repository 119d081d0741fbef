package notification

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkStorable checks Storable's copy of value (a JSON value a decoder
// accepted): valid JSON and valid UTF-8, left as it is by a second pass,
// and read by encoding/json as value is, but for the NUL character
// (U+FFFD) and the numbers it could not keep (their text, as strings).
// That PostgreSQL stores it is FuzzStoreWhatTheDecodersAccept's to check.
func checkStorable(t *testing.T, value []byte) {
	t.Helper()
	out := Storable(value)
	if !json.Valid(out) || !utf8.Valid(out) {
		t.Fatalf("Storable(%q) = %q: not valid JSON in UTF-8", value, out)
	}
	if again := Storable(out); !bytes.Equal(again, out) {
		t.Fatalf("Storable(%q) = %q, and again %q", value, out, again)
	}
	want, ok := readAsStored(t, value)
	if !ok {
		return // two keys of one object are one once sanitised: jsonb keeps the last
	}
	got, _ := readAsStored(t, out)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Storable(%q) = %q: reads %#v, want %#v", value, out, got, want)
	}
}

// readAsStored decodes value, with the NUL character read as U+FFFD and
// the numbers Storable does not keep as their text; ok is false when two
// keys of an object become one.
func readAsStored(t *testing.T, value []byte) (v any, ok bool) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", value, err)
	}
	ok = true
	var walk func(any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case string:
			return strings.ReplaceAll(v, "\x00", "\uFFFD")
		case json.Number:
			if !storableNumber([]byte(v)) {
				return string(v)
			}
			return v
		case []any:
			for i := range v {
				v[i] = walk(v[i])
			}
			return v
		case map[string]any:
			m := make(map[string]any, len(v))
			for k, e := range v {
				k = strings.ReplaceAll(k, "\x00", "\uFFFD")
				if _, dup := m[k]; dup {
					ok = false
				}
				m[k] = walk(e)
			}
			return m
		}
		return v
	}
	return walk(v), ok
}

func TestStorable(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", `{"a":"Maria","n":[1,-2.5e3,0]}`, `{"a":"Maria","n":[1,-2.5e3,0]}`},
		{"escapes kept", `{"a":"Jos\u00e9 \"Z\u00e9\" \ud83d\ude00 \\u0000"}`, `{"a":"Jos\u00e9 \"Z\u00e9\" \ud83d\ude00 \\u0000"}`},
		{"UTF-8 kept", `{"a":"José 😀"}`, `{"a":"José 😀"}`},
		{"a lone high surrogate", `{"a":"Jo\ud83d"}`, `{"a":"Jo\ufffd"}`},
		{"a lone low surrogate", `{"a":"\ude00x"}`, `{"a":"\ufffdx"}`},
		{"a high surrogate twice, then its pair", `["\ud83d\ud83d\ude00"]`, `["\ufffd\ud83d\ude00"]`},
		{"a high surrogate before another escape", `["\uD83D\u0041"]`, `["\ufffd\u0041"]`},
		{"a high surrogate at the end", `["\ud83d"]`, `["\ufffd"]`},
		{"NUL", `{"a":"x\u0000y"}`, `{"a":"x\ufffdy"}`},
		{"NUL in a key", `{"a\u0000":1}`, `{"a\ufffd":1}`},
		{"a Latin-1 byte", "{\"a\":\"Jos\xe9\"}", "{\"a\":\"Jos\uFFFD\"}"},
		{"a Latin-1 byte in a key", "{\"\xe9\":1}", "{\"\uFFFD\":1}"},
		{"a UTF-8 sequence cut short", "[\"\xf0\x9f\x98\"]", "[\"\uFFFD\uFFFD\uFFFD\"]"},
		{"an encoded surrogate", "[\"\xed\xa0\xbd\"]", "[\"\uFFFD\uFFFD\uFFFD\"]"},
		{"a number beyond numeric", `{"n":1e400000}`, `{"n":"1e400000"}`},
		{"a number below numeric", `[-1.5E-16384, 2]`, `["-1.5E-16384", 2]`},
		{"an exponent at the bound", `[1e300,1e-1000,1e+300]`, `[1e300,1e-1000,1e+300]`},
		{"a number beyond float64", `{"score":1e400,"debt":-1e309}`, `{"score":"1e400","debt":"-1e309"}`},
		{"an exponent past the bound", `[1e1001,1e-0001001]`, `["1e1001","1e-0001001"]`},
		{"a number too long", `[` + strings.Repeat("7", 1001) + `]`, `["` + strings.Repeat("7", 1001) + `"]`},
		{"a number at the length bound", `[0.` + strings.Repeat("7", 998) + `]`, `[0.` + strings.Repeat("7", 998) + `]`},
		{"all at once", "{\"x\":[\"\\ud83d\",\"\xe9\",\"\\u0000\",1e99999,true,null]}", "{\"x\":[\"\\ufffd\",\"\uFFFD\",\"\\ufffd\",\"1e99999\",true,null]}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Storable([]byte(tc.in))
			if string(got) != tc.want {
				t.Fatalf("Storable(%q) = %q, want %q", tc.in, got, tc.want)
			}
			checkStorable(t, []byte(tc.in))
		})
	}
}

// A value that needs nothing changed is returned as it is: no copy.
func TestStorableCopiesOnlyWhatItChanges(t *testing.T) {
	in := []byte(typicalAPIPix)
	if out := Storable(in); &out[0] != &in[0] {
		t.Fatal("Storable copied a payload it did not change")
	}
	if n := testing.AllocsPerRun(100, func() { Storable(in) }); n != 0 {
		t.Fatalf("Storable of a payload it does not change allocates %v times", n)
	}
}
