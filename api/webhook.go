package api

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// MaxWebhookBytes is the largest native webhook body accepted.
const MaxWebhookBytes = 64 << 10

// readBody reads a request body of at most limit bytes (413 beyond).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := readAll(http.MaxBytesReader(w, r.Body, limit), r.ContentLength, limit)
	if err == nil {
		return body, nil
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, &requestError{http.StatusRequestEntityTooLarge, CodePayloadTooLarge, fmt.Sprintf("body is larger than %d bytes", limit)}
	}
	// The cause (a timeout, a reset) names our own socket: kept for
	// errors.Is, never told.
	return nil, fmt.Errorf("%w: %w", errBodyUnreadable, err)
}

// readAll is io.ReadAll with a first buffer of the size the request
// declares (Content-Length, when it is within limit): a body is read into
// one allocation instead of io.ReadAll's growing from 512 bytes. The
// buffer is the body's own (it becomes the stored payload), never reused.
// A declared length is not taken on trust beyond maxPresizedBody: a caller
// not yet authenticated could otherwise make us hold limit bytes per
// connection for a few sent.
func readAll(r io.Reader, contentLength, limit int64) ([]byte, error) {
	size := int64(512)
	if contentLength >= 0 && contentLength <= min(limit, maxPresizedBody) {
		// One byte more, for the read that finds the end.
		size = contentLength + 1
	}
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow, as io.ReadAll does
		}
	}
}

// maxPresizedBody bounds readAll's first buffer: as much as the server's
// own buffers of a connection, and more than a webhook of a few PIX needs.
const maxPresizedBody = 4 << 10

// errBodyUnreadable: the connection failed or timed out before the whole
// body arrived.
var errBodyUnreadable = &requestError{http.StatusBadRequest, CodeInvalidRequest, "body: could not be read completely (timed out or cut off); nothing was stored"}

// requireJSON refuses a content type other than application/json (415).
func requireJSON(r *http.Request) error {
	contentType := r.Header["Content-Type"]
	if len(contentType) > 0 && contentType[0] == "application/json" {
		return nil // what mime.ParseMediaType would find, without its map
	}
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "application/json" {
		return &requestError{http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "Content-Type must be application/json"}
	}
	return nil
}
