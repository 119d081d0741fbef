package config

import (
	"errors"
	"time"
)

// Settings reads the settings a saga reads in its own package
// (saga.Env.Lookup), as Load reads the process's: the same forms, the same
// messages, every mistake kept so that one start names them all (Err).
// Their variables are declared in Variables like every other, with the
// roles that use them.
type Settings struct{ r reader }

// NewSettings reads through lookup (os.LookupEnv in pixd).
func NewSettings(lookup func(string) (string, bool)) *Settings {
	return &Settings{reader{lookup: lookup}}
}

// Lookup is the variable name's value, and whether it is set.
func (s *Settings) Lookup(name string) (string, bool) { return s.r.lookup(name) }

// Duration reads a positive duration into dst, when name is set.
func (s *Settings) Duration(name string, dst *time.Duration) { s.r.dur(name, dst) }

// Wait reads a wait that may be 0 (none), up to limit (0: no limit), into
// dst; example is one that reads (shown when it does not). It reports
// whether the value was set and taken.
func (s *Settings) Wait(name, example string, limit time.Duration, dst *time.Duration) bool {
	return s.r.waitDur(name, example, limit, dst)
}

// Fail records what is wrong with a setting.
func (s *Settings) Fail(err error) { s.r.fail(err) }

// Err is every mistake read, nil when there is none.
func (s *Settings) Err() error { return errors.Join(s.r.errs...) }
