package med

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/pixbank/pix/internal/tooling/dictsim"
	"github.com/pixbank/pix/saga"
)

// Attack review LOW-2: with MED_DICT_URL set and MED_DICT_POLICIES_URL
// unset the lister's reads of its buckets fail (the policies asked of the
// API's base, which serves none), counted, its WARN at each read only. The
// process says so once, at the DICT client's build; set, it says nothing.
func TestAnUnsetPoliciesURLIsSaidAtTheStart(t *testing.T) {
	ts := dictsim.NewTestServer(t, dictsim.Options{})
	for _, c := range []struct {
		name     string
		policies string
		warned   bool
	}{{"unset", "", true}, {"set", ts.Config.BaseURL, false}} {
		var out bytes.Buffer
		env := saga.Env{Log: slog.New(slog.NewTextHandler(&out, nil)), Process: saga.NewProcess()}
		s := DefaultSettings()
		s.DICT = ts.Config
		s.DICT.PoliciesURL = c.policies
		dictOf(env, s)
		dictOf(env, s)
		if got := strings.Count(out.String(), "MED_DICT_POLICIES_URL unset"); got != map[bool]int{true: 1}[c.warned] {
			t.Errorf("%s: said %d times: %s", c.name, got, out.String())
		}
	}
}
