package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// A case is run again only when its fault did not happen and nothing else
// failed: a missed fault with another violation, or another error, is the
// case's result.
func TestOnlyACaseWhoseFaultDidNotHappenRunsAgain(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    outcome
		want bool
	}{
		{"passed", outcome{}, false},
		{"its fault missed", outcome{violations: []string{missed("no answers lost")}}, true},
		{"two faults missed", outcome{violations: []string{missed("no a"), missed("no b")}}, true},
		{"the inject missed its fault", outcome{err: fmt.Errorf("%w: no submission", errFaultMissed)}, true},
		{"missed and a violation", outcome{violations: []string{missed("no a"), "3 PIX credited twice"}}, false},
		{"a violation alone", outcome{violations: []string{"3 PIX credited twice"}}, false},
		{"another error", outcome{err: errors.New("drain: 2 transfers open")}, false},
		{"another error, its fault missed", outcome{err: errors.New("drain"), violations: []string{missed("no a")}}, false},
		{"a violation quoting the words", outcome{violations: []string{"reconcile: the fault did not happen"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) { require.Equal(t, tc.want, tc.o.onlyMissed()) })
	}
}
