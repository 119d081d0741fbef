package dict

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/pixbank/pix/internal/dict/dictspec"
)

// The tests of the package's insides that need no DICT; the client's
// calls are tested against the DICT simulator in client_test.go.

// TestDeclaredProblemsAreTheDocuments: each problem type of the facts
// document is declared once by the client, and no other.
func TestDeclaredProblemsAreTheDocuments(t *testing.T) {
	spec, err := dictspec.Load()
	if err != nil {
		t.Fatal(err)
	}
	got, want := slices.Collect(maps.Keys(problems)), spec.ProblemTypes()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("declared %v\nthe document's %v", got, want)
	}
}

// TestPoliciesAreTheDocuments: the client's policy table is the facts
// document's.
func TestPoliciesAreTheDocuments(t *testing.T) {
	spec, err := dictspec.Load()
	if err != nil {
		t.Fatal(err)
	}
	doc := spec.Policies()
	if len(doc) != len(allPolicies) {
		t.Errorf("%d policies, the document has %d", len(allPolicies), len(doc))
	}
	for _, p := range allPolicies {
		d, ok := doc[p.name]
		if !ok || d.RefillPerMinute != p.refillPerMinute || d.BucketSize != p.bucketSize {
			t.Errorf("policy %+v, the document's %+v", p, d)
		}
	}
	for _, op := range spec.Operations() {
		for _, name := range op.Policies {
			if _, ok := doc[name]; !ok {
				t.Errorf("%s draws from %s, not in x-policies", op, name)
			}
		}
	}
}

func TestAmount(t *testing.T) {
	for in, want := range map[string]Amount{"200.00": 20000, "0.01": 1, "7": 700, "12.5": 1250, " 3.10 ": 310} {
		var a Amount
		if err := a.UnmarshalText([]byte(in)); err != nil || a != want {
			t.Errorf("%q: %d, %v", in, a, err)
		}
		if b, _ := want.MarshalText(); fmt.Sprint(string(b)) != fmt.Sprintf("%d.%02d", want/100, want%100) {
			t.Errorf("%d written %s", want, b)
		}
	}
	for _, in := range []string{"", "1.234", "-1.00", "+1", "1e3", "1,00", ".5", "99999999999999999999"} {
		var a Amount
		if err := a.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("%q read as %d", in, a)
		}
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"": 0, "0": 0, "-5": 0, "30": 30 * time.Second, "soon": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
	} {
		if got := retryAfter(in, now); got != want {
			t.Errorf("Retry-After %q: %s, want %s", in, got, want)
		}
	}
}

// TestRetryAfterIsBounded: a Retry-After far ahead is cut to 5 minutes
// (the largest a caller waits on the DICT's word), never overflows, and
// one in the past, negative or zero is none (a 429 then waits for the
// bucket's refill: TestRetryAfterIsBoundedOnTheWire).
func TestRetryAfterIsBounded(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	const most = 5 * time.Minute
	for in, want := range map[string]time.Duration{
		"300": most, "301": most, "299": 299 * time.Second,
		"10000000000": most, "9223372036854775807": most, "99999999999999999999": most,
		"-9223372036854775808": 0, "-1": 0,
		now.AddDate(1, 0, 0).Format(http.TimeFormat):  most,
		now.AddDate(-1, 0, 0).Format(http.TimeFormat): 0,
	} {
		if got := retryAfter(in, now); got != want {
			t.Errorf("Retry-After %q: %s, want %s", in, got, want)
		}
	}
}
