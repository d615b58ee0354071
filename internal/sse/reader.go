package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxEvent is the largest event a Reader made by NewReader accepts:
// 8 MiB, far above any chunk a provider streams, but a bound on the memory a
// misbehaving upstream can make the gateway hold.
const DefaultMaxEvent = 8 << 20

// ErrEventTooLarge is wrapped by the error Next returns when an event's data,
// or a single line of the stream, is longer than the Reader's limit.
var ErrEventTooLarge = errors.New("sse: event too large")

// bufSize is the size of the bufio buffer. Streamed chunks are a few hundred
// bytes; a longer line is assembled in Reader.line instead of growing this.
const bufSize = 8 << 10

// maxNames bounds the event names a Reader keeps to avoid allocating a string
// per event. Anthropic uses eight names; the bound only matters for an
// upstream that invents names.
const maxNames = 16

// bom is the UTF-8 byte order mark a stream may start with.
var bom = []byte("\xef\xbb\xbf")

// Event is one dispatched server-sent event.
type Event struct {
	// Name is the value of the event's "event:" field, or "" if it had none.
	Name string

	// Data holds the values of the event's "data:" lines joined by "\n",
	// untrimmed. It is nil if the event had no data line (an event with only
	// a name) and non-nil, possibly empty, otherwise.
	//
	// Data returned by Reader.Next aliases a buffer inside the Reader and is
	// valid only until the next call to Next; use Clone to keep it.
	Data []byte

	// ID is the stream's last event ID: the value of the most recent "id:"
	// field, which per the SSE specification persists across events until
	// another "id:" field changes it.
	ID string

	// Retry is the stream's reconnection time in milliseconds as set by the
	// most recent valid "retry:" field, or 0 if none has been seen.
	Retry int
}

// IsDone reports whether the event is the "[DONE]" sentinel that
// OpenAI-compatible providers send as their last event, ignoring surrounding
// white space.
func (e Event) IsDone() bool {
	return string(bytes.TrimSpace(e.Data)) == "[DONE]"
}

// Clone returns a copy of e whose Data does not alias the Reader's buffer.
func (e Event) Clone() Event {
	if e.Data != nil {
		e.Data = append(make([]byte, 0, len(e.Data)), e.Data...)
	}
	return e
}

// Reader parses a text/event-stream. It is not safe for concurrent use.
type Reader struct {
	br  *bufio.Reader
	max int

	// line assembles a line longer than the bufio buffer or split across
	// reads at the buffer's end.
	line []byte

	// data, hasData and name are the event being assembled.
	data    []byte
	hasData bool
	name    string

	id    string
	retry int

	names []string // interned event names

	atStart bool // no line has been read yet, so a BOM may follow
	skipLF  bool // the last line ended in '\r' at the end of the buffer
	err     error
}

// NewReader returns a Reader that parses r, accepting events of up to
// DefaultMaxEvent bytes.
func NewReader(r io.Reader) *Reader {
	return NewReaderSize(r, DefaultMaxEvent)
}

// NewReaderSize returns a Reader that parses r and rejects, with an error
// wrapping ErrEventTooLarge, an event whose data or any single line is longer
// than maxEvent bytes. A maxEvent of zero or less means DefaultMaxEvent.
func NewReaderSize(r io.Reader, maxEvent int) *Reader {
	if maxEvent <= 0 {
		maxEvent = DefaultMaxEvent
	}
	return &Reader{
		br:      bufio.NewReaderSize(r, min(bufSize, max(maxEvent, 16))),
		max:     maxEvent,
		data:    make([]byte, 0, 512),
		atStart: true,
	}
}

// Next returns the next event of the stream. Lines up to a blank line that
// hold neither a data line nor an event name (only comments, "id:" or
// "retry:") dispatch nothing and are skipped.
//
// The returned Event's Data is valid only until the next call to Next.
//
// Next returns io.EOF when the stream ends cleanly between events, and
// io.ErrUnexpectedEOF when it ends inside an event (a data line or event
// name read but no blank line after it); as the SSE specification requires,
// that incomplete event is discarded. An error from the underlying reader is
// returned wrapped, so errors.Is still finds, say, context.Canceled. Errors
// are sticky: once Next has returned one, it returns it on every later call.
func (r *Reader) Next() (Event, error) {
	if r.err != nil {
		return Event{}, r.err
	}
	r.data = r.data[:0]
	r.hasData = false
	r.name = ""
	for {
		line, err := r.readLine()
		if r.atStart {
			r.atStart = false
			line = bytes.TrimPrefix(line, bom)
		}
		if err != nil {
			if err != io.EOF {
				r.err = err
				return Event{}, err
			}
			// The spec processes an unterminated last line but discards
			// an event that no blank line dispatched.
			if len(line) > 0 {
				if err := r.field(line); err != nil {
					r.err = err
					return Event{}, err
				}
			}
			r.err = io.EOF
			if r.hasData || r.name != "" {
				r.err = io.ErrUnexpectedEOF
			}
			return Event{}, r.err
		}
		if len(line) == 0 {
			if !r.hasData && r.name == "" {
				continue
			}
			e := Event{Name: r.name, ID: r.id, Retry: r.retry}
			if r.hasData {
				e.Data = r.data
			}
			return e, nil
		}
		if err := r.field(line); err != nil {
			r.err = err
			return Event{}, err
		}
	}
}

// field processes one non-empty line.
func (r *Reader) field(line []byte) error {
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i == 0 {
		return nil // comment, such as ": keep-alive"
	} else if i > 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		n := len(r.data) + len(value)
		if r.hasData {
			n++
		}
		if n > r.max {
			return r.tooLarge()
		}
		if r.hasData {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, value...)
		r.hasData = true
	case "event":
		r.name = r.intern(value)
	case "id":
		// The spec ignores an id containing NUL.
		if bytes.IndexByte(value, 0) < 0 && string(value) != r.id {
			r.id = string(value)
		}
	case "retry":
		if n, ok := parseRetry(value); ok {
			r.retry = n
		}
	}
	// The spec ignores any other field.
	return nil
}

// parseRetry parses a "retry:" value, which the spec accepts only if it is a
// non-empty string of ASCII digits. A value too large for int is ignored too.
func parseRetry(b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	const maxInt = int(^uint(0) >> 1)
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int(c - '0')
		if n > (maxInt-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// intern returns b as a string, reusing an earlier string for a name seen
// before so that a stream of named events does not allocate per event.
func (r *Reader) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	for _, s := range r.names {
		if s == string(b) {
			return s
		}
	}
	s := string(b)
	if len(r.names) < maxNames && len(s) <= 64 {
		r.names = append(r.names, s)
	}
	return s
}

func (r *Reader) tooLarge() error {
	return fmt.Errorf("%w: more than %d bytes", ErrEventTooLarge, r.max)
}

// readLine returns the next line without its terminator, which is "\r\n",
// "\n" or "\r". The line aliases the bufio buffer or r.line and is valid
// until the next call. At the end of input it returns io.EOF together with
// the unterminated last line, which is empty if the input ended with a line
// break.
func (r *Reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	scanned := 0 // buffered bytes known to hold no line break
	for {
		n := r.br.Buffered()
		if n <= scanned {
			if n == r.br.Size() {
				// The line is longer than the buffer: set the
				// buffered part aside and refill.
				if len(r.line)+n > r.max {
					return nil, r.tooLarge()
				}
				buf, _ := r.br.Peek(n)
				r.line = append(r.line, buf...)
				r.br.Discard(n)
				scanned, n = 0, 0
			}
			// Peek fills the buffer with at least one more byte or
			// fails; it keeps what is buffered in front.
			if _, err := r.br.Peek(n + 1); err != nil {
				buf, _ := r.br.Peek(n)
				r.line = append(r.line, buf...)
				r.br.Discard(n)
				if err != io.EOF {
					err = fmt.Errorf("sse: read: %w", err)
				}
				return r.line, err
			}
			n = r.br.Buffered()
		}
		buf, _ := r.br.Peek(n)
		if r.skipLF {
			// A "\r" ended the previous line at the end of the buffer;
			// this "\n" completes that "\r\n", not an empty line. The
			// Reader did not wait for it, so an event ended by "\r\r"
			// is dispatched at once.
			r.skipLF = false
			if buf[0] == '\n' {
				r.br.Discard(1)
				continue
			}
		}
		i := indexEOL(buf[scanned:])
		if i < 0 {
			scanned = n
			if len(r.line)+n > r.max {
				return nil, r.tooLarge()
			}
			continue
		}
		i += scanned
		end := i + 1
		if buf[i] == '\r' {
			if end == n {
				r.skipLF = true
			} else if buf[end] == '\n' {
				end++
			}
		}
		line := buf[:i]
		if len(r.line) > 0 {
			r.line = append(r.line, line...)
			line = r.line
		}
		if len(line) > r.max {
			return nil, r.tooLarge()
		}
		r.br.Discard(end)
		return line, nil
	}
}

// indexEOL returns the index of the first '\r' or '\n' in b, or -1.
func indexEOL(b []byte) int {
	// Two IndexByte scans, which are vectorised, beat one byte loop.
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return bytes.IndexByte(b, '\r')
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	return i
}
