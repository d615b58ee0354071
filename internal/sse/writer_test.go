package sse

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// countingWriter is a middleware-style wrapper: it counts Write calls and,
// like every wrapper in the gateway, exposes the writer it wraps through
// Unwrap so that http.ResponseController can flush through it.
type countingWriter struct {
	http.ResponseWriter
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.writes++
	return c.ResponseWriter.Write(p)
}

func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

func TestWriter(t *testing.T) {
	tests := []struct {
		name  string
		write func(*Writer) error
		want  string
	}{
		{
			name:  "data",
			write: func(w *Writer) error { return w.WriteData(d(`{"a":1}`)) },
			want:  "data: {\"a\":1}\n\n",
		},
		{
			name:  "empty data",
			write: func(w *Writer) error { return w.WriteData(nil) },
			want:  "data:\n\n",
		},
		{
			name:  "data with LF, CRLF and CR",
			write: func(w *Writer) error { return w.WriteData(d("a\nb\r\nc\rd")) },
			want:  "data: a\ndata: b\ndata: c\ndata: d\n\n",
		},
		{
			name:  "data with empty and trailing lines",
			write: func(w *Writer) error { return w.WriteData(d("\na\n\n")) },
			want:  "data:\ndata: a\ndata:\ndata:\n\n",
		},
		{
			name:  "data keeps leading and trailing spaces",
			write: func(w *Writer) error { return w.WriteData(d("  x  ")) },
			want:  "data:   x  \n\n",
		},
		{
			name:  "named event",
			write: func(w *Writer) error { return w.WriteEvent("ping", d(`{"type": "ping"}`)) },
			want:  "event: ping\ndata: {\"type\": \"ping\"}\n\n",
		},
		{
			name:  "named event with multi-line data",
			write: func(w *Writer) error { return w.WriteEvent("e", d("1\r\n2")) },
			want:  "event: e\ndata: 1\ndata: 2\n\n",
		},
		{
			name:  "unnamed event",
			write: func(w *Writer) error { return w.WriteEvent("", d("x")) },
			want:  "data: x\n\n",
		},
		{
			name:  "done",
			write: func(w *Writer) error { return w.WriteDone() },
			want:  "data: [DONE]\n\n",
		},
		{
			name:  "comment",
			write: func(w *Writer) error { return w.WriteComment("keep-alive") },
			want:  ": keep-alive\n\n",
		},
		{
			name:  "empty comment",
			write: func(w *Writer) error { return w.WriteComment("") },
			want:  ":\n\n",
		},
		{
			name:  "multi-line comment",
			write: func(w *Writer) error { return w.WriteComment("a\r\nb\rc\n") },
			want:  ": a\n: b\n: c\n:\n\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			cw := &countingWriter{ResponseWriter: rec}
			if err := tt.write(NewWriter(cw)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, rec.Body.String()); diff != "" {
				t.Errorf("body mismatch (-want +got):\n%s", diff)
			}
			if !rec.Flushed {
				t.Error("event was not flushed through the wrapper")
			}
			if cw.writes != 1 {
				t.Errorf("%d Write calls, want 1", cw.writes)
			}
		})
	}
}

func TestWriterSequence(t *testing.T) {
	rec := httptest.NewRecorder()
	SetHeaders(rec.Header())
	w := NewWriter(rec)
	// A longer event first, so later ones reuse a buffer with leftovers.
	for _, f := range []func() error{
		func() error { return w.WriteEvent("message_start", d(strings.Repeat("m", 100))) },
		func() error { return w.WriteComment("keep-alive") },
		func() error { return w.WriteData(d("b")) },
		func() error { return w.WriteDone() },
	} {
		rec.Flushed = false
		if err := f(); err != nil {
			t.Fatal(err)
		}
		if !rec.Flushed {
			t.Error("event was not flushed")
		}
	}
	want := "event: message_start\ndata: " + strings.Repeat("m", 100) + "\n\n: keep-alive\n\ndata: b\n\ndata: [DONE]\n\n"
	if diff := cmp.Diff(want, rec.Body.String()); diff != "" {
		t.Errorf("body mismatch (-want +got):\n%s", diff)
	}
	wantHeader := http.Header{
		"Content-Type":      {"text/event-stream"},
		"Cache-Control":     {"no-cache"},
		"Connection":        {"keep-alive"},
		"X-Accel-Buffering": {"no"},
	}
	if diff := cmp.Diff(wantHeader, rec.Result().Header); diff != "" {
		t.Errorf("header mismatch (-want +got):\n%s", diff)
	}
}

func TestWriterRejectsNameWithLineBreak(t *testing.T) {
	for _, name := range []string{"a\nb", "a\r", "\r\ndata: injected"} {
		rec := httptest.NewRecorder()
		err := NewWriter(rec).WriteEvent(name, d("x"))
		if !errors.Is(err, errNameLineBreak) {
			t.Errorf("WriteEvent(%q) error = %v, want errNameLineBreak", name, err)
		}
		if rec.Body.Len() != 0 {
			t.Errorf("WriteEvent(%q) wrote %q", name, rec.Body)
		}
	}
}

// noFlushWriter is a ResponseWriter wrapper that hides Flush and has no
// Unwrap: the mistake STYLE.md §4 warns about.
type noFlushWriter struct{ w http.ResponseWriter }

func (n noFlushWriter) Header() http.Header         { return n.w.Header() }
func (n noFlushWriter) Write(p []byte) (int, error) { return n.w.Write(p) }
func (n noFlushWriter) WriteHeader(code int)        { n.w.WriteHeader(code) }

func TestWriterFlushNotSupported(t *testing.T) {
	err := NewWriter(noFlushWriter{httptest.NewRecorder()}).WriteData(d("x"))
	if !errors.Is(err, http.ErrNotSupported) {
		t.Errorf("err = %v, want http.ErrNotSupported", err)
	}
}

// failWriter fails every Write, as a ResponseWriter does once the client
// has gone.
type failWriter struct{ http.ResponseWriter }

var errClientGone = errors.New("client gone")

func (failWriter) Write([]byte) (int, error) { return 0, errClientGone }

func TestWriterWriteError(t *testing.T) {
	rec := httptest.NewRecorder()
	w := NewWriter(failWriter{rec})
	for _, err := range []error{w.WriteData(d("x")), w.WriteDone(), w.WriteComment("c")} {
		if !errors.Is(err, errClientGone) {
			t.Errorf("err = %v, want it to wrap the write error", err)
		}
	}
	if rec.Flushed {
		t.Error("flushed after a failed write")
	}
}

// TestRoundTrip writes events, including awkward data, and reads them back.
func TestRoundTrip(t *testing.T) {
	events := []Event{
		{Name: "message_start", Data: d(`{"type":"message_start"}`)},
		{Data: d(`{"choices":[]}   `)},
		{Data: d("")},
		{Data: d("multi\nline\n\ndata\n")},
		{Name: " spaced name ", Data: d(" spaced data ")},
		{Data: d(": not a comment")},
		{Data: d("data: not a field")},
		{Name: "ping", Data: d(strings.Repeat("x", 3*bufSize))},
	}
	rec := httptest.NewRecorder()
	w := NewWriter(rec)
	if err := w.WriteComment("keep-alive"); err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if err := w.WriteEvent(e.Name, e.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.WriteDone(); err != nil {
		t.Fatal(err)
	}
	want := append(events, Event{Data: d("[DONE]")})
	for _, rd := range readers {
		got, err := readAll(NewReader(rd.wrap(bytes.NewReader(rec.Body.Bytes()))))
		if err != io.EOF {
			t.Errorf("%s: final error = %v, want io.EOF", rd.name, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: events mismatch (-want +got):\n%s", rd.name, diff)
		}
		if !got[len(got)-1].IsDone() {
			t.Errorf("%s: last event is not [DONE]", rd.name)
		}
	}
}

// discardFlusher is the cheapest ResponseWriter that can flush, so that the
// benchmark measures the Writer alone.
type discardFlusher struct{ h http.Header }

func (d *discardFlusher) Header() http.Header         { return d.h }
func (d *discardFlusher) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardFlusher) WriteHeader(int)             {}
func (d *discardFlusher) Flush()                      {}

func BenchmarkWriter(b *testing.B) {
	stream := openAIStream(200)
	r := NewReader(bytes.NewReader(stream))
	var chunks [][]byte
	for {
		e, err := r.Next()
		if err != nil {
			break
		}
		if !e.IsDone() {
			chunks = append(chunks, e.Clone().Data)
		}
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		w := NewWriter(&discardFlusher{h: http.Header{}})
		for _, c := range chunks {
			if err := w.WriteData(c); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.WriteDone(); err != nil {
			b.Fatal(err)
		}
	}
}
