package pspsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// The two kinds of behaviour, a Pix key's Behavior (transfers) and a PIX's
// RefundBehavior (devoluções), share the fields mode, times, settle_after,
// delay and reason, their JSON form, their rules, and the bookkeeping of
// the behaviours by key with the requests each met. That is here, once;
// each kind adds its own fields and modes (behavior.go,
// refund_behavior.go).

// behavior is what the simulator needs of a kind of behaviour.
type behavior interface {
	Validate() error
	// misbehaves reports whether the n-th request (from 1) counted since
	// the behaviour was set misbehaves: its mode counts Times, and Times
	// is 0 (every request) or not used up.
	misbehaves(n int) bool
	// modeName is the mode, for the request log.
	modeName() string
}

// common is the fields every kind of behaviour has, M its mode type.
type common[M ~string] struct {
	mode        M
	times       int
	settleAfter time.Duration
	delay       time.Duration
	reason      string
}

// durationJSON is a behaviour's duration on the wire: a Go duration string,
// "" (omitted) for 0.
func durationJSON(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// parseDurations reads the settle_after and delay of a behaviour's JSON
// form.
func parseDurations(settleAfter, delay string) (time.Duration, time.Duration, error) {
	s, err := parseDuration("settle_after", settleAfter)
	if err != nil {
		return 0, 0, err
	}
	d, err := parseDuration("delay", delay)
	return s, d, err
}

// parseDuration reads the duration field of a behaviour's JSON form, ""
// being 0.
func parseDuration(field, value string) (time.Duration, error) {
	if value == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(value)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", field, err)
	}
	return d, nil
}

// wireForm is the JSON form of a behaviour B.
type wireForm[B any] interface {
	behavior() (B, error)
}

// unmarshalBehavior decodes data, a behaviour's JSON form W, into *b. It
// refuses unknown fields: a misspelt "time" must not silently mean "every
// time".
func unmarshalBehavior[W wireForm[B], B any](data []byte, b *B) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var j W
	if err := dec.Decode(&j); err != nil {
		return err
	}
	nb, err := j.behavior()
	if err != nil {
		return err
	}
	*b = nb
	return nil
}

// modeRules are what a kind of behaviour's modes make of the common
// fields.
type modeRules[M ~string] struct {
	// modes is every mode, in the order the errors name them.
	modes []M
	// counted are the modes Times applies to.
	counted []M
	// instant are the modes SettleAfter does not apply to, and
	// instantWhy what the error adds.
	instant    []M
	instantWhy string
	// delayed are the modes Delay applies to; nil means all of them.
	delayed []M
	// reasoned are the modes Reason applies to.
	reasoned []M
}

// misbehaves reports whether the n-th request (from 1) counted under c
// misbehaves.
func (r modeRules[M]) misbehaves(c common[M], n int) bool {
	return slices.Contains(r.counted, c.mode) && (c.times == 0 || n <= c.times)
}

// check returns what is wrong with c. A field that the mode does not use is
// an error rather than ignored, so that a request like
// {"mode":"accept","delay":"5s"} is not mistaken for a slow PSP.
func (r modeRules[M]) check(c common[M]) problems {
	var p problems
	switch {
	case c.mode == "":
		p.addf("mode is required")
	case !slices.Contains(r.modes, c.mode):
		p.addf("mode %q is not one of %s", c.mode, joinModes(r.modes, ", "))
	}
	if c.times < 0 {
		p.addf("times must not be negative")
	} else if c.times > 0 {
		onlyFor(&p, "times", c.mode, r.counted...)
	}
	if c.settleAfter < 0 {
		p.addf("settle_after must not be negative")
	} else if c.settleAfter > 0 && slices.Contains(r.instant, c.mode) {
		p.addf("settle_after does not apply to %s%s", c.mode, r.instantWhy)
	}
	if c.delay < 0 || c.delay > MaxDelay {
		p.addf("delay must be between 0 and %s", MaxDelay)
	} else if c.delay > 0 && r.delayed != nil {
		onlyFor(&p, "delay", c.mode, r.delayed...)
	}
	if c.reason != "" {
		onlyFor(&p, "reason", c.mode, r.reasoned...)
	}
	return p
}

// problems is what is wrong with a behaviour, in the order of its fields.
type problems []string

func (p *problems) addf(format string, args ...any) {
	*p = append(*p, fmt.Sprintf(format, args...))
}

// onlyFor reports whether mode is one of modes, recording that field, which
// is set, applies to them only when it is not.
func onlyFor[M ~string](p *problems, field string, mode M, modes ...M) bool {
	if slices.Contains(modes, mode) {
		return true
	}
	p.addf("%s applies to %s, not %s", field, joinModes(modes, " and "), mode)
	return false
}

// joinModes names modes, separated by ", " but for the last, by last.
func joinModes[M ~string](modes []M, last string) string {
	var b strings.Builder
	for i, m := range modes {
		switch {
		case i == 0:
		case i == len(modes)-1:
			b.WriteString(last)
		default:
			b.WriteString(", ")
		}
		b.WriteString(string(m))
	}
	return b.String()
}

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	// One line, not errors.Join's lines: it becomes a JSON error message.
	return errors.New(strings.Join(p, "; "))
}

// registry holds one kind of behaviour by key (a Pix key, a PIX's
// end_to_end_id), each with the requests it met since it was set, which its
// Times counts against. mu is the simulator's lock: set, remove and
// entries take it; request and byKey are used with it held.
type registry[B behavior] struct {
	mu *sync.Mutex
	// fallback is the behaviour of a key that has none.
	fallback B
	// checkKey refuses a malformed key.
	checkKey func(key string) error
	byKey    map[string]*entry[B]
}

// entry is a key's behaviour and what it counted since it was set.
type entry[B behavior] struct {
	behavior B
	// requests is how many requests met it: submissions to a Pix key,
	// PUTs of a PIX's devoluções.
	requests int
	// resubmissions is how many of them resubmitted a transfer the
	// simulator held, which duplicate_conflict's Times counts against
	// (devoluções have no such mode: 0).
	resubmissions int
}

func newRegistry[B behavior](mu *sync.Mutex, fallback B, checkKey func(string) error) registry[B] {
	return registry[B]{mu: mu, fallback: fallback, checkKey: checkKey, byKey: make(map[string]*entry[B])}
}

// set makes key behave as b from now on, restarting its counts.
func (r *registry[B]) set(key string, b B) error {
	if err := r.checkKey(key); err != nil {
		return err
	}
	if err := b.Validate(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byKey[key] = &entry[B]{behavior: b}
	return nil
}

// remove takes key back to the fallback.
func (r *registry[B]) remove(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byKey, key)
}

// request counts a request to key and returns the behaviour it meets (the
// fallback when key has none), whether that misbehaves by its Times, and
// the key's entry, nil when none. The caller holds mu.
func (r *registry[B]) request(key string) (B, bool, *entry[B]) {
	e, ok := r.byKey[key]
	if !ok {
		return r.fallback, false, nil
	}
	e.requests++
	return e.behavior, e.behavior.misbehaves(e.requests), e
}

// entries returns view of every key's entry, by key.
func entries[B behavior, V any](r *registry[B], view func(key string, e entry[B]) V) []V {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := slices.Sorted(maps.Keys(r.byKey))
	out := make([]V, len(keys))
	for i, k := range keys {
		out[i] = view(k, *r.byKey[k])
	}
	return out
}
