package anthropic

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/provider/providertest"
)

// capture is an upstream that records the request and answers with status,
// content type and body.
func capture(t *testing.T, status int, ct, body string, hdr ...string) (*httptest.Server, *http.Request, *[]byte) {
	t.Helper()
	var got http.Request
	var gotBody []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = *r.Clone(context.Background())
		gotBody, _ = io.ReadAll(r.Body)
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &got, &gotBody
}

const textAnswer = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Hi."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":4,"cache_creation_input_tokens":1,"cache_read_input_tokens":2,"output_tokens":3}}`

func TestChatHeadersAndURL(t *testing.T) {
	for _, tc := range []struct {
		name        string
		options     map[string]string
		forwarded   http.Header
		wantVersion string
		wantBeta    string
	}{
		{"defaults", nil, nil, DefaultVersion, ""},
		{"options", map[string]string{"anthropic_version": "2024-01-01", "anthropic_beta": "output-128k-2025-02-19"}, http.Header{"Anthropic-Version": {"2022-01-01"}, "Anthropic-Beta": {"client-beta"}}, "2024-01-01", "output-128k-2025-02-19"},
		{"forwarded client headers", nil, http.Header{"Anthropic-Version": {"2023-01-01"}, "Anthropic-Beta": {"client-beta"}}, "2023-01-01", "client-beta"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, got, gotBody := capture(t, 200, "application/json", textAnswer, "request-id", "req_9")
			body := []byte(`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}`)
			call := chatCall(t, body)
			call.Target = &provider.Target{Provider: Name, APIKey: "sk-ant-1", CustomHost: srv.URL + "/v1/", Options: tc.options}
			call.Header = tc.forwarded
			resp, err := New(srv.Client()).Chat(context.Background(), call)
			if err != nil {
				t.Fatal(err)
			}
			if got.URL.Path != "/v1/messages" || got.Method != "POST" {
				t.Errorf("upstream %s %s", got.Method, got.URL.Path)
			}
			h := got.Header
			if h.Get("x-api-key") != "sk-ant-1" || h.Get("Authorization") != "" || h.Get("anthropic-version") != tc.wantVersion || h.Get("anthropic-beta") != tc.wantBeta ||
				h.Get("Content-Type") != "application/json" || h.Get("Accept") != "application/json" {
				t.Errorf("upstream headers %v", h)
			}
			if gjson.GetBytes(*gotBody, "max_tokens").Int() != 32000 || gjson.GetBytes(*gotBody, "stream").Exists() {
				t.Errorf("upstream body %s", *gotBody)
			}
			if resp.Status != 200 || resp.Model != "claude-sonnet-4-5-20250929" || resp.Header.Get("request-id") != "req_9" {
				t.Errorf("response %+v", resp)
			}
			if u := resp.Usage; u.PromptTokens != 7 || u.CachedTokens != 2 || u.CacheWriteTokens != 1 || u.CompletionTokens != 3 || u.TotalTokens != 10 {
				t.Errorf("usage %+v", u)
			}
			if gjson.GetBytes(resp.Body, "choices.0.message.content").String() != "Hi." {
				t.Errorf("body %s", resp.Body)
			}
		})
	}
}

func TestEndpointDefault(t *testing.T) {
	if got := endpoint(&provider.Target{}, "/messages", ""); got != "https://api.anthropic.com/v1/messages" {
		t.Errorf("endpoint = %s", got)
	}
	if got := endpoint(&provider.Target{CustomHost: "http://127.0.0.1:9/v1"}, "/models", "limit=2"); got != "http://127.0.0.1:9/v1/models?limit=2" {
		t.Errorf("endpoint = %s", got)
	}
}

func TestUpstreamErrors(t *testing.T) {
	const body = `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"},"request_id":"req_x"}`
	srv, _, _ := capture(t, 429, "application/json", body, "retry-after", "12")
	c := New(srv.Client())
	for _, stream := range []bool{false, true} {
		call := chatCall(t, []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		call.Target.CustomHost = srv.URL + "/v1"
		var err error
		if stream {
			_, err = c.ChatStream(context.Background(), call)
		} else {
			_, err = c.Chat(context.Background(), call)
		}
		var ue *provider.UpstreamError
		if !errors.As(err, &ue) || ue.Status != 429 || ue.Provider != Name || ue.Header.Get("retry-after") != "12" || string(ue.Body) != body {
			t.Errorf("stream %v: err = %v", stream, err)
		}
		if d := provider.ParseErrorBody(ue.Body); d.Type != "rate_limit_error" || !strings.HasPrefix(d.Message, "Number of request tokens") {
			t.Errorf("parsed %+v", d)
		}
	}
}

func TestStreamWrongContentType(t *testing.T) {
	srv, _, _ := capture(t, 200, "application/json", textAnswer)
	call := chatCall(t, []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	call.Target.CustomHost = srv.URL + "/v1"
	if _, err := New(srv.Client()).ChatStream(context.Background(), call); !errors.Is(err, provider.ErrBadResponse) {
		t.Errorf("err = %v, want ErrBadResponse", err)
	}
}

func TestUnreachable(t *testing.T) {
	call := chatCall(t, []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	call.Target.CustomHost = "http://127.0.0.1:1/v1"
	if _, err := New(http.DefaultClient).Chat(context.Background(), call); !errors.Is(err, provider.ErrUnreachable) {
		t.Errorf("err = %v, want ErrUnreachable", err)
	}
}

func TestPrepareForward(t *testing.T) {
	for _, tc := range []struct {
		name    string
		target  provider.Target
		in      http.Header
		wantURL string
		want    http.Header
	}{
		{"default host", provider.Target{APIKey: "sk-ant-1"}, http.Header{},
			"https://api.anthropic.com/v1/models?limit=5", http.Header{"X-Api-Key": {"sk-ant-1"}, "Anthropic-Version": {DefaultVersion}}},
		{"client headers kept", provider.Target{CustomHost: "http://fake:1/v1"}, http.Header{"X-Api-Key": {"client-key"}, "Anthropic-Version": {"2023-01-01"}, "Anthropic-Beta": {"files-api-2025-04-14"}},
			"http://fake:1/v1/models?limit=5", http.Header{"X-Api-Key": {"client-key"}, "Anthropic-Version": {"2023-01-01"}, "Anthropic-Beta": {"files-api-2025-04-14"}}},
		{"target wins", provider.Target{APIKey: "sk-ant-2", Options: map[string]string{"anthropic_version": "2024-02-02", "anthropic_beta": "b1,b2"}}, http.Header{"X-Api-Key": {"client-key"}, "Anthropic-Version": {"2023-01-01"}},
			"https://api.anthropic.com/v1/models?limit=5", http.Header{"X-Api-Key": {"sk-ant-2"}, "Anthropic-Version": {"2024-02-02"}, "Anthropic-Beta": {"b1,b2"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := http.NewRequest("GET", "http://placeholder", nil)
			out.Header = tc.in
			if err := New(nil).PrepareForward(out, &tc.target, "/models", "limit=5"); err != nil {
				t.Fatal(err)
			}
			if out.URL.String() != tc.wantURL || out.Host != out.URL.Host {
				t.Errorf("URL %s host %s", out.URL, out.Host)
			}
			for k, v := range tc.want {
				if out.Header.Get(k) != v[0] {
					t.Errorf("%s = %q, want %q", k, out.Header.Get(k), v[0])
				}
			}
		})
	}
}

// TestAgainstFake drives the adapter against the fake upstream through a
// tool-use round trip with thinking, plain and streamed: the fake checks
// that the thinking block comes back with its signature.
func TestAgainstFake(t *testing.T) {
	fake := providertest.NewAnthropic(t)
	c := New(fake.Server.Client())
	const first = `{"model":"claude-sonnet-4-5","reasoning_effort":"low","messages":[{"role":"user","content":"Weather in Paris?"}],
		"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`
	call := chatCall(t, []byte(first))
	call.StrictOpenAI = false
	call.Target.CustomHost = fake.BaseURL()
	resp, err := c.Chat(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	msg := gjson.GetBytes(resp.Body, "choices.0.message")
	if msg.Get("reasoning_content").String() != providertest.AnthropicThinking || msg.Get("tool_calls.0.id").String() != providertest.AnthropicToolUseID {
		t.Fatalf("first answer %s", resp.Body)
	}
	second, _ := sjson.SetRaw(first, "messages.-1", msg.Raw)
	second, _ = sjson.SetRaw(second, "messages.-1", `{"role":"tool","tool_call_id":"`+providertest.AnthropicToolUseID+`","content":"18C"}`)
	for _, stream := range []bool{false, true} {
		body := second
		if stream {
			body, _ = sjson.Set(body, "stream", true)
		}
		call := chatCall(t, []byte(body))
		call.StrictOpenAI = false
		call.Target.CustomHost = fake.BaseURL()
		if !stream {
			resp, err := c.Chat(context.Background(), call)
			if err != nil {
				t.Fatalf("continuation: %v (sent %s)", err, fake.Last().Body)
			}
			if got := gjson.GetBytes(resp.Body, "choices.0.message.content").String(); got != "It is sunny in Paris." {
				t.Errorf("continuation answer %s", resp.Body)
			}
			continue
		}
		st, err := c.ChatStream(context.Background(), call)
		if err != nil {
			t.Fatalf("streamed continuation: %v (sent %s)", err, fake.Last().Body)
		}
		var text strings.Builder
		var chunks []provider.Chunk
		for {
			ch, err := st.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			chunks = append(chunks, ch)
			text.WriteString(gjson.GetBytes(ch.Data, "choices.0.delta.content").String())
		}
		st.Close()
		checkStream(t, chunks, io.EOF, false)
		if text.String() != "It is sunny in Paris." || st.Header().Get("request-id") != "req_fake01" {
			t.Errorf("streamed text %q, headers %v", text.String(), st.Header())
		}
	}
}

// TestFakeRejectsMissingThinking checks the fake enforces the rule the
// thinking round trip exists for, so TestAgainstFake and the end-to-end
// tests prove something.
func TestFakeRejectsMissingThinking(t *testing.T) {
	fake := providertest.NewAnthropic(t)
	body := `{"model":"claude-sonnet-4-5","max_tokens":2048,"thinking":{"type":"enabled","budget_tokens":1024},"tools":[{"name":"get_weather","input_schema":{"type":"object"}}],
		"messages":[{"role":"user","content":"Weather?"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"18C"}]}]}`
	req, _ := http.NewRequest("POST", fake.BaseURL()+"/messages", strings.NewReader(body))
	req.Header.Set("x-api-key", "k")
	req.Header.Set("anthropic-version", DefaultVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "Expected `thinking`") {
		t.Errorf("fake answered %d %s", resp.StatusCode, b)
	}
}
