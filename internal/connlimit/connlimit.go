package connlimit

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// refusalTime bounds the handling of one refused connection: waiting for
// its request, writing the answer, and draining what the client still
// sends.
const refusalTime = time.Second

// maxRefusing bounds the refusals in progress (a goroutine and a socket
// each): past it a refused connection is closed at once, unanswered. A
// client that sends its request as it connects is answered in well under
// a millisecond, so this many take thousands of refusals a second.
const maxRefusing = 512

// Limiter caps the connections of each listener it wraps: every listener
// has a budget of its own, so that one reached by anyone (the customer
// API) can't spend the places of another (the PSPs' webhook listener,
// WEBHOOK_HTTP_ADDR).
type Limiter struct {
	max    int64
	answer []byte
	shed   func()
	// refusing counts the refusals in progress (maxRefusing).
	refusing atomic.Int64

	mu      sync.Mutex
	budgets []*budget
}

// budget is one listener's places.
type budget struct {
	max  int64
	open atomic.Int64
	// idle are the connections between two requests (ConnState): at the
	// cap, one of them is closed to make room rather than the newcomer
	// refused, so idle keep-alive connections can't hold the places.
	mu   sync.Mutex
	idle map[*conn]struct{}
}

// New returns a Limiter of max connections per listener (0: no cap);
// answer is written on every connection over it (a whole HTTP/1.1
// response, with Connection: close), and shed, when set, is called for
// each.
func New(max int, answer []byte, shed func()) *Limiter {
	if shed == nil {
		shed = func() {}
	}
	return &Limiter{max: int64(max), answer: answer, shed: shed}
}

// ConnState is the http.Server's ConnState hook of the servers on l's
// listeners: it tells l which connections are idle, between two requests,
// and may be closed to make room for a new one. Without it, an idle
// keep-alive connection holds its place until HTTP_IDLE_TIMEOUT: a client
// that leaves the cap's worth of them open would have every newcomer
// refused, at the cost of a request per connection and idle timeout.
func (l *Limiter) ConnState(c net.Conn, state http.ConnState) {
	if l == nil {
		return
	}
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	cc, ok := c.(*conn)
	if !ok {
		return
	}
	b := cc.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	if state == http.StateIdle {
		b.idle[cc] = struct{}{}
	} else {
		delete(b.idle, cc)
	}
}

// admit takes a place under the cap, if one is free.
func (b *budget) admit() bool {
	if b.open.Add(1) <= b.max {
		return true
	}
	b.open.Add(-1)
	return false
}

// closeIdle closes one idle connection, if any: its place is free when it
// returns true. Closing a keep-alive connection between requests is what
// any server may do (RFC 9112, 9.8): its client opens another.
func (b *budget) closeIdle() bool {
	b.mu.Lock()
	var victim *conn
	for c := range b.idle {
		victim = c
		break
	}
	delete(b.idle, victim)
	b.mu.Unlock()
	if victim == nil {
		return false
	}
	_ = victim.Close() //nolint:errcheck // its place is released either way
	return true
}

// Open is the number of connections served now, on all its listeners.
func (l *Limiter) Open() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, b := range l.budgets {
		n += b.open.Load()
	}
	return n
}

// Listen wraps ln, with a budget of its own. tlsCfg is the TLS its server
// speaks on it (nil: plain HTTP): a refused connection is answered after a
// handshake of its own, over HTTP/1.1 whatever the server would negotiate.
func (l *Limiter) Listen(ln net.Listener, tlsCfg *tls.Config) net.Listener {
	if l == nil || l.max <= 0 {
		return ln
	}
	if tlsCfg != nil {
		tlsCfg = tlsCfg.Clone()
		tlsCfg.NextProtos = []string{"http/1.1"}
	}
	b := &budget{max: l.max, idle: map[*conn]struct{}{}}
	l.mu.Lock()
	l.budgets = append(l.budgets, b)
	l.mu.Unlock()
	return &listener{Listener: ln, l: l, b: b, tls: tlsCfg}
}

type listener struct {
	net.Listener
	l   *Limiter
	b   *budget
	tls *tls.Config
	// refusals are the goroutines answering refused connections; Close
	// waits for them (each ends within refusalTime).
	refusals sync.WaitGroup
}

// Accept returns the next connection within the cap; those over it are
// answered and closed meanwhile.
func (ln *listener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if ln.b.admit() || (ln.b.closeIdle() && ln.b.admit()) {
			return &conn{Conn: c, budget: ln.b}, nil
		}
		ln.l.shed()
		if ln.l.refusing.Add(1) > maxRefusing {
			ln.l.refusing.Add(-1)
			_ = c.Close() //nolint:errcheck // refused; the client sees the connection close
			continue
		}
		ln.refusals.Go(func() {
			defer ln.l.refusing.Add(-1)
			ln.refuse(c)
		})
	}
}

// Close stops accepting and waits for the refusals in progress.
func (ln *listener) Close() error {
	err := ln.Listener.Close()
	ln.refusals.Wait()
	return err
}

// refuse answers c once its request began to arrive: an answer before
// the request would read, to a client about to send one, as a stray
// response. It then half-closes and drains c before closing it, for
// closing a socket with unread bytes resets the connection, and the reset
// can destroy the answer before the client read it.
func (ln *listener) refuse(c net.Conn) {
	defer c.Close() //nolint:errcheck // the connection is done with either way

	_ = c.SetDeadline(time.Now().Add(refusalTime)) //nolint:errcheck // a closed connection fails below
	if ln.tls != nil {
		c = tls.Server(c, ln.tls)
	}
	var first [1]byte
	if _, err := c.Read(first[:]); err != nil {
		return
	}
	if _, err := c.Write(ln.l.answer); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite() //nolint:errcheck // the drain below ends at the deadline anyway
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20)) //nolint:errcheck // until EOF or the deadline
}

// conn releases its place under the cap when closed, once.
type conn struct {
	net.Conn
	budget *budget
	once   sync.Once
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.budget.mu.Lock()
		delete(c.budget.idle, c)
		c.budget.mu.Unlock()
		c.budget.open.Add(-1)
	})
	return err
}

// CloseWrite half-closes the connection, as net/http does before closing
// one it answered with an error (the wrapper would hide the TCP method).
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.New("connlimit: the connection can't half-close")
}
