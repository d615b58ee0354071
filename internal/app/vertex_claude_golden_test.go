package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tidwall/sjson"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/provider/anthropic"
	"github.com/ai-gateway/gateway/internal/provider/google"
)

// The flag has its own name: this package's other tests may define
// -update one day.
var updateVertexClaude = flag.Bool("update-vertex-claude", false, "rewrite testdata/vertex-claude golden files")

// vertexClaudeCapture answers every request in-process, keeping it: an
// Anthropic message for rawPredict, an Anthropic event stream for
// streamRawPredict.
type vertexClaudeCapture struct {
	req  *http.Request
	body []byte
}

func (c *vertexClaudeCapture) RoundTrip(r *http.Request) (*http.Response, error) {
	c.req = r
	c.body, _ = io.ReadAll(r.Body)
	h := http.Header{"Content-Type": {"application/json"}}
	answer := `{"id":"msg_vrtx_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Hi."}],"stop_reason":"end_turn","usage":{"input_tokens":4,"output_tokens":2}}`
	if strings.HasSuffix(r.URL.Path, ":streamRawPredict") {
		h.Set("Content-Type", "text/event-stream")
		answer = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_vrtx_01\",\"model\":\"claude-sonnet-4-5-20250929\",\"usage\":{\"input_tokens\":4}}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(answer)), Request: r}, nil
}

// vertexClaudeSchema is the anthropic package's Messages request schema.
func vertexClaudeSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	const path = "../provider/anthropic/testdata/messages-request.schema.json"
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("schema not available: %v", err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("messages-request.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("messages-request.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestVertexClaudeRequestGolden sends OpenAI requests for Claude through
// the vertex-ai adapter as the app wires it (google with the anthropic
// Translator) and compares the request Vertex receives (method, URL,
// headers, body, dropped fields) with testdata/vertex-claude. The body is
// also checked against Anthropic's Messages schema once its model is put
// back and its anthropic_version taken out, which is all Vertex changes.
func TestVertexClaudeRequestGolden(t *testing.T) {
	schema := vertexClaudeSchema(t)
	const weather = `"tools":[{"type":"function","function":{"name":"get_weather","description":"Get current weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`
	for _, tc := range []struct {
		name   string
		region string
		opts   map[string]string
		body   string
	}{
		{"plain", "us-east5", nil,
			`{"model":"claude-sonnet-4-5@20250929","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello."}],"temperature":1.4,"stop":["END"],"max_completion_tokens":300,"user":"user-7","seed":7}`},
		{"plain-stream", "us-east5", nil,
			`{"model":"claude-sonnet-4-5@20250929","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello."}],"max_tokens":64}`},
		{"tool-round-trip", "europe-west1", nil,
			`{"model":"claude-3-5-sonnet-v2@20241022","messages":[{"role":"user","content":"Weather in Paris?"},{"role":"assistant","content":"Checking.","tool_calls":[{"id":"toolu_01XYZ","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","tool_call_id":"toolu_01XYZ","content":"18C sunny"}],` + weather + `,"tool_choice":"required","parallel_tool_calls":false}`},
		{"thinking-image-stream", "us-east5", nil,
			`{"model":"claude-opus-4-1@20250805","stream":true,"reasoning_effort":"high","messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}`},
		{"global-beta", "global", map[string]string{"anthropic_beta": "context-1m-2025-08-07", "anthropic_version": "2023-06-01"},
			`{"model":"claude-sonnet-4@20250514","messages":[{"role":"user","content":"hi"}],"top_p":0.9,"frequency_penalty":0.5}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			capture := &vertexClaudeCapture{}
			c := google.NewVertex(&http.Client{Transport: capture}, google.WithClaude(anthropic.Translator{Provider: google.NameVertex}))
			req, err := llm.DecodeChatRequest([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			opts := map[string]string{"vertex_project_id": "acme", "vertex_region": tc.region}
			for k, v := range tc.opts {
				opts[k] = v
			}
			call := &provider.ChatCall{
				Target:  &provider.Target{Provider: google.NameVertex, APIKey: "ya29.golden", Options: opts},
				Request: req, Body: []byte(tc.body), StrictOpenAI: true,
			}
			if req.Stream {
				s, err := c.ChatStream(context.Background(), call)
				if err != nil {
					t.Fatal(err)
				}
				for {
					if _, err := s.Next(); err != nil {
						if err != io.EOF {
							t.Errorf("stream: %v", err)
						}
						break
					}
				}
				s.Close()
			} else {
				resp, err := c.Chat(context.Background(), call)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Contains(resp.Body, []byte(`"content":"Hi."`)) || resp.Model != "claude-sonnet-4-5-20250929" || resp.Usage.TotalTokens != 6 {
					t.Errorf("response = %s", resp.Body)
				}
			}

			var out bytes.Buffer
			out.WriteString(capture.req.Method + " " + capture.req.URL.String() + "\n")
			keys := make([]string, 0, len(capture.req.Header))
			for k := range capture.req.Header {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				out.WriteString(k + ": " + strings.Join(capture.req.Header[k], ", ") + "\n")
			}
			dropped, _ := json.Marshal(call.Dropped)
			out.WriteString("Dropped: " + string(dropped) + "\n\n")
			if err := json.Indent(&out, capture.body, "", "  "); err != nil {
				t.Fatalf("body is not JSON: %s", capture.body)
			}
			out.WriteByte('\n')
			vertexClaudeGolden(t, tc.name+".golden", out.Bytes())

			asAnthropic, _ := sjson.DeleteBytes(capture.body, "anthropic_version")
			asAnthropic, _ = sjson.SetBytes(asAnthropic, "model", req.Model)
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(asAnthropic))
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(inst); err != nil {
				t.Errorf("body is not a Messages request: %v\n%s", err, asAnthropic)
			}
		})
	}
}

func vertexClaudeGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "vertex-claude", name)
	if *updateVertexClaude {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestVertexClaudeRequestGolden -update-vertex-claude to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (-want +got):\n%s", name, cmp.Diff(string(want), string(got)))
	}
}
