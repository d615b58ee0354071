// Package httpx owns the gateway's HTTP conventions: the one error type that
// every handler returns, its rendering in the OpenAI error shape (API.md §2),
// bounded body reading, and the small middlewares composed by package app.
//
// httpx is a leaf: it must not import any other internal package.
package httpx

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// Error is the error every handler returns for a client-visible failure. It
// carries the HTTP status, the OpenAI error "type", a stable "code", the
// request field at fault, a message that is safe to show to the client, and
// the internal cause, which is logged but never sent.
type Error struct {
	Status  int
	Type    string
	Code    string
	Param   string
	Message string
	// Provider is set when the error is a provider's own answer (API.md §2:
	// "provider": "<slug>" at the top level).
	Provider string
	// Header holds extra response headers (Retry-After and the like).
	Header http.Header
	// Extra holds extra top-level fields for the error body (hook_results).
	Extra map[string]any
	Err   error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%d %s: %s: %v", e.Status, e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// The error types of API.md §2.
const (
	TypeInvalidRequest = "invalid_request_error"
	TypeAuthentication = "authentication_error"
	TypePermission     = "permission_error"
	TypeNotFound       = "not_found_error"
	TypeConflict       = "conflict_error"
	TypeRateLimit      = "rate_limit_error"
	TypeQuota          = "insufficient_quota"
	TypeUpstream       = "upstream_error"
	TypeTimeout        = "timeout_error"
	TypeServer         = "server_error"
)

// BadRequest is a 400 invalid_request_error naming param.
func BadRequest(code, param, format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: code, Param: param, Message: fmt.Sprintf(format, args...)}
}

// Unauthorized is a 401 authentication_error.
func Unauthorized(code, msg string) *Error {
	return &Error{Status: http.StatusUnauthorized, Type: TypeAuthentication, Code: code, Message: msg}
}

// Forbidden is a 403 permission_error.
func Forbidden(code, msg string) *Error {
	return &Error{Status: http.StatusForbidden, Type: TypePermission, Code: code, Message: msg}
}

// NotFound is a 404 not_found_error.
func NotFound(msg string) *Error {
	return &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: "not_found", Message: msg}
}

// Conflict is a 409 conflict_error.
func Conflict(msg string) *Error {
	return &Error{Status: http.StatusConflict, Type: TypeConflict, Code: "conflict", Message: msg}
}

// Internal is a 500 whose cause stays in the logs.
func Internal(err error) *Error {
	return &Error{Status: http.StatusInternalServerError, Type: TypeServer, Code: "internal_error", Message: "internal error", Err: err}
}

// As converts any error into an *Error: an *Error found in the chain is
// returned as is, a body over the size limit becomes 413, anything else is
// an internal error whose cause is not shown.
func As(err error) *Error {
	var he *Error
	if errors.As(err, &he) {
		return he
	}
	if errors.Is(err, ErrNotFound) {
		return &Error{Status: http.StatusNotFound, Type: TypeNotFound, Code: "not_found", Message: err.Error(), Err: err}
	}
	if errors.Is(err, ErrConflict) {
		return &Error{Status: http.StatusConflict, Type: TypeConflict, Code: "conflict", Message: err.Error(), Err: err}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &Error{Status: http.StatusRequestEntityTooLarge, Type: TypeInvalidRequest, Code: "body_too_large",
			Message: fmt.Sprintf("request body is larger than %d bytes", mbe.Limit), Err: err}
	}
	return Internal(err)
}

type errorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// Body renders e in the OpenAI error shape.
func (e *Error) Body() []byte {
	eb := errorBody{Message: e.Message, Type: e.Type}
	if e.Param != "" {
		eb.Param = &e.Param
	}
	if e.Code != "" {
		eb.Code = &e.Code
	}
	top := map[string]any{"error": eb}
	if e.Provider != "" {
		top["provider"] = e.Provider
	}
	for k, v := range e.Extra {
		top[k] = v
	}
	b, err := json.Marshal(top)
	if err != nil {
		return []byte(`{"error":{"message":"internal error","type":"server_error","param":null,"code":"internal_error"}}`)
	}
	return b
}

// WriteError writes err as an OpenAI-shaped JSON error.
func WriteError(w http.ResponseWriter, err error) *Error {
	he := As(err)
	h := w.Header()
	for k, vs := range he.Header {
		h[k] = vs
	}
	h.Set("Content-Type", "application/json")
	h.Del("Content-Length")
	w.WriteHeader(he.Status)
	_, _ = w.Write(he.Body())
	return he
}

// WriteJSON writes v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		WriteError(w, Internal(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// Sentinel kinds that storage layers wrap (fmt.Errorf("...: %w", ErrNotFound))
// so handlers can answer 404 and 409 without knowing the store.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("already exists")
)
