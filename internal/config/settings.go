package config

import (
	"errors"
	"fmt"
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

// LookupIn reads the variables env sets (name, value) as os.LookupEnv reads
// the process's: a test's settings, or pixd's given in code.
func LookupIn(env map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) { v, ok := env[name]; return v, ok }
}

// Lookup is the variable name's value, and whether it is set.
func (s *Settings) Lookup(name string) (string, bool) { return s.r.lookup(name) }

// Str reads a string that must not be empty into dst, when name is set.
func (s *Settings) Str(name string, dst *string) { s.r.str(name, dst) }

// Bool reads true or false into dst, when name is set.
func (s *Settings) Bool(name string, dst *bool) { s.r.boolean(name, dst) }

// Duration reads a positive duration into dst, when name is set.
func (s *Settings) Duration(name string, dst *time.Duration) { s.r.dur(name, dst) }

// Wait reads a wait that may be 0 (none), up to limit (0: no limit), into
// dst; example is one that reads (shown when it does not). It reports
// whether the value was set and taken.
func (s *Settings) Wait(name, example string, limit time.Duration, dst *time.Duration) bool {
	return s.r.waitDur(name, example, limit, dst)
}

// Integer reads a whole number from min to max, when name is set, and
// hands it to set.
func (s *Settings) Integer(name string, min, max int64, set func(int64)) {
	s.r.integer(name, min, max, set)
}

// Fail records what is wrong with a setting.
func (s *Settings) Fail(err error) { s.r.fail(err) }

// Err is every mistake read, nil when there is none.
func (s *Settings) Err() error { return errors.Join(s.r.errs...) }

// SagaSettings are how a saga reads its own settings, S (its package's
// Settings): Read reads each variable into the defaults, through a
// Settings. One value of it per saga gives the saga's descriptor its
// check (Check) and its code the settings (Of), read the same way.
type SagaSettings[S any] struct {
	// What names the settings in the panic of a read that was not checked
	// ("refund").
	What string
	// Defaults are the settings of an environment that sets none.
	Defaults func() S
	// Read reads the variables through r into s, the defaults: each set
	// one that reads replaces its default, each mistake is kept in r.
	Read func(r *Settings, s *S)
}

// From reads the settings through lookup (os.LookupEnv): a value set that
// does not read is an error, never the default; every mistake is named.
func (o SagaSettings[S]) From(lookup func(string) (string, bool)) (S, error) {
	s := o.Defaults()
	r := NewSettings(lookup)
	o.Read(r, &s)
	return s, r.Err()
}

// Check is what From finds wrong: the saga's Descriptor.Settings, which
// pixd runs at its start (registry.CheckSettings).
func (o SagaSettings[S]) Check(lookup func(string) (string, bool)) error {
	_, err := o.From(lookup)
	return err
}

// Of are the settings lookup reads (saga.Env.Lookup), which pixd checked
// at its start (Check): a mistake here is wiring that skipped the check,
// and panics. A nil lookup (a test's Env) reads the defaults.
func (o SagaSettings[S]) Of(lookup func(string) (string, bool)) S {
	if lookup == nil {
		return o.Defaults()
	}
	s, err := o.From(lookup)
	if err != nil {
		panic(fmt.Sprintf("%s settings read unchecked: %v", o.What, err))
	}
	return s
}
