package psptest

import (
	"fmt"
	"sync"

	"github.com/pixbank/pix/internal/psp"
)

// Calls counts the calls an in-memory fake PSP answered from its scripts
// (Next), by kind ("submit", "status", "put", "get"): what an activities'
// test asks of it afterwards (Count). Safe for concurrent use.
type Calls struct {
	mu sync.Mutex
	n  map[string]int
}

// Count is how many calls of kind were made.
func (c *Calls) Count(kind string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[kind]
}

// Next counts one call of kind and answers it from script, one answer a
// call, the last one repeating; with none scripted, a PSP that does not
// answer (psp.ErrTransient).
func Next[A any](c *Calls, kind string, script []A) (A, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	n := c.n[kind]
	c.n[kind]++
	if len(script) == 0 {
		var none A
		return none, fmt.Errorf("%w: no %s scripted", psp.ErrTransient, kind)
	}
	return script[min(n, len(script)-1)], nil
}
