package app_test

import (
	"os"
	"testing"
)

// TestMain runs the tests' services, which read the sagas' settings from
// the process's environment, with MED without the DICT, as make run does:
// none of them has a DICT, and pixd refuses to start without the choice.
func TestMain(m *testing.M) {
	if _, ok := os.LookupEnv("MED_DICT_URL"); !ok {
		os.Setenv("MED_DICT_DISABLED", "true")
	}
	os.Exit(m.Run())
}
