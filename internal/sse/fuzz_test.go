package sse

import (
	"bytes"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// refParse is a slow, obviously correct parser written straight from the
// WHATWG algorithm, for differential fuzzing. It splits the whole input into
// lines first, which the streaming Reader cannot do.
func refParse(in []byte) ([]Event, error) {
	in = bytes.TrimPrefix(in, bom)
	var (
		events  []Event
		data    []byte
		hasData bool
		name    string
		id      string
		retry   int
	)
	for len(in) > 0 {
		var line []byte
		switch i := bytes.IndexAny(in, "\r\n"); {
		case i < 0:
			line, in = in, nil // unterminated last line
		case in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n':
			line, in = in[:i], in[i+2:]
		default:
			line, in = in[:i], in[i+1:]
		}
		if len(line) == 0 {
			if hasData || name != "" {
				e := Event{Name: name, ID: id, Retry: retry}
				if hasData {
					e.Data = data
				}
				events = append(events, e)
			}
			data, hasData, name = nil, false, ""
			continue
		}
		field, value, found := strings.Cut(string(line), ":")
		if found && field == "" {
			continue
		}
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data = append(data, value...)
			if data == nil {
				data = []byte{}
			}
			hasData = true
		case "event":
			name = value
		case "id":
			if !strings.Contains(value, "\x00") {
				id = value
			}
		case "retry":
			if n, ok := parseRetry([]byte(value)); ok {
				retry = n
			}
		}
	}
	if hasData || name != "" {
		return events, io.ErrUnexpectedEOF
	}
	return events, io.EOF
}

// eventEqual reports whether a and b are equal, telling nil Data from empty
// as cmp.Diff does.
func eventEqual(a, b Event) bool {
	return a.Name == b.Name && a.ID == b.ID && a.Retry == b.Retry &&
		bytes.Equal(a.Data, b.Data) && (a.Data == nil) == (b.Data == nil)
}

// addSeeds adds hand-made streams, the fixtures and an OpenAI stream to the
// corpus of FuzzReader.
func addSeeds(f *testing.F) {
	for _, s := range []string{
		"",
		"data: a\n\n",
		"data: a\r\n\r\n",
		"data: a\r\rdata: b\r\n\n",
		": keep-alive\n\nevent: ping\ndata: {}   \n\n",
		"\xef\xbb\xbfdata\nid: 1\nretry: 20\n\n",
		"data: [DONE]\n\ndata: cut",
		"id: a\x00b\nevent\n\n",
	} {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob(filepath.Join(fixtureDir, "*.txt"))
	for _, file := range files {
		if raw, err := os.ReadFile(file); err == nil {
			f.Add(raw)
		}
	}
	f.Add(openAIStream(3))
}

func FuzzReader(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		want, wantErr := refParse(in)
		for _, rd := range readers[:2] {
			r := NewReader(rd.wrap(bytes.NewReader(in)))
			var got []Event
			var err error
			// Every call either consumes input or ends the stream, so
			// more calls than bytes means the Reader is stuck.
			for calls := 0; ; calls++ {
				if calls > len(in)+1 {
					t.Fatalf("%s: Next called %d times on %d bytes without ending", rd.name, calls, len(in))
				}
				var e Event
				if e, err = r.Next(); err != nil {
					break
				}
				if bytes.IndexByte(e.Data, '\r') >= 0 {
					t.Fatalf("%s: Data contains \\r: %q", rd.name, e.Data)
				}
				got = append(got, e.Clone())
			}
			if err != wantErr {
				t.Errorf("%s: final error = %v, want %v", rd.name, err, wantErr)
			}
			// cmp.Diff only on failure: it is too slow for every run.
			if !slices.EqualFunc(want, got, eventEqual) {
				t.Fatalf("%s: events differ from the reference parser (-want +got):\n%s", rd.name, cmp.Diff(want, got))
			}
		}

		// A small limit must fail cleanly after a prefix of the events.
		r := NewReaderSize(bytes.NewReader(in), 16)
		for i := 0; ; i++ {
			e, err := r.Next()
			if err != nil {
				if err == wantErr && i != len(want) {
					t.Fatalf("small limit: %d events, want %d", i, len(want))
				}
				if err != wantErr && !errors.Is(err, ErrEventTooLarge) {
					t.Fatalf("small limit: error = %v", err)
				}
				break
			}
			if i >= len(want) || !eventEqual(want[i], e) {
				t.Fatalf("small limit: event %d = %+v, not the reference's", i, e)
			}
		}
	})
}

// normalize applies the Writer's line-break normalisation to data.
func normalize(data []byte) []byte {
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	return bytes.ReplaceAll(data, []byte("\r"), []byte("\n"))
}

func FuzzRoundTrip(f *testing.F) {
	f.Add("", []byte(""))
	f.Add("ping", []byte(`{"type": "ping"}`))
	f.Add(" x ", []byte(" a\r\nb\rc\n\n"))
	f.Add("a:b", []byte("data: x\n: y\n"))
	f.Add("e", []byte("\xef\xbb\xbf[DONE]"))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		rec := httptest.NewRecorder()
		w := NewWriter(rec)
		err := w.WriteEvent(name, data)
		if strings.ContainsAny(name, "\r\n") {
			if err == nil {
				t.Fatalf("WriteEvent accepted name %q", name)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := w.WriteDone(); err != nil {
			t.Fatal(err)
		}

		r := NewReader(iotest.HalfReader(bytes.NewReader(rec.Body.Bytes())))
		e, err := r.Next()
		if err != nil {
			t.Fatalf("reading %q: %v", rec.Body, err)
		}
		if e.Name != name {
			t.Errorf("Name = %q, want %q", e.Name, name)
		}
		if want := normalize(data); !bytes.Equal(e.Data, want) || e.Data == nil {
			t.Errorf("Data = %q, want %q (wire %q)", e.Data, want, rec.Body)
		}
		if e, err := r.Next(); err != nil || !e.IsDone() {
			t.Errorf("second event = %q, %v; want [DONE]", e.Data, err)
		}
		if _, err := r.Next(); err != io.EOF {
			t.Errorf("final error = %v, want io.EOF", err)
		}
	})
}
