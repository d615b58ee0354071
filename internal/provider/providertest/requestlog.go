package providertest

import (
	"bytes"
	"io"
	"net/http"
	"sync"
)

// requestLog keeps every request a fake received; fakes embed it for their
// Requests and Last methods.
type requestLog struct {
	mu       sync.Mutex
	received []Received
}

// Requests returns what the fake received so far.
func (l *requestLog) Requests() []Received {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Received(nil), l.received...)
}

// Last returns the last request received.
func (l *requestLog) Last() Received {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.received) == 0 {
		return Received{}
	}
	return l.received[len(l.received)-1]
}

// note reads r's body, puts it back for the handler, records the request
// (path as sent when escaped is set) and returns the body.
func (l *requestLog) note(r *http.Request, escaped bool) []byte {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	path := r.URL.Path
	if escaped {
		path = r.URL.EscapedPath()
	}
	l.mu.Lock()
	l.received = append(l.received, Received{Method: r.Method, Path: path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
	l.mu.Unlock()
	return body
}

// recording wraps next so that every request is noted first.
func (l *requestLog) recording(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.note(r, false)
		next.ServeHTTP(w, r)
	})
}
