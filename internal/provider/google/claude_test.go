package google

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ai-gateway/gateway/internal/provider"
)

// fakeClaude is a ClaudeTranslator that records what the adapter asks of
// it; its body is a marker, its answers are canned.
type fakeClaude struct {
	stream  bool
	version string
	err     error
}

func (f *fakeClaude) BuildBody(call *provider.ChatCall, stream bool, version string) ([]byte, error) {
	f.stream, f.version = stream, version
	if f.err != nil {
		return nil, f.err
	}
	return []byte(`{"translated":true}`), nil
}

func (f *fakeClaude) ReadResponse(ctx context.Context, resp *http.Response, call *provider.ChatCall) (*provider.Response, error) {
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &provider.Response{Status: 200, Header: resp.Header, Body: b, Model: "read"}, nil
}

type fakeClaudeStream struct{ resp *http.Response }

func (s *fakeClaudeStream) Next() (provider.Chunk, error) { return provider.Chunk{}, io.EOF }
func (s *fakeClaudeStream) Header() http.Header           { return s.resp.Header }
func (s *fakeClaudeStream) Close() error                  { return s.resp.Body.Close() }

func (f *fakeClaude) NewStream(ctx context.Context, resp *http.Response, call *provider.ChatCall) (provider.Stream, error) {
	return &fakeClaudeStream{resp}, nil
}

// captureTransport answers every request with a canned answer and keeps
// the request and its body; nothing leaves the process.
type captureTransport struct {
	reqs   []*http.Request
	bodies []string
	status int
	ct     string
	answer string
}

func (c *captureTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(r.Body)
	c.reqs = append(c.reqs, r)
	c.bodies = append(c.bodies, string(b))
	status := c.status
	if status == 0 {
		status = 200
	}
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {c.ct}}, Body: io.NopCloser(strings.NewReader(c.answer)), Request: r}, nil
}

func claudeTarget(region string, opts ...string) *provider.Target {
	o := map[string]string{"vertex_project_id": "acme", "vertex_region": region}
	for i := 0; i+1 < len(opts); i += 2 {
		o[opts[i]] = opts[i+1]
	}
	return &provider.Target{Provider: NameVertex, APIKey: "ya29.static", Options: o}
}

const claudeRequest = `{"model":"claude-sonnet-4@20250514","messages":[{"role":"user","content":"hi"}]}`

// TestVertexClaudeDispatch: a Claude model goes, through the translator,
// to publishers/anthropic …:rawPredict or …:streamRawPredict on the
// regional (or global) host with the bearer token and no Anthropic
// credential headers.
func TestVertexClaudeDispatch(t *testing.T) {
	for _, tc := range []struct {
		name, region, method string
		stream               bool
		want                 string
	}{
		{"regional", "us-east5", "Chat", false, "https://us-east5-aiplatform.googleapis.com/v1/projects/acme/locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict"},
		{"regional stream", "us-east5", "ChatStream", true, "https://us-east5-aiplatform.googleapis.com/v1/projects/acme/locations/us-east5/publishers/anthropic/models/claude-sonnet-4@20250514:streamRawPredict"},
		{"global", "global", "Chat", false, "https://aiplatform.googleapis.com/v1/projects/acme/locations/global/publishers/anthropic/models/claude-sonnet-4@20250514:rawPredict"},
		{"global stream", "global", "ChatStream", true, "https://aiplatform.googleapis.com/v1/projects/acme/locations/global/publishers/anthropic/models/claude-sonnet-4@20250514:streamRawPredict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &captureTransport{ct: "application/json", answer: `{"answer":1}`}
			if tc.stream {
				tr.ct = "text/event-stream"
			}
			fc := &fakeClaude{}
			c := NewVertex(&http.Client{Transport: tr}, WithClaude(fc))
			call := chatCall(t, []byte(claudeRequest), true, claudeTarget(tc.region))
			if tc.stream {
				s, err := c.ChatStream(context.Background(), call)
				if err != nil {
					t.Fatal(err)
				}
				s.Close()
			} else {
				resp, err := c.Chat(context.Background(), call)
				if err != nil {
					t.Fatal(err)
				}
				if string(resp.Body) != `{"answer":1}` || resp.Model != "read" {
					t.Errorf("response = %+v", resp)
				}
			}
			if len(tr.reqs) != 1 {
				t.Fatalf("%d requests", len(tr.reqs))
			}
			r := tr.reqs[0]
			if r.URL.String() != tc.want || r.Method != "POST" {
				t.Errorf("%s %s, want %s", r.Method, r.URL, tc.want)
			}
			if r.Header.Get("Authorization") != "Bearer ya29.static" || r.Header.Get("x-api-key") != "" || r.Header.Get("anthropic-version") != "" ||
				r.Header.Get("x-goog-api-key") != "" || r.Header.Get("Content-Type") != "application/json" {
				t.Errorf("headers = %v", r.Header)
			}
			if tc.stream != (r.Header.Get("Accept") == "text/event-stream") {
				t.Errorf("Accept = %q", r.Header.Get("Accept"))
			}
			if tr.bodies[0] != `{"translated":true}` || fc.stream != tc.stream || fc.version != "vertex-2023-10-16" {
				t.Errorf("body %s, translator asked stream=%v version=%q", tr.bodies[0], fc.stream, fc.version)
			}
		})
	}
}

func TestVertexClaudeHeadersAndVersion(t *testing.T) {
	tr := &captureTransport{ct: "application/json", answer: `{}`}
	fc := &fakeClaude{}
	c := NewVertex(&http.Client{Transport: tr}, WithClaude(fc))
	call := chatCall(t, []byte(claudeRequest), true, claudeTarget("us-east5", "anthropic_beta", "context-1m-2025-08-07", "anthropic_version", "2023-06-01"))
	call.Header = http.Header{"X-Forwarded-Thing": {"1"}}
	if _, err := c.Chat(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	h := tr.reqs[0].Header
	if h.Get("anthropic-beta") != "context-1m-2025-08-07" || h.Get("X-Forwarded-Thing") != "1" || fc.version != VertexAnthropicVersion {
		t.Errorf("headers %v, version %q", h, fc.version)
	}
	if call.Header.Get("anthropic-beta") != "" {
		t.Errorf("the call's forwarded headers were modified: %v", call.Header)
	}
	call = chatCall(t, []byte(claudeRequest), true, claudeTarget("us-east5", "anthropic_version", "vertex-2099-01-01"))
	if _, err := c.Chat(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	if fc.version != "vertex-2099-01-01" {
		t.Errorf("version = %q", fc.version)
	}
}

// TestVertexClaudeErrors: Vertex's and the model's error answers pass as
// UpstreamErrors of vertex-ai with their body; config and translation
// errors stop before any request.
func TestVertexClaudeErrors(t *testing.T) {
	anthropicErr := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`
	for _, stream := range []bool{false, true} {
		tr := &captureTransport{status: 529, ct: "application/json", answer: anthropicErr}
		c := NewVertex(&http.Client{Transport: tr}, WithClaude(&fakeClaude{}))
		call := chatCall(t, []byte(claudeRequest), true, claudeTarget("us-east5"))
		var err error
		if stream {
			_, err = c.ChatStream(context.Background(), call)
		} else {
			_, err = c.Chat(context.Background(), call)
		}
		var ue *provider.UpstreamError
		if !errors.As(err, &ue) || ue.Provider != NameVertex || ue.Status != 529 || string(ue.Body) != anthropicErr {
			t.Errorf("stream=%v: err = %#v", stream, err)
		}
	}

	tr := &captureTransport{}
	bad := &provider.UnsupportedParameterError{Provider: NameVertex, Param: "n"}
	c := NewVertex(&http.Client{Transport: tr}, WithClaude(&fakeClaude{err: bad}))
	if _, err := c.Chat(context.Background(), chatCall(t, []byte(claudeRequest), true, claudeTarget("us-east5"))); !errors.Is(err, bad) {
		t.Errorf("translation error: %v", err)
	}
	noRegion := &provider.Target{Provider: NameVertex, APIKey: "t", Options: map[string]string{"vertex_project_id": "acme"}}
	var ce *provider.ConfigError
	if _, err := c.ChatStream(context.Background(), chatCall(t, []byte(claudeRequest), true, noRegion)); !errors.As(err, &ce) || ce.Param != "x-gateway-vertex-region" {
		t.Errorf("no region: %v", err)
	}
	if len(tr.reqs) != 0 {
		t.Errorf("%d requests sent", len(tr.reqs))
	}

	// Gemini models are untouched by the translator; without one, Claude
	// stays refused.
	tr = &captureTransport{ct: "application/json", answer: `{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP"}]}`}
	c = NewVertex(&http.Client{Transport: tr}, WithClaude(&fakeClaude{}))
	if _, err := c.Chat(context.Background(), chatCall(t, []byte(`{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}]}`), true, claudeTarget("us-east5"))); err != nil ||
		!strings.HasSuffix(tr.reqs[0].URL.Path, "/publishers/google/models/gemini-2.5-flash:generateContent") {
		t.Errorf("gemini with a Claude translator: %v", err)
	}
	_, err := NewVertex(&http.Client{Transport: tr}).ChatStream(context.Background(), chatCall(t, []byte(claudeRequest), true, claudeTarget("us-east5")))
	if !errors.As(err, &ce) || ce.Param != "model" {
		t.Errorf("claude without translator: %v", err)
	}
	// The Gemini API adapter has no Claude: the model goes to
	// generateContent like any other.
	if _, err := New(&http.Client{Transport: tr}).Chat(context.Background(), chatCall(t, []byte(claudeRequest), true, nil)); err != nil ||
		tr.reqs[len(tr.reqs)-1].URL.String() != DefaultGeminiBaseURL+"/models/claude-sonnet-4@20250514:generateContent" {
		t.Errorf("gemini api: %v, %s", err, tr.reqs[len(tr.reqs)-1].URL)
	}
}
