package apicontract

import (
	"bytes"
	"io"
	"net/http"
	"sync"
)

// Recorder records every exchange the handlers it wraps serve: the request
// as the handler read it (its body as far as the handler read it) and the
// answer as written.
type Recorder struct {
	mu        sync.Mutex
	exchanges []Exchange
}

// Wrap returns next, recording its exchanges.
func (rec *Recorder) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := &teeBody{ReadCloser: r.Body}
		r.Body = body
		ex := Exchange{Method: r.Method, Target: r.URL.RequestURI(), RequestHeader: r.Header.Clone(),
			ClientCertificate: r.TLS != nil && len(r.TLS.VerifiedChains) > 0}
		rw := &recordingWriter{ResponseWriter: w}
		next.ServeHTTP(rw, r)
		ex.RequestBody = body.read.Bytes()
		ex.Status, ex.ResponseHeader, ex.ResponseBody = rw.status, rw.header, rw.body.Bytes()
		if ex.Status == 0 { // nothing written: net/http answers 200
			ex.Status, ex.ResponseHeader = http.StatusOK, w.Header().Clone()
		}
		rec.mu.Lock()
		rec.exchanges = append(rec.exchanges, ex)
		rec.mu.Unlock()
	})
}

// Exchanges are the exchanges recorded so far, in the order they ended.
func (rec *Recorder) Exchanges() []Exchange {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]Exchange(nil), rec.exchanges...)
}

// teeBody keeps what the handler reads of a request body.
type teeBody struct {
	io.ReadCloser
	read bytes.Buffer
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read.Write(p[:n])
	return n, err
}

// recordingWriter keeps the status, the headers as they were when it was
// written, and the body of an answer.
type recordingWriter struct {
	http.ResponseWriter
	status int
	header http.Header
	body   bytes.Buffer
}

func (w *recordingWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status, w.header = status, w.ResponseWriter.Header().Clone()
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.body.Write(p)
	return w.ResponseWriter.Write(p)
}

// Flush passes a flush on (gin's writer asks for one).
func (w *recordingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
