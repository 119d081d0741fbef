// Package connlimit owns the cap on the connections an HTTP server holds:
// a net.Listener wrapper that serves at most a number of connections at
// once, shared by every listener wrapped with the same Limiter, and answers
// each connection over it with a prepared refusal (the API's 503 with
// Retry-After) before closing it, rather than leaving it in the kernel's
// backlog or holding its memory.
package connlimit
