package sse

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fixtureDir holds raw Anthropic streams recorded by the Python SDK's tests.
const fixtureDir = "../../../shared/specs/anthropic/fixtures/anthropic-sdk-python"

// readAll returns clones of every event of r and the error that ended it.
func readAll(r *Reader) ([]Event, error) {
	var events []Event
	for {
		e, err := r.Next()
		if err != nil {
			return events, err
		}
		events = append(events, e.Clone())
	}
}

// d returns s as event data; it reads better than []byte(s) in tables.
func d(s string) []byte { return []byte(s) }

// chunkReader returns its chunks one per Read, to split input at chosen
// places.
type chunkReader struct{ chunks []string }

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	if c.chunks[0] == "" {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

// readers wraps input in readers that deliver it in different pieces; every
// test case must parse the same through each.
var readers = []struct {
	name string
	wrap func(io.Reader) io.Reader
}{
	{"whole", func(r io.Reader) io.Reader { return r }},
	{"one-byte", iotest.OneByteReader},
	{"half", iotest.HalfReader},
	{"data-err", iotest.DataErrReader},
}

func TestReader(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []Event
		wantErr error
	}{
		{
			name:    "empty stream",
			in:      "",
			wantErr: io.EOF,
		},
		{
			name:    "LF",
			in:      "data: a\n\ndata: b\n\n",
			want:    []Event{{Data: d("a")}, {Data: d("b")}},
			wantErr: io.EOF,
		},
		{
			name:    "CRLF, as Gemini sends with alt=sse",
			in:      "data: {\"a\":1}\r\n\r\ndata: {\"b\":2}\r\n\r\n",
			want:    []Event{{Data: d(`{"a":1}`)}, {Data: d(`{"b":2}`)}},
			wantErr: io.EOF,
		},
		{
			name:    "lone CR",
			in:      "data: a\r\rdata: b\rdata: c\r\r",
			want:    []Event{{Data: d("a")}, {Data: d("b\nc")}},
			wantErr: io.EOF,
		},
		{
			name:    "mixed line breaks",
			in:      "data: a\r\ndata: b\rdata: c\n\r\n",
			want:    []Event{{Data: d("a\nb\nc")}},
			wantErr: io.EOF,
		},
		{
			name:    "CR followed by LF is one line break, CR CR is two",
			in:      "data: a\r\n\r\rdata: b\n\n",
			want:    []Event{{Data: d("a")}, {Data: d("b")}},
			wantErr: io.EOF,
		},
		{
			name:    "comments and keep-alive, as DeepSeek sends while queued",
			in:      ": keep-alive\n\n: keep-alive\n\ndata: a\n: inside an event\ndata: b\n\n:\n\n",
			want:    []Event{{Data: d("a\nb")}},
			wantErr: io.EOF,
		},
		{
			name:    "multi-line data",
			in:      "data: line one\ndata: line two\ndata:\ndata: line four\n\n",
			want:    []Event{{Data: d("line one\nline two\n\nline four")}},
			wantErr: io.EOF,
		},
		{
			name: "Anthropic event names and trailing-space padding",
			in: "event: message_start\ndata: {\"type\":\"message_start\"}   \n\n" +
				"event: ping\ndata: {\"type\": \"ping\"}\n\n",
			want: []Event{
				{Name: "message_start", Data: d(`{"type":"message_start"}   `)},
				{Name: "ping", Data: d(`{"type": "ping"}`)},
			},
			wantErr: io.EOF,
		},
		{
			name:    "exactly one leading space is stripped",
			in:      "data:no space\n\ndata:  two spaces\n\ndata:\ttab\n\n",
			want:    []Event{{Data: d("no space")}, {Data: d(" two spaces")}, {Data: d("\ttab")}},
			wantErr: io.EOF,
		},
		{
			name:    "colon in the value",
			in:      "data: a: b: c\n\n",
			want:    []Event{{Data: d("a: b: c")}},
			wantErr: io.EOF,
		},
		{
			name:    "BOM at stream start",
			in:      "\xef\xbb\xbfdata: a\n\n",
			want:    []Event{{Data: d("a")}},
			wantErr: io.EOF,
		},
		{
			name:    "only the first BOM is stripped",
			in:      "\xef\xbb\xbf\xef\xbb\xbfdata: a\n\ndata: b\n\n",
			want:    []Event{{Data: d("b")}},
			wantErr: io.EOF,
		},
		{
			name:    "BOM later in the stream is data",
			in:      "data: a\n\ndata: \xef\xbb\xbfb\n\n",
			want:    []Event{{Data: d("a")}, {Data: d("\xef\xbb\xbfb")}},
			wantErr: io.EOF,
		},
		{
			name:    "field without colon has an empty value",
			in:      "data\ndata\n\n",
			want:    []Event{{Data: d("\n")}},
			wantErr: io.EOF,
		},
		{
			name:    "empty data is dispatched",
			in:      "data:\n\ndata: \n\n",
			want:    []Event{{Data: d("")}, {Data: d("")}},
			wantErr: io.EOF,
		},
		{
			name:    "event name without data is dispatched with nil Data",
			in:      "event: ping\n\n",
			want:    []Event{{Name: "ping"}},
			wantErr: io.EOF,
		},
		{
			name:    "block without data or name is skipped",
			in:      "id: 1\n\nretry: 10\n\nevent:\n\nfoo: bar\n\n\n\n\ndata: a\n\n",
			want:    []Event{{Data: d("a"), ID: "1", Retry: 10}},
			wantErr: io.EOF,
		},
		{
			name: "id persists across events; NUL in id is ignored",
			in:   "id: 7\ndata: a\n\ndata: b\n\nid: x\x00y\ndata: c\n\nid\ndata: d\n\n",
			want: []Event{
				{ID: "7", Data: d("a")},
				{ID: "7", Data: d("b")},
				{ID: "7", Data: d("c")},
				{ID: "", Data: d("d")},
			},
			wantErr: io.EOF,
		},
		{
			name: "retry needs ASCII digits only",
			in: "retry: 1500\ndata: a\n\nretry: 15x\ndata: b\n\nretry:\ndata: c\n\n" +
				"retry: 99999999999999999999999\ndata: d\n\nretry: 0\ndata: e\n\n",
			want: []Event{
				{Retry: 1500, Data: d("a")},
				{Retry: 1500, Data: d("b")},
				{Retry: 1500, Data: d("c")},
				{Retry: 1500, Data: d("d")},
				{Retry: 0, Data: d("e")},
			},
			wantErr: io.EOF,
		},
		{
			name:    "last event name wins; name resets between events",
			in:      "event: a\nevent: b\ndata: 1\n\ndata: 2\n\n",
			want:    []Event{{Name: "b", Data: d("1")}, {Data: d("2")}},
			wantErr: io.EOF,
		},
		{
			name:    "unknown fields and case-sensitive names are ignored",
			in:      "Data: x\nDATA: y\nfoo: z\ndata: a\n\n",
			want:    []Event{{Data: d("a")}},
			wantErr: io.EOF,
		},
		{
			name:    "[DONE]",
			in:      "data: {}\n\ndata: [DONE]\n\n",
			want:    []Event{{Data: d("{}")}, {Data: d("[DONE]")}},
			wantErr: io.EOF,
		},
		{
			name:    "no [DONE], as Cohere ends a stream",
			in:      "event: message-end\ndata: {\"type\":\"message-end\"}\n\n",
			want:    []Event{{Name: "message-end", Data: d(`{"type":"message-end"}`)}},
			wantErr: io.EOF,
		},
		{
			name:    "partial final event: data line without blank line",
			in:      "data: a\n\ndata: b\n",
			want:    []Event{{Data: d("a")}},
			wantErr: io.ErrUnexpectedEOF,
		},
		{
			name:    "partial final event: unterminated data line",
			in:      "data: a\n\ndata: {\"cut",
			want:    []Event{{Data: d("a")}},
			wantErr: io.ErrUnexpectedEOF,
		},
		{
			name:    "partial final event: name only",
			in:      "event: ping\n",
			wantErr: io.ErrUnexpectedEOF,
		},
		{
			name:    "partial final event: single line break after data",
			in:      "data: a\r",
			wantErr: io.ErrUnexpectedEOF,
		},
		{
			name:    "clean end after comment or id",
			in:      "data: a\n\n: bye\nid: 3\nretry: 5",
			want:    []Event{{Data: d("a")}},
			wantErr: io.EOF,
		},
		{
			name:    "clean end after unterminated comment",
			in:      "data: a\n\n: keep-al",
			want:    []Event{{Data: d("a")}},
			wantErr: io.EOF,
		},
		{
			name:    "clean end after CR CR",
			in:      "data: a\r\r",
			want:    []Event{{Data: d("a")}},
			wantErr: io.EOF,
		},
	}
	for _, tt := range tests {
		for _, rd := range readers {
			t.Run(tt.name+"/"+rd.name, func(t *testing.T) {
				got, err := readAll(NewReader(rd.wrap(strings.NewReader(tt.in))))
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("events mismatch (-want +got):\n%s", diff)
				}
				if err != tt.wantErr {
					t.Errorf("final error = %v, want %v", err, tt.wantErr)
				}
			})
		}
	}
}

func TestEventIsDone(t *testing.T) {
	tests := []struct {
		data string
		want bool
	}{
		{"[DONE]", true},
		{" [DONE]  ", true},
		{"[DONE]\n", true},
		{"[done]", false},
		{"", false},
		{`{"x":"[DONE]"}`, false},
	}
	for _, tt := range tests {
		if got := (Event{Data: d(tt.data)}).IsDone(); got != tt.want {
			t.Errorf("Event{Data: %q}.IsDone() = %v, want %v", tt.data, got, tt.want)
		}
	}
}

func TestEventClone(t *testing.T) {
	r := NewReader(strings.NewReader("data: first\n\ndata: 2nd!!\n\n"))
	e, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	c := e.Clone()
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if string(c.Data) != "first" {
		t.Errorf("clone Data = %q, want %q", c.Data, "first")
	}
	if (Event{}).Clone().Data != nil {
		t.Error("Clone of nil Data is not nil")
	}
	if got := (Event{Data: []byte{}}).Clone().Data; got == nil {
		t.Error("Clone of empty Data is nil")
	}
}

// TestReaderCRAcrossReads checks that a "\r" at the end of one read and a
// "\n" at the start of the next form one line break, not two.
func TestReaderCRAcrossReads(t *testing.T) {
	for _, chunks := range [][]string{
		{"data: a\r", "\ndata: b\r\n\r\n"},
		{"data: a\r", "\n", "data: b\r", "\n\r", "\n"},
		{"data: a", "\r", "\n", "data: b", "\r", "\r"},
	} {
		got, err := readAll(NewReader(&chunkReader{chunks: chunks}))
		want := []Event{{Data: d("a\nb")}}
		if diff := cmp.Diff(want, got); diff != "" || err != io.EOF {
			t.Errorf("chunks %q: err = %v, events (-want +got):\n%s", chunks, err, diff)
		}
	}
}

// TestReaderDoesNotWaitAfterCR checks that an event ended by "\r\r" is
// dispatched without reading ahead to see whether a "\n" follows: an idle
// upstream must not hold the event back.
func TestReaderDoesNotWaitAfterCR(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte("data: a\r\r"))
	got := make(chan Event, 1)
	go func() {
		e, err := NewReader(pr).Next()
		if err != nil {
			t.Error(err)
		}
		got <- e.Clone()
	}()
	select {
	case e := <-got:
		if string(e.Data) != "a" {
			t.Errorf("Data = %q, want %q", e.Data, "a")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next blocked after a complete event")
	}
}

// errAfterReader returns data, then err.
type errAfterReader struct {
	data string
	err  error
}

func (e *errAfterReader) Read(p []byte) (int, error) {
	if e.data == "" {
		return 0, e.err
	}
	n := copy(p, e.data)
	e.data = e.data[n:]
	return n, nil
}

func TestReaderUnderlyingError(t *testing.T) {
	for _, in := range []string{"", "data: a\n\n", "data: a\n\ndata: partial\n"} {
		r := NewReader(&errAfterReader{data: in, err: context.Canceled})
		_, err := readAll(r)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("input %q: err = %v, want it to wrap context.Canceled", in, err)
		}
		if _, again := r.Next(); again != err {
			t.Errorf("input %q: error not sticky: first %v, then %v", in, err, again)
		}
	}
}

func TestReaderEventTooLarge(t *testing.T) {
	tests := []struct {
		name string
		max  int
		in   string
		want []Event
	}{
		{
			name: "data over several lines",
			max:  12,
			in:   "data: 12345\n\ndata: 123456\ndata: 123456\n\n",
			want: []Event{{Data: d("12345")}},
		},
		{
			name: "one long line without a line break",
			max:  100,
			in:   "data: x\n\ndata: " + strings.Repeat("y", 1000),
			want: []Event{{Data: d("x")}},
		},
		{
			name: "one long comment line",
			max:  100,
			in:   ": " + strings.Repeat("z", 1000) + "\n\ndata: x\n\n",
		},
		{
			name: "line longer than the buffer by default limit",
			max:  0,
			in:   "data: " + strings.Repeat("y", DefaultMaxEvent) + "\n\n",
		},
	}
	for _, tt := range tests {
		for _, rd := range readers[:2] {
			t.Run(tt.name+"/"+rd.name, func(t *testing.T) {
				if rd.name == "one-byte" && len(tt.in) > 1<<20 {
					t.Skip("too slow one byte at a time")
				}
				got, err := readAll(NewReaderSize(rd.wrap(strings.NewReader(tt.in)), tt.max))
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("events mismatch (-want +got):\n%s", diff)
				}
				if !errors.Is(err, ErrEventTooLarge) {
					t.Errorf("err = %v, want ErrEventTooLarge", err)
				}
			})
		}
	}
}

// TestReaderLongLines checks lines longer than the bufio buffer but within
// the limit, including a line break that falls on the buffer's edge.
func TestReaderLongLines(t *testing.T) {
	for _, n := range []int{bufSize - 8, bufSize - 7, bufSize - 6, bufSize - 1, bufSize, bufSize + 1, 3*bufSize + 5, 1 << 20} {
		long := strings.Repeat("x", n)
		in := "data: " + long + "\r\ndata: " + long + "\r\r: " + long + "\r\ndata: end\n\n"
		for _, rd := range readers {
			got, err := readAll(NewReader(rd.wrap(strings.NewReader(in))))
			// cmp.Diff is too slow for megabytes of data.
			if err != io.EOF || len(got) != 2 || string(got[0].Data) != long+"\n"+long || string(got[1].Data) != "end" {
				t.Errorf("n=%d %s: err = %v, got %d events, want the two long lines and \"end\"", n, rd.name, err, len(got))
			}
		}
	}
}

// TestReaderFixtures parses raw Anthropic streams end to end.
func TestReaderFixtures(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(fixtureDir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skipf("no fixtures in %s: the shared specs are not checked out next to the repository", fixtureDir)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			wantEvents := bytes.Count(raw, []byte("\nevent: ")) + 1
			if !bytes.HasPrefix(raw, []byte("event: ")) {
				t.Fatalf("fixture does not start with an event line")
			}

			// The recordings are stored without the blank line that ends
			// the last event, so as stored they read as a cut stream.
			stream := raw
			if !bytes.HasSuffix(raw, []byte("\n\n")) {
				got, err := readAll(NewReader(bytes.NewReader(raw)))
				if err != io.ErrUnexpectedEOF || len(got) != wantEvents-1 {
					t.Errorf("as stored: %d events and %v, want %d and io.ErrUnexpectedEOF", len(got), err, wantEvents-1)
				}
				stream = append(bytes.TrimRight(raw, "\n"), "\n\n"...)
			}

			for _, rd := range readers {
				got, err := readAll(NewReader(rd.wrap(bytes.NewReader(stream))))
				if err != io.EOF {
					t.Errorf("%s: final error = %v, want io.EOF", rd.name, err)
				}
				if len(got) != wantEvents {
					t.Errorf("%s: got %d events, want %d", rd.name, len(got), wantEvents)
				}
				for i, e := range got {
					if e.Name == "" {
						t.Errorf("%s: event %d has no name", rd.name, i)
					}
					if !json.Valid(e.Data) {
						t.Errorf("%s: event %d (%s): data is not valid JSON: %q", rd.name, i, e.Name, e.Data)
					}
					var typ struct{ Type string }
					if err := json.Unmarshal(e.Data, &typ); err != nil || typ.Type != e.Name {
						t.Errorf("%s: event %d: data type %q does not match event name %q", rd.name, i, typ.Type, e.Name)
					}
				}
				if len(got) > 0 && got[len(got)-1].Name != "message_stop" {
					t.Errorf("%s: last event is %q, want message_stop", rd.name, got[len(got)-1].Name)
				}
			}
		})
	}
}

// openAIStream returns a realistic OpenAI chat completion stream of n
// content chunks of about 150 bytes each, a finish chunk and [DONE].
func openAIStream(n int) []byte {
	var b bytes.Buffer
	words := []string{"Hello", " there", ",", " how", " can", " I", " help", " you", " today", "?"}
	for i := range n {
		fmt.Fprintf(&b, `data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`+"\n\n", words[i%len(words)])
	}
	b.WriteString(`data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741569952,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

func BenchmarkReader(b *testing.B) {
	stream := openAIStream(200)
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	br := bytes.NewReader(stream)
	for b.Loop() {
		br.Reset(stream)
		r := NewReader(br)
		n := 0
		for {
			e, err := r.Next()
			if err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
			n += len(e.Data)
		}
		if n == 0 {
			b.Fatal("no data")
		}
	}
}

// BenchmarkReaderAnthropic measures named events, which must not allocate a
// string per event.
func BenchmarkReaderAnthropic(b *testing.B) {
	var buf bytes.Buffer
	for range 200 {
		buf.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" there\"}}\n\n")
	}
	stream := buf.Bytes()
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	br := bytes.NewReader(stream)
	for b.Loop() {
		br.Reset(stream)
		r := NewReader(br)
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}
