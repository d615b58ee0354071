package sse

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// errNameLineBreak is returned for an event name that would end the "event:"
// line early and inject fields of the caller's choosing.
var errNameLineBreak = errors.New("sse: event name contains a line break")

// done is the event OpenAI-compatible clients wait for at the end of a
// stream (PROVIDERS.md §0.8).
var done = []byte("data: [DONE]\n\n")

// SetHeaders sets the response headers of an event stream: its content type,
// no caching, a kept-alive connection, and X-Accel-Buffering: no so that
// nginx in front of the gateway passes each event on instead of buffering.
// Call it before the first write.
func SetHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
}

// Writer writes server-sent events to an HTTP response, flushing after every
// event. Each event goes to the ResponseWriter in a single Write call. A
// Writer is not safe for concurrent use.
type Writer struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	buf []byte
}

// NewWriter returns a Writer on w. It flushes with http.ResponseController,
// which reaches the connection through wrappers that implement Unwrap.
// NewWriter does not set headers; see SetHeaders.
func NewWriter(w http.ResponseWriter) *Writer {
	return &Writer{w: w, rc: http.NewResponseController(w)}
}

// WriteData writes an unnamed event carrying data and flushes it. Data
// containing line breaks ("\n", "\r\n" or "\r") is split into several
// "data:" lines, which a reader joins with "\n".
//
// An error from the flush is returned too, including http.ErrNotSupported
// from a ResponseWriter that cannot flush: such a writer would hold the
// stream back, which is a bug worth hearing about.
func (w *Writer) WriteData(data []byte) error {
	return w.WriteEvent("", data)
}

// WriteEvent writes an event named name carrying data and flushes it, as
// WriteData does. An empty name writes no "event:" line. A name containing
// "\r" or "\n" is rejected with an error and nothing is written.
func (w *Writer) WriteEvent(name string, data []byte) error {
	if strings.ContainsAny(name, "\r\n") {
		return fmt.Errorf("%w: %q", errNameLineBreak, name)
	}
	b := w.buf[:0]
	if name != "" {
		b = append(b, "event: "...)
		b = append(b, name...)
		b = append(b, '\n')
	}
	for {
		i := indexEOL(data)
		line := data
		if i >= 0 {
			line = data[:i]
		}
		b = appendLine(b, "data:", line)
		if i < 0 {
			break
		}
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	b = append(b, '\n')
	w.buf = b
	return w.send(b)
}

// WriteDone writes the "data: [DONE]" event and flushes it.
func (w *Writer) WriteDone() error {
	return w.send(done)
}

// WriteComment writes text as a comment, which readers ignore, and flushes
// it. It keeps an idle connection from timing out in proxies (DeepSeek sends
// ": keep-alive"). Text containing line breaks becomes several comment lines.
func (w *Writer) WriteComment(text string) error {
	b := w.buf[:0]
	for {
		i := strings.IndexAny(text, "\r\n")
		line := text
		if i >= 0 {
			line = text[:i]
		}
		b = appendLine(b, ":", line)
		if i < 0 {
			break
		}
		if text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n' {
			i++
		}
		text = text[i+1:]
	}
	b = append(b, '\n')
	w.buf = b
	return w.send(b)
}

// appendLine appends prefix, a space and line, then "\n". The space is left
// out for an empty line; a reader strips exactly one space after the colon,
// so a line starting with a space keeps it.
func appendLine[T string | []byte](b []byte, prefix string, line T) []byte {
	b = append(b, prefix...)
	if len(line) > 0 {
		b = append(b, ' ')
		b = append(b, line...)
	}
	return append(b, '\n')
}

func (w *Writer) send(b []byte) error {
	if _, err := w.w.Write(b); err != nil {
		return fmt.Errorf("sse: write: %w", err)
	}
	if err := w.rc.Flush(); err != nil {
		return fmt.Errorf("sse: flush: %w", err)
	}
	return nil
}
