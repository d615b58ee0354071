package cohere

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/provider/providertest"
)

func chatCall(t *testing.T, fake *providertest.Cohere, body string, strict bool) *provider.ChatCall {
	t.Helper()
	req, err := llm.DecodeChatRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return &provider.ChatCall{
		Target:  &provider.Target{Provider: Name, APIKey: "co-key", CustomHost: fake.BaseURL()},
		Request: req, Body: []byte(body), StrictOpenAI: strict,
		Header: http.Header{"X-Forwarded-Thing": {"kept"}},
	}
}

func TestChatAgainstFake(t *testing.T) {
	fake := providertest.NewCohere(t)
	c := New(provider.NewHTTPClient())
	resp, err := c.Chat(context.Background(), chatCall(t, fake, `{"model":"command-a-reasoning","messages":[{"role":"user","content":"Hi"}]}`, false))
	if err != nil {
		t.Fatal(err)
	}
	last := fake.Last()
	if last.Path != "/v2/chat" || last.Header.Get("Authorization") != "Bearer co-key" || last.Header.Get("X-Forwarded-Thing") != "kept" || last.Header.Get("Accept") != "application/json" {
		t.Errorf("upstream request: %s %v", last.Path, last.Header)
	}
	var out llm.ChatResponse
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		t.Fatal(err)
	}
	m := out.Choices[0].Message
	if *m.Content != "Hello from the fake Cohere." || m.ReasoningContent != providertest.CohereThinking || out.Model != "command-a-reasoning" {
		t.Errorf("answer = %s", resp.Body)
	}
	if resp.Usage != (llm.Usage{PromptTokens: 507, CompletionTokens: 10, TotalTokens: 517, CachedTokens: 448}) || resp.Model != "command-a-reasoning" {
		t.Errorf("usage %+v model %q", resp.Usage, resp.Model)
	}
	if resp.Header.Get("x-request-id") != "cohere-req-fake" {
		t.Errorf("provider headers not kept: %v", resp.Header)
	}
}

func TestStreamAgainstFake(t *testing.T) {
	fake := providertest.NewCohere(t)
	c := New(provider.NewHTTPClient())
	body := `{"model":"command-a","stream":true,"messages":[{"role":"user","content":"Weather?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`
	s, err := c.ChatStream(context.Background(), chatCall(t, fake, body, true))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var args strings.Builder
	var finish string
	var usage *llm.Usage
	for {
		ch, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ch.Model != "command-a" {
			t.Errorf("chunk model %q", ch.Model)
		}
		var cc llm.ChatChunk
		if err := json.Unmarshal(ch.Data, &cc); err != nil {
			t.Fatal(err)
		}
		if ch.UsageOnly {
			usage = ch.Usage
			continue
		}
		for _, tc := range cc.Choices[0].Delta.ToolCalls {
			args.WriteString(tc.Function.Arguments)
		}
		if f := cc.Choices[0].FinishReason; f != nil {
			finish = *f
		}
	}
	if args.String() != `{"city":"Paris"}` || finish != "tool_calls" || usage == nil || usage.TotalTokens != 517 {
		t.Errorf("args %q finish %q usage %+v", args.String(), finish, usage)
	}
	var sent map[string]any
	json.Unmarshal(fake.Last().Body, &sent)
	if sent["stream"] != true || fake.Last().Header.Get("Accept") != "text/event-stream" {
		t.Errorf("stream request: %s", fake.Last().Body)
	}
	if s.Header().Get("Content-Type") != "text/event-stream" {
		t.Errorf("stream headers %v", s.Header())
	}
}

func TestUpstreamErrors(t *testing.T) {
	fake := providertest.NewCohere(t)
	c := New(provider.NewHTTPClient())
	for _, tc := range []struct {
		model string
		want  int
	}{{"err-400", 400}, {"err-429", 429}, {"err-498", 401}, {"err-499", 408}, {"err-500", 500}} {
		for _, stream := range []bool{false, true} {
			call := chatCall(t, fake, `{"model":"`+tc.model+`","messages":[{"role":"user","content":"Hi"}]}`, true)
			var err error
			if stream {
				_, err = c.ChatStream(context.Background(), call)
			} else {
				_, err = c.Chat(context.Background(), call)
			}
			var ue *provider.UpstreamError
			if !errors.As(err, &ue) || ue.Status != tc.want {
				t.Fatalf("%s stream=%v: err = %v, want status %d", tc.model, stream, err, tc.want)
			}
			if d := provider.ParseErrorBody(ue.Body); d.Message != "fake upstream failure "+tc.model[4:] {
				t.Errorf("%s: message %q", tc.model, d.Message)
			}
			if tc.want == 429 && ue.Header.Get("Retry-After") != "1" {
				t.Errorf("429 without Retry-After: %v", ue.Header)
			}
		}
	}
}

func TestGenerationErrorNonStream(t *testing.T) {
	fake := providertest.NewCohere(t)
	_, err := New(provider.NewHTTPClient()).Chat(context.Background(), chatCall(t, fake, `{"model":"error-end","messages":[{"role":"user","content":"Hi"}]}`, true))
	var ue *provider.UpstreamError
	if !errors.As(err, &ue) || ue.Status != http.StatusBadGateway || !strings.Contains(provider.ParseErrorBody(ue.Body).Message, "finish_reason ERROR") {
		t.Fatalf("err = %v", err)
	}
}

func TestStreamFailures(t *testing.T) {
	fake := providertest.NewCohere(t)
	c := New(provider.NewHTTPClient())
	for _, tc := range []struct {
		model string
		check func(error) bool
	}{
		{"cut-after-2", func(err error) bool { return errors.Is(err, provider.ErrStreamBroken) }},
		{"error-end", func(err error) bool { var se *provider.StreamError; return errors.As(err, &se) }},
	} {
		s, err := c.ChatStream(context.Background(), chatCall(t, fake, `{"model":"`+tc.model+`","stream":true,"messages":[{"role":"user","content":"Hi"}]}`, true))
		if err != nil {
			t.Fatal(err)
		}
		var last error
		for n := 0; n < 100; n++ {
			if _, last = s.Next(); last != nil {
				break
			}
		}
		s.Close()
		if !tc.check(last) {
			t.Errorf("%s: stream ended with %v", tc.model, last)
		}
	}
}

func TestTimeoutAndUnreachable(t *testing.T) {
	fake := providertest.NewCohere(t)
	c := New(provider.NewHTTPClient())
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Chat(ctx, chatCall(t, fake, `{"model":"stall","messages":[{"role":"user","content":"Hi"}]}`, true)); !errors.Is(err, provider.ErrTimeout) {
		t.Errorf("stall: %v", err)
	}
	call := chatCall(t, fake, `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`, true)
	call.Target.CustomHost = "http://127.0.0.1:1/v2"
	if _, err := c.Chat(context.Background(), call); !errors.Is(err, provider.ErrUnreachable) {
		t.Errorf("unreachable: %v", err)
	}
}

func TestUnsupportedBeforeCall(t *testing.T) {
	fake := providertest.NewCohere(t)
	_, err := New(provider.NewHTTPClient()).Chat(context.Background(), chatCall(t, fake, `{"model":"m","n":3,"messages":[{"role":"user","content":"Hi"}]}`, true))
	var up *provider.UnsupportedParameterError
	if !errors.As(err, &up) || up.Param != "n" {
		t.Fatalf("err = %v", err)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("provider called %d times", n)
	}
}

func embedCall(t *testing.T, fake *providertest.Cohere, body string) *provider.EmbedCall {
	t.Helper()
	req, err := llm.DecodeEmbeddingRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return &provider.EmbedCall{Target: &provider.Target{Provider: Name, APIKey: "co-key", CustomHost: fake.BaseURL()}, Request: req, Body: []byte(body)}
}

func TestEmbed(t *testing.T) {
	schema := compileSchema(t, "embed-request.schema.json")
	fake := providertest.NewCohere(t)
	c := New(provider.NewHTTPClient())
	call := embedCall(t, fake, `{"model":"embed-v4.0","input":["a","b"],"dimensions":256,"user":"u","input_type":"search_query"}`)
	resp, err := c.Embed(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	var out llm.EmbeddingResponse
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		t.Fatal(err)
	}
	if out.Object != "list" || out.Model != "embed-v4.0" || len(out.Data) != 2 || out.Data[1].Index != 1 || out.Usage.PromptTokens != 8 || out.Usage.TotalTokens != 8 {
		t.Errorf("answer = %s", resp.Body)
	}
	if v := out.Data[1].Embedding.([]any); v[2] != 1.5 {
		t.Errorf("vector = %v", v)
	}
	if resp.Usage.PromptTokens != 8 || len(call.Dropped) != 1 || call.Dropped[0] != "user" {
		t.Errorf("usage %+v dropped %v", resp.Usage, call.Dropped)
	}
	last := fake.Last()
	validate(t, schema, last.Body)
	if last.Path != "/v2/embed" || last.Header.Get("Authorization") != "Bearer co-key" ||
		string(last.Body) != `{"model":"embed-v4.0","texts":["a","b"],"input_type":"search_query","embedding_types":["float"],"output_dimension":256}` {
		t.Errorf("upstream %s %s", last.Path, last.Body)
	}
}

func TestEmbedBatchesAndBase64(t *testing.T) {
	schema := compileSchema(t, "embed-request.schema.json")
	fake := providertest.NewCohere(t)
	c := New(provider.NewHTTPClient())
	texts := make([]string, 200)
	for i := range texts {
		texts[i] = "t"
	}
	in, _ := json.Marshal(map[string]any{"model": "embed-v4.0", "input": texts, "encoding_format": "base64"})
	resp, err := c.Embed(context.Background(), embedCall(t, fake, string(in)))
	if err != nil {
		t.Fatal(err)
	}
	reqs := fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d upstream calls, want 3 batches", len(reqs))
	}
	for _, r := range reqs {
		validate(t, schema, r.Body)
		if !strings.Contains(string(r.Body), `"input_type":"search_document"`) {
			t.Errorf("default input_type missing: %s", r.Body)
		}
	}
	var out struct {
		Data []struct {
			Index     int    `json:"index"`
			Embedding string `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Data) != 200 || out.Data[199].Index != 199 || out.Usage.PromptTokens != 800 {
		t.Fatalf("data %d, last index %d, usage %d", len(out.Data), out.Data[len(out.Data)-1].Index, out.Usage.PromptTokens)
	}
	// The 97th vector is the first of the second batch: [0.1,-0.2,0.5].
	raw, err := base64.StdEncoding.DecodeString(out.Data[96].Embedding)
	if err != nil || len(raw) != 12 {
		t.Fatalf("base64 %q: %v", out.Data[96].Embedding, err)
	}
	for i, want := range []float32{0.1, -0.2, 0.5} {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])); got != want {
			t.Errorf("float %d = %v, want %v", i, got, want)
		}
	}
}

func TestEmbedRejectsTokens(t *testing.T) {
	fake := providertest.NewCohere(t)
	_, err := New(provider.NewHTTPClient()).Embed(context.Background(), embedCall(t, fake, `{"model":"embed-v4.0","input":[1,2,3]}`))
	var up *provider.UnsupportedParameterError
	if !errors.As(err, &up) || up.Param != "input" {
		t.Fatalf("err = %v", err)
	}
	if _, err := New(provider.NewHTTPClient()).Embed(context.Background(), embedCall(t, fake, `{"model":"err-429","input":"x"}`)); err == nil {
		t.Error("upstream error not returned")
	}
}

func TestPrepareForward(t *testing.T) {
	c := New(http.DefaultClient)
	for _, tc := range []struct{ host, path, query, want string }{
		{"", "/rerank", "", "https://api.cohere.com/v2/rerank"},
		{"", "/models", "page_size=5", "https://api.cohere.com/v2/models?page_size=5"},
		{"http://127.0.0.1:9/v2/", "/tokenize", "", "http://127.0.0.1:9/v2/tokenize"},
	} {
		out, _ := http.NewRequest("POST", "http://placeholder", nil)
		out.Header.Set("Authorization", "Bearer client-secret")
		if err := c.PrepareForward(out, &provider.Target{Provider: Name, APIKey: "co-key", CustomHost: tc.host}, tc.path, tc.query); err != nil {
			t.Fatal(err)
		}
		if out.URL.String() != tc.want || out.Host != out.URL.Host || out.Header.Get("Authorization") != "Bearer co-key" {
			t.Errorf("%s: %s %v", tc.path, out.URL, out.Header)
		}
	}
	if c.Name() != "cohere" || !c.Native() {
		t.Error("name or native marker")
	}
}
