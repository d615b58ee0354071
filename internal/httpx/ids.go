package httpx

import (
	"context"
	"net/http"

	"github.com/google/uuid"
)

// Header names shared by every /v1 response (API.md §2 "Request ids").
const (
	HeaderRequestID = "x-gateway-request-id"
	HeaderTraceID   = "x-gateway-trace-id"
)

// Canonical forms, computed once so that the per-request reads and writes
// do not canonicalise again.
var (
	canonicalRequestID = http.CanonicalHeaderKey(HeaderRequestID)
	canonicalTraceID   = http.CanonicalHeaderKey(HeaderTraceID)
)

type idsKey struct{}

// IDs are the request's log id and trace id.
type IDs struct {
	RequestID string
	TraceID   string
}

// IDsFrom returns the ids RequestIDs put in ctx.
func IDsFrom(ctx context.Context) IDs {
	ids, _ := ctx.Value(idsKey{}).(IDs)
	return ids
}

// maxTraceIDLen bounds a client-chosen trace id stored with every record.
const maxTraceIDLen = 256

// RequestIDs gives every request a time-ordered UUIDv7 request id (which is
// also its log id) and a trace id (the client's x-gateway-trace-id, or the
// request id), and sets both response headers before the handler runs.
func RequestIDs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := newID()
		var trace string
		if vs := r.Header[canonicalTraceID]; len(vs) > 0 {
			trace = vs[0]
		}
		if trace == "" || len(trace) > maxTraceIDLen {
			trace = id
		}
		h := w.Header()
		h[canonicalRequestID] = []string{id}
		h[canonicalTraceID] = []string{trace}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), idsKey{}, IDs{RequestID: id, TraceID: trace})))
	})
}

func newID() string {
	u, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return u.String()
}
