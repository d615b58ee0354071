package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
)

// HandlerFunc is an HTTP handler that returns its failure instead of writing
// it; Handler turns the error into the response in one place (STYLE.md §1).
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// Handler adapts f to http.Handler. An error returned before anything was
// written becomes an OpenAI-shaped error response; an error after the
// response started is only logged, because a status cannot change any more.
func Handler(log *slog.Logger, f HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := f(w, r)
		if err == nil {
			return
		}
		if errors.Is(err, http.ErrAbortHandler) {
			panic(http.ErrAbortHandler)
		}
		// A Recorder, or a writer wrapping one, knows whether the answer
		// has started.
		if rec, ok := w.(interface{ Wrote() bool }); ok && rec.Wrote() {
			log.LogAttrs(r.Context(), slog.LevelWarn, "error after response started", slog.String("path", r.URL.Path), slog.Any("err", err))
			return
		}
		he := WriteError(w, err)
		if he.Status >= 500 && he.Err != nil {
			log.LogAttrs(r.Context(), slog.LevelError, "request failed", slog.String("path", r.URL.Path), slog.Int("status", he.Status), slog.Any("err", he.Err))
		}
	})
}

// Recorder wraps a ResponseWriter to remember the status and the number of
// body bytes written. It implements Unwrap so http.ResponseController reaches
// the connection (Flush for SSE, deadlines).
type Recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

// NewRecorder wraps w; if w already is a Recorder it is returned.
func NewRecorder(w http.ResponseWriter) *Recorder {
	if r, ok := w.(*Recorder); ok {
		return r
	}
	return &Recorder{ResponseWriter: w}
}

func (r *Recorder) WriteHeader(code int) {
	if r.status == 0 && code >= 200 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *Recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

// Flush sends buffered data to the client.
func (r *Recorder) Flush() {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	http.NewResponseController(r.ResponseWriter).Flush()
}

// Unwrap returns the wrapped writer for http.ResponseController.
func (r *Recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Status is the status written so far, 0 if none.
func (r *Recorder) Status() int { return r.status }

// Wrote reports whether the response has started.
func (r *Recorder) Wrote() bool { return r.status != 0 }

// BytesWritten is the number of body bytes written.
func (r *Recorder) BytesWritten() int64 { return r.bytes }

// Recover turns a panicking handler into a 500 (or, for
// http.ErrAbortHandler, lets net/http abort the connection as intended).
func Recover(log *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				if v == http.ErrAbortHandler {
					panic(v)
				}
				log.Error("panic in handler", "path", r.URL.Path, "panic", fmt.Sprint(v))
				if rec, ok := w.(*Recorder); ok && rec.Wrote() {
					panic(http.ErrAbortHandler)
				}
				WriteError(w, Internal(fmt.Errorf("panic: %v", v)))
			}()
			next.ServeHTTP(w, r)
		})
	}
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// ReadBody reads the whole request body, at most limit bytes (413 beyond).
// The returned slice is owned by the caller.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > limit {
		return nil, &http.MaxBytesError{Limit: limit}
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	if r.ContentLength > 0 {
		b := make([]byte, r.ContentLength)
		n, err := io.ReadFull(body, b)
		if err != nil {
			return nil, readErr(err)
		}
		// Anything beyond Content-Length is a protocol error that net/http
		// reports itself; the declared length is what we take.
		return b[:n], nil
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	if _, err := buf.ReadFrom(body); err != nil {
		return nil, readErr(err)
	}
	return bytes.Clone(buf.Bytes()), nil
}

func readErr(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return err
	}
	return BadRequest("invalid_body", "", "could not read request body: %v", err)
}

// DecodeStrict decodes a control-plane JSON body into v, rejecting unknown
// fields and trailing data, with a 400 that names the offending field.
func DecodeStrict(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return BadRequest("invalid_body", "", "request body is empty; a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return BadRequest("invalid_json", "", "unexpected data after the JSON object")
	}
	return nil
}

func jsonError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return BadRequest("invalid_json", "", "malformed JSON at byte %d: %v", se.Offset, err)
	case errors.As(err, &te):
		return BadRequest("invalid_type", te.Field, "%s: must be %s, got %s", te.Field, te.Type.String(), te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return BadRequest("unknown_field", f, "%s: unknown field", f)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return BadRequest("invalid_json", "", "malformed JSON: unexpected end of input")
	}
	return BadRequest("invalid_json", "", "malformed JSON: %v", err)
}
