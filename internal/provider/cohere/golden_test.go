package cohere

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fixtureDir holds the recorded Cohere answers (PROVIDERS.md §13).
const fixtureDir = "../../../../shared/specs/cohere/fixtures/vercel-ai"

func TestMain(m *testing.M) {
	now = func() time.Time { return time.Unix(1767225600, 0) }
	n := 0
	newID = func() string { n++; return fmt.Sprintf("gen%04d", n) }
	os.Exit(m.Run())
}

// resetIDs restarts generated ids so each golden case is independent.
func resetIDs() {
	n := 0
	newID = func() string { n++; return fmt.Sprintf("gen%04d", n) }
}

// golden compares got with the file, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, d)
	}
}

func indent(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

// compileSchema loads a shape schema of testdata/schema. Cohere publishes
// its OpenAPI file only under a proprietary licence, so these schemas were
// written for the tests from the documented field names and ranges.
func compileSchema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "schema", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, body []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(inst); err != nil {
		t.Errorf("outgoing body does not match Cohere's request shape: %v\n%s", err, body)
	}
}

// TestRequestGolden translates every OpenAI request of testdata/request and
// compares the Cohere body (and the dropped fields, or the error) with
// its .golden file; every body is checked against the request shape.
func TestRequestGolden(t *testing.T) {
	schema := compileSchema(t, "chat-request.schema.json")
	inputs, _ := filepath.Glob("testdata/request/*.json")
	if len(inputs) < 10 {
		t.Fatalf("only %d request cases", len(inputs))
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		t.Run(name, func(t *testing.T) {
			body, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			req, err := llm.DecodeChatRequest(body)
			if err != nil {
				t.Fatalf("input does not validate: %v", err)
			}
			call := &provider.ChatCall{Target: &provider.Target{Provider: Name}, Request: req, Body: body, StrictOpenAI: true}
			cr, err := buildChatRequest(call, req.Stream)
			var out []byte
			if err != nil {
				var up *provider.UnsupportedParameterError
				if !errors.As(err, &up) {
					t.Fatalf("error %T %v, want an UnsupportedParameterError", err, err)
				}
				if !strings.HasPrefix(name, "err-") {
					t.Errorf("unexpected error: %v", err)
				}
				out, _ = json.Marshal(map[string]string{"param": up.Param, "error": up.Error()})
			} else {
				if strings.HasPrefix(name, "err-") {
					t.Errorf("want an error, got a request")
				}
				nb, err := marshal(cr)
				if err != nil {
					t.Fatal(err)
				}
				validate(t, schema, nb)
				out, _ = marshal(map[string]any{"dropped": call.Dropped, "cohere": json.RawMessage(nb)})
			}
			golden(t, filepath.Join("testdata", "request", name+".golden"), indent(t, out))
		})
	}
}

// responseInputs lists the recorded fixtures and the synthetic answers.
func responseInputs(t *testing.T) map[string]string {
	t.Helper()
	in := map[string]string{}
	fx, _ := filepath.Glob(filepath.Join(fixtureDir, "cohere-*.json"))
	if len(fx) == 0 {
		t.Logf("fixtures not found under %s: recorded answers skipped", fixtureDir)
	}
	for _, f := range fx {
		in[strings.TrimSuffix(filepath.Base(f), ".json")] = f
	}
	syn, _ := filepath.Glob("testdata/response/*.json")
	for _, f := range syn {
		in[strings.TrimSuffix(filepath.Base(f), ".json")] = f
	}
	return in
}

// TestResponseGolden translates Cohere answers to chat.completion objects,
// with strict OpenAI compliance on and off.
func TestResponseGolden(t *testing.T) {
	for name, path := range responseInputs(t) {
		for _, strict := range []bool{true, false} {
			mode := "strict"
			if !strict {
				mode = "nonstrict"
			}
			t.Run(name+"/"+mode, func(t *testing.T) {
				resetIDs()
				body, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				resp, u, err := translateResponse(body, "command-a-03-2025", strict)
				var out []byte
				if err != nil {
					var ue *provider.UpstreamError
					if !errors.As(err, &ue) {
						t.Fatalf("error %T %v", err, err)
					}
					out, _ = json.Marshal(map[string]any{"status": ue.Status, "body": json.RawMessage(ue.Body)})
				} else {
					b, _ := marshal(resp)
					out, _ = marshal(map[string]any{"openai": json.RawMessage(b), "log_usage": u})
					if strict && (bytes.Contains(b, []byte("reasoning_content")) || bytes.Contains(b, []byte("content_blocks"))) {
						t.Errorf("strict answer carries non-OpenAI fields: %s", b)
					}
				}
				golden(t, filepath.Join("testdata", "response", name+"."+mode+".golden"), indent(t, out))
			})
		}
	}
}

// TestResponseFixtureUsage pins §0.7 on the recorded answers: prompt =
// tokens.input_tokens, completion = tokens.output_tokens, cached =
// cached_tokens.
func TestResponseFixtureUsage(t *testing.T) {
	for _, tc := range []struct {
		file                  string
		prompt, compl, cached int
		finish                string
	}{
		{"cohere-text.json", 507, 10, 448, "stop"},
		{"cohere-tool-call.json", 1549, 103, 992, "tool_calls"},
		{"cohere-reasoning.json", 1394, 582, 1344, "stop"},
	} {
		body, err := os.ReadFile(filepath.Join(fixtureDir, tc.file))
		if err != nil {
			t.Skipf("fixture missing: %v", err)
		}
		resp, u, err := translateResponse(body, "m", false)
		if err != nil {
			t.Fatal(err)
		}
		if u.PromptTokens != tc.prompt || u.CompletionTokens != tc.compl || u.CachedTokens != tc.cached || u.TotalTokens != tc.prompt+tc.compl {
			t.Errorf("%s: usage %+v", tc.file, u)
		}
		if resp.Choices[0].FinishReason != tc.finish {
			t.Errorf("%s: finish %q", tc.file, resp.Choices[0].FinishReason)
		}
	}
}

// streamInputs lists the recorded chunk files and the synthetic ones.
func streamInputs(t *testing.T) map[string]string {
	t.Helper()
	in := map[string]string{}
	fx, _ := filepath.Glob(filepath.Join(fixtureDir, "cohere-*.chunks.txt"))
	if len(fx) == 0 {
		t.Logf("fixtures not found under %s: recorded streams skipped", fixtureDir)
	}
	for _, f := range fx {
		in[strings.TrimSuffix(filepath.Base(f), ".chunks.txt")] = f
	}
	syn, _ := filepath.Glob("testdata/stream/*.chunks.txt")
	for _, f := range syn {
		in[strings.TrimSuffix(filepath.Base(f), ".chunks.txt")] = f
	}
	return in
}

// sseFrom frames one payload per line as Cohere's SSE (event name plus
// data line).
func sseFrom(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b bytes.Buffer
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var ev struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal([]byte(line), &ev)
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", ev.Type, line)
	}
	return b.Bytes()
}

// drain reads a stream to its end and renders every chunk, one per line,
// then how it ended.
func drain(s provider.Stream) []byte {
	var out bytes.Buffer
	for {
		ch, err := s.Next()
		if err != nil {
			switch {
			case errors.Is(err, io.EOF):
				out.WriteString("END: EOF\n")
			default:
				var se *provider.StreamError
				if errors.As(err, &se) {
					fmt.Fprintf(&out, "END: stream error %s\n", se.Data)
				} else {
					fmt.Fprintf(&out, "END: %v\n", err)
				}
			}
			return out.Bytes()
		}
		flags := ""
		if ch.UsageOnly {
			flags = fmt.Sprintf(" [usage-only %+v]", *ch.Usage)
		}
		fmt.Fprintf(&out, "%s%s\n", ch.Data, flags)
	}
}

// TestStreamGolden drives the stream reader with each event file, framed as
// SSE, and compares the OpenAI chunks chunk by chunk, strict on and off.
func TestStreamGolden(t *testing.T) {
	for name, path := range streamInputs(t) {
		for _, strict := range []bool{true, false} {
			mode := "strict"
			if !strict {
				mode = "nonstrict"
			}
			t.Run(name+"/"+mode, func(t *testing.T) {
				resetIDs()
				s := newTestStream(sseFrom(t, path), "command-a-03-2025", strict)
				got := drain(s)
				if strict && (bytes.Contains(got, []byte("reasoning_content")) || bytes.Contains(got, []byte("content_blocks"))) {
					t.Errorf("strict stream carries non-OpenAI fields")
				}
				checkChunks(t, got)
				golden(t, filepath.Join("testdata", "stream", name+"."+mode+".golden"), got)
			})
		}
	}
}

// checkChunks asserts the stream shape of API.md §3 on rendered chunks:
// every chunk is a chat.completion.chunk, the first is the role chunk,
// content chunks carry "usage":null, and a usage-only chunk is last.
func checkChunks(t *testing.T, rendered []byte) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(rendered)), "\n")
	var chunks []string
	for _, l := range lines {
		if strings.HasPrefix(l, "END:") {
			continue
		}
		chunks = append(chunks, l)
	}
	for i, c := range chunks {
		data, _, _ := strings.Cut(c, " [usage-only")
		var ch map[string]any
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatalf("chunk %d not JSON: %v", i, err)
		}
		if ch["object"] != "chat.completion.chunk" {
			t.Errorf("chunk %d object %v", i, ch["object"])
		}
		choices, _ := ch["choices"].([]any)
		if i == 0 {
			d := choices[0].(map[string]any)["delta"].(map[string]any)
			if d["role"] != "assistant" || d["content"] != "" {
				t.Errorf("first chunk %s is not the role chunk", data)
			}
		}
		if len(choices) == 0 {
			if i != len(chunks)-1 || ch["usage"] == nil {
				t.Errorf("usage chunk %d of %d: %s", i, len(chunks), data)
			}
		} else if u, ok := ch["usage"]; !ok || u != nil {
			t.Errorf("content chunk %d without usage:null: %s", i, data)
		}
	}
}

func newTestStream(body []byte, model string, strict bool) *stream {
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(body))}
	return newStream(context.Background(), resp, model, strict)
}
