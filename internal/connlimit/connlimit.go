package connlimit

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
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

// Limiter counts the connections of the listeners it wraps against one cap.
type Limiter struct {
	max    int64
	answer []byte
	shed   func()
	open   atomic.Int64
	// refusing counts the refusals in progress (maxRefusing).
	refusing atomic.Int64
}

// New returns a Limiter of max connections (0: no cap); answer is written
// on every connection over it (a whole HTTP/1.1 response, with Connection:
// close), and shed, when set, is called for each.
func New(max int, answer []byte, shed func()) *Limiter {
	if shed == nil {
		shed = func() {}
	}
	return &Limiter{max: int64(max), answer: answer, shed: shed}
}

// Open is the number of connections served now.
func (l *Limiter) Open() int64 { return l.open.Load() }

// Listen wraps ln. tlsCfg is the TLS its server speaks on it (nil: plain
// HTTP): a refused connection is answered after a handshake of its own,
// over HTTP/1.1 whatever the server would negotiate.
func (l *Limiter) Listen(ln net.Listener, tlsCfg *tls.Config) net.Listener {
	if l == nil || l.max <= 0 {
		return ln
	}
	if tlsCfg != nil {
		tlsCfg = tlsCfg.Clone()
		tlsCfg.NextProtos = []string{"http/1.1"}
	}
	return &listener{Listener: ln, l: l, tls: tlsCfg}
}

type listener struct {
	net.Listener
	l   *Limiter
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
		if ln.l.open.Add(1) <= ln.l.max {
			return &conn{Conn: c, release: func() { ln.l.open.Add(-1) }}, nil
		}
		ln.l.open.Add(-1)
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
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
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
