package cohere

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/ai-gateway/gateway/internal/provider"
)

// addStreamSeeds adds every recorded and synthetic event file as a seed.
func addStreamSeeds(f *testing.F, frame func([]byte) []byte) {
	var files []string
	for _, g := range []string{filepath.Join(fixtureDir, "cohere-*.chunks.txt"), "testdata/stream/*.chunks.txt"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		f.Add(frame(b))
	}
}

// FuzzDecoder feeds arbitrary event payloads (one per line) to the stream
// decoder: it must not panic, every chunk must be a well-formed
// chat.completion.chunk, and nothing may follow message-end.
func FuzzDecoder(f *testing.F) {
	addStreamSeeds(f, func(b []byte) []byte { return b })
	f.Add([]byte(`{"type":"tool-call-delta","delta":{"message":{"tool_calls":{"function":{"arguments":"x"}}}}}`))
	f.Add([]byte(`{"type":"message-end","delta":{"usage":{"tokens":{"input_tokens":"x"}}}}`))
	f.Add([]byte("[1,2]\nnull\n{\"type\":\"content-delta\",\"logprobs\":{\"logprobs\":\"bad\"}}"))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, strict := range []bool{true, false} {
			d := newDecoder("m", strict)
			for _, line := range bytes.Split(in, []byte("\n")) {
				line = bytes.TrimSpace(line)
				if len(line) == 0 {
					continue
				}
				wasDone := d.done
				chunks, err := d.feed("", line)
				if err != nil {
					break
				}
				if wasDone && len(chunks) > 0 {
					t.Fatalf("chunks after message-end")
				}
				for _, ch := range chunks {
					var c struct {
						Object  string `json:"object"`
						Choices []any  `json:"choices"`
					}
					if err := json.Unmarshal(ch.Data, &c); err != nil || c.Object != "chat.completion.chunk" {
						t.Fatalf("bad chunk %s: %v", ch.Data, err)
					}
					if ch.UsageOnly != (len(c.Choices) == 0) || (ch.UsageOnly && ch.Usage == nil) {
						t.Fatalf("usage flags wrong on %s", ch.Data)
					}
				}
			}
		}
	})
}

// FuzzStream drives the SSE stream reader with arbitrary bytes: it must end
// with io.EOF only after message-end, and otherwise with an error the
// gateway maps (broken stream, bad response or in-stream error).
func FuzzStream(f *testing.F) {
	addStreamSeeds(f, func(b []byte) []byte {
		var out bytes.Buffer
		for _, l := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				out.WriteString("data: ")
				out.Write(l)
				out.WriteString("\n\n")
			}
		}
		return out.Bytes()
	})
	f.Add([]byte("event: message-end\ndata: {\"delta\":{\"finish_reason\":\"COMPLETE\"}}\n\n"))
	f.Add([]byte(": comment\r\ndata: {\"type\":\"message-start\"}\r\n\r\ndata: {\"type\":"))
	f.Fuzz(func(t *testing.T, in []byte) {
		resp := &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(in))}
		s := newStream(context.Background(), resp, "m", false)
		defer s.Close()
		for range 100000 {
			ch, err := s.Next()
			if err == nil {
				if !json.Valid(ch.Data) {
					t.Fatalf("invalid chunk %q", ch.Data)
				}
				continue
			}
			if errors.Is(err, io.EOF) {
				if !s.dec.done {
					t.Fatal("clean end without message-end")
				}
				return
			}
			var se *provider.StreamError
			if !errors.Is(err, provider.ErrStreamBroken) && !errors.Is(err, provider.ErrBadResponse) && !errors.As(err, &se) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		t.Fatal("stream did not end")
	})
}
