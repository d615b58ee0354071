package google

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ai-gateway/gateway/internal/provider"
)

// streamSeeds are the recorded and made-up stream payloads.
func streamSeeds(f *testing.F) [][]byte { return streamSeedsT(f) }

func streamSeedsT(f testing.TB) [][]byte {
	var seeds [][]byte
	paths, _ := filepath.Glob(fixturesDir + "*.chunks.txt")
	more, _ := filepath.Glob("testdata/responses/*.chunks.txt")
	for _, p := range append(paths, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	return seeds
}

// checkFuzzStream drains a stream and checks the invariants every input
// must keep: chunks are JSON chat.completion.chunk objects with a model,
// the usage chunk (if any) is last, and the end is io.EOF or a known
// failure kind.
func checkFuzzStream(t *testing.T, s *stream, strict bool) {
	var sawUsage bool
	for i := 0; ; i++ {
		ch, err := s.Next()
		if err != nil {
			var se *provider.StreamError
			if !errors.Is(err, io.EOF) && !errors.Is(err, provider.ErrStreamBroken) && !errors.Is(err, provider.ErrBadResponse) && !errors.As(err, &se) {
				t.Fatalf("unexpected end: %v", err)
			}
			if errors.Is(err, io.EOF) && len(s.choices) == 0 && !s.blocked {
				t.Fatalf("clean end without any candidate")
			}
			return
		}
		if sawUsage {
			t.Fatalf("chunk after the usage chunk: %s", ch.Data)
		}
		sawUsage = ch.UsageOnly
		var m struct {
			Object  string            `json:"object"`
			Choices []json.RawMessage `json:"choices"`
		}
		if err := json.Unmarshal(ch.Data, &m); err != nil || m.Object != "chat.completion.chunk" || m.Choices == nil {
			t.Fatalf("bad chunk %q: %v", ch.Data, err)
		}
		if strict && (bytes.Contains(ch.Data, []byte(`"reasoning_content"`)) || bytes.Contains(ch.Data, []byte(`"content_blocks"`))) {
			t.Fatalf("strict chunk with extensions: %s", ch.Data)
		}
		if i > 100000 {
			t.Fatal("stream does not end")
		}
	}
}

// FuzzStreamBody feeds arbitrary bytes as the SSE body.
func FuzzStreamBody(f *testing.F) {
	for _, s := range streamSeeds(f) {
		var b bytes.Buffer
		for _, l := range bytes.Split(bytes.TrimSpace(s), []byte("\n")) {
			b.WriteString("data: ")
			b.Write(l)
			b.WriteString("\r\n\r\n")
		}
		f.Add(b.Bytes(), false)
		f.Add(b.Bytes()[:b.Len()/2], true)
	}
	f.Add([]byte("data: {\"error\":{\"code\":500}}\r\n\r\n"), true)
	f.Add([]byte(": comment\n\ndata: [DONE]\n\n"), false)
	c := New(nil)
	f.Fuzz(func(t *testing.T, body []byte, strict bool) {
		call := chatCall(t, []byte(`{"model":"m","stream":true,"logprobs":true,"messages":[{"role":"user","content":"x"}]}`), strict, nil)
		checkFuzzStream(t, streamFrom(c, call, string(body)), strict)
	})
}

// FuzzStreamEvent feeds arbitrary JSON-ish payloads as single events
// between well-formed ones.
func FuzzStreamEvent(f *testing.F) {
	for _, s := range streamSeeds(f) {
		for _, l := range bytes.Split(bytes.TrimSpace(s), []byte("\n")) {
			f.Add(l)
		}
	}
	f.Add([]byte(`{"candidates":[{"index":-5,"content":{"parts":[{"functionCall":{"name":"f","args":[1]}}]},"finishReason":"STOP"}]}`))
	f.Add([]byte(`{"candidates":[{"index":3,"logprobsResult":{"chosenCandidates":[{"token":"\u00ff"}],"topCandidates":[]}}]}`))
	c := New(nil)
	f.Fuzz(func(t *testing.T, payload []byte) {
		body := "data: " + string(bytes.ReplaceAll(payload, []byte("\n"), nil)) + "\r\n\r\n" +
			"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"end\"}]},\"finishReason\":\"STOP\"}]}\r\n\r\n"
		call := chatCall(t, []byte(`{"model":"m","stream":true,"logprobs":true,"messages":[{"role":"user","content":"x"}]}`), false, nil)
		checkFuzzStream(t, streamFrom(c, call, body), false)
	})
}
