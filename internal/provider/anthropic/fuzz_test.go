package anthropic

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
)

// streamSeeds returns the raw SSE fixtures and hand-made streams.
func streamSeeds() [][]byte {
	var seeds [][]byte
	for _, pattern := range []string{
		filepath.Join(fixtureDir, "anthropic-sdk-python", "*.txt"),
		filepath.Join("testdata", "streams", "*.sse"),
	} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil {
				seeds = append(seeds, b)
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join(fixtureDir, "vercel-ai", "*.chunks.txt"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			seeds = append(seeds, sseFromLines(b))
		}
	}
	return seeds
}

// FuzzStream feeds arbitrary bytes to the stream decoder as an SSE body: it
// must end (io.EOF or an error), and every chunk it yields must keep the
// stream shape checkStream asserts.
func FuzzStream(f *testing.F) {
	for _, s := range streamSeeds() {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, body []byte, strict bool) {
		chunks, _, err := drain(t, body, strict)
		checkStream(t, chunks, err, strict)
	})
}

// FuzzStreamEvents gives the fuzzer the events themselves: one JSON payload
// per line, framed as Anthropic frames them, so mutations reach the state
// machine rather than the SSE parser.
//
// The seeds are short on purpose: the fuzzer minimises every new input it
// finds, and minimising the multi-kilobyte fixtures takes longer than a
// fuzz run.
func FuzzStreamEvents(f *testing.F) {
	for _, seed := range []string{
		`{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1,"cache_read_input_tokens":2}}}
{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}
{"type":"ping"}
{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}
{"type":"content_block_stop","index":0}
{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}
{"type":"message_stop"}`,
		`{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1}}}
{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{"a":1}}}
{"type":"content_block_start","index":1,"content_block":{"type":"thinking","thinking":"hm","signature":"s"}}
{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"m"}}
{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"t"}}
{"type":"content_block_stop","index":1}
{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}
{"type":"content_block_stop","index":0}
{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":3}}
{"type":"message_stop"}`,
		`{"type":"message_start","message":{"id":"m","model":"x"}}
{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"d"}}
{"type":"content_block_stop","index":0}
{"type":"message_delta","delta":{"stop_reason":"refusal","stop_details":{"explanation":"no"}}}
{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, lines []byte, strict bool) {
		chunks, _, err := drain(t, sseFromLines(lines), strict)
		checkStream(t, chunks, err, strict)
		if err == nil || err == io.EOF {
			return
		}
		var se *provider.StreamError
		if !errors.Is(err, provider.ErrStreamBroken) && !errors.Is(err, provider.ErrBadResponse) && !errors.As(err, &se) {
			t.Errorf("unexpected error kind: %v", err)
		}
	})
}

// FuzzResponse feeds arbitrary bytes to the non-streamed decoder: it must
// answer ErrBadResponse or a well-formed chat.completion.
func FuzzResponse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixtureDir, "vercel-ai", "*.json"))
	more, _ := filepath.Glob(filepath.Join("testdata", "responses", "*.json"))
	for _, file := range append(files, more...) {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b, false)
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte, strict bool) {
		out, u, _, err := translateResponse(raw, strict)
		if err != nil {
			if !errors.Is(err, provider.ErrBadResponse) {
				t.Errorf("unexpected error kind: %v", err)
			}
			return
		}
		if !gjson.ValidBytes(out) || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
			t.Errorf("answer %s, usage %+v", out, u)
		}
	})
}

// FuzzRequest translates arbitrary valid OpenAI requests: the result is an
// Anthropic body that is valid JSON with the required fields, or a 400
// naming a parameter.
func FuzzRequest(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "requests", "*.json"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := llm.DecodeChatRequest(body)
		if err != nil {
			return
		}
		call := &provider.ChatCall{Target: &provider.Target{Provider: Name}, Request: req, Body: body, StrictOpenAI: true}
		out, err := buildRequest(call, req.Stream)
		if err != nil {
			if up, ok := err.(*provider.UnsupportedParameterError); !ok || up.Param == "" {
				t.Errorf("unexpected error: %v", err)
			}
			return
		}
		r := gjson.ParseBytes(out)
		if !gjson.ValidBytes(out) || r.Get("model").String() != req.Model || r.Get("max_tokens").Int() < 1 || !r.Get("messages").IsArray() {
			t.Errorf("request %s", out)
		}
		if b := r.Get("thinking.budget_tokens"); b.Exists() && (b.Int() < minBudget || b.Int() >= r.Get("max_tokens").Int()) {
			t.Errorf("thinking budget %d, max_tokens %d", b.Int(), r.Get("max_tokens").Int())
		}
		if bytes.Contains(out, []byte(`"role":"system"`)) {
			t.Errorf("system role inside messages: %s", out)
		}
	})
}
