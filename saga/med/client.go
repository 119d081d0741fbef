package med

import (
	"fmt"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga"
)

// dictKey keeps the process's one DICT client (saga.Kept): the saga's
// steps and its lister share its connections.
type dictKey struct{}

// dictOf is the DICT the saga's activities call, as env's settings
// configure it, built once per process: the DICT client (dict.HTTPClient),
// or, with no MED_DICT_URL, notConfigured, which refuses every call
// unsent: MED_DICT_DISABLED=true, which pixd's start requires then and
// which the worker says at its start (WARN), or a test's Env that sets
// nothing. The settings were checked at start (CheckSettings): a client
// that can't be built here is wiring that skipped the check, and panics.
func dictOf(env saga.Env) *dict.HTTPClient {
	s := settings.Of(env.Lookup)
	if s.DICT.BaseURL == "" {
		if s.Disabled && env.Log != nil {
			env.Log.Warn("med: MED_DICT_DISABLED=true: no DICT client; an infraction report's run holds its money and stops at its first DICT step, and nothing lists the DICT's reports")
		}
		return nil
	}
	return saga.Kept(env.Process, dictKey{}, func() *dict.HTTPClient {
		c, err := dict.New(s.DICT)
		if err != nil {
			panic(fmt.Sprintf("med: the DICT client, its settings unchecked at start: %v", err))
		}
		return c
	})
}
