package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/ai-gateway/gateway/internal/provider/providertest"
)

// cohereClient is the OpenAI SDK pointed at the gateway, routed to a fake
// Cohere by provider header, Bearer key and custom host.
func cohereClient(h *harness, fake *providertest.Cohere, opts ...option.RequestOption) *openai.Client {
	base := []option.RequestOption{
		option.WithBaseURL(h.base + "/v1"),
		option.WithAPIKey("co-test-key"),
		option.WithHeader("x-gateway-api-key", h.key),
		option.WithHeader("x-gateway-provider", "cohere"),
		option.WithHeader("x-gateway-custom-host", fake.BaseURL()),
		option.WithMaxRetries(0),
	}
	c := openai.NewClient(append(base, opts...)...)
	return &c
}

func cohereRouting(h *harness, fake *providertest.Cohere) map[string]string {
	return map[string]string{
		"x-gateway-api-key":     h.key,
		"x-gateway-provider":    "cohere",
		"Authorization":         "Bearer co-test-key",
		"x-gateway-custom-host": fake.BaseURL(),
	}
}

// cohereUsage is providertest.CohereUsage normalised per PROVIDERS.md §0.7:
// prompt = tokens.input_tokens, completion = tokens.output_tokens.
const cohereTotal = 517.0

func checkCohereRecordUsage(t *testing.T, h *harness, id string) map[string]any {
	t.Helper()
	rec := h.logRecord(id)
	u, _ := rec["usage"].(map[string]any)
	if u["prompt_tokens"] != 507.0 || u["completion_tokens"] != 10.0 || u["total_tokens"] != cohereTotal {
		t.Errorf("record usage = %v, want Cohere's tokens usage 507/10/517", u)
	}
	if rec["provider"] != "cohere" {
		t.Errorf("record provider = %v", rec["provider"])
	}
	return rec
}

func TestCohereChat(t *testing.T) {
	h := start(t)
	fake := providertest.NewCohere(t)
	var raw *http.Response
	resp, err := cohereClient(h, fake).Chat.Completions.New(context.Background(), userParams("command-a-03-2025"), option.WithResponseInto(&raw))
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if got := resp.Choices[0].Message.Content; got != "Hello from the fake Cohere." || resp.Choices[0].FinishReason != "stop" {
		t.Errorf("answer = %s", resp.RawJSON())
	}
	if resp.Model != "command-a-03-2025" || resp.Object != "chat.completion" || !strings.HasPrefix(resp.ID, "chatcmpl-") {
		t.Errorf("envelope = %s", resp.RawJSON())
	}
	if resp.Usage.PromptTokens != 507 || resp.Usage.CompletionTokens != 10 || resp.Usage.TotalTokens != 517 || resp.Usage.PromptTokensDetails.CachedTokens != 448 {
		t.Errorf("usage = %+v", resp.Usage)
	}
	if strings.Contains(resp.RawJSON(), "reasoning_content") {
		t.Errorf("strict answer carries reasoning_content")
	}
	last := fake.Last()
	if last.Method != "POST" || last.Path != "/v2/chat" || last.Header.Get("Authorization") != "Bearer co-test-key" {
		t.Errorf("upstream %s %s %v", last.Method, last.Path, last.Header)
	}
	var sent map[string]any
	json.Unmarshal(last.Body, &sent)
	if msgs, _ := sent["messages"].([]any); len(msgs) != 2 || msgs[0].(map[string]any)["role"] != "system" {
		t.Errorf("upstream body = %s", last.Body)
	}
	for k := range last.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-gateway-") {
			t.Errorf("gateway header %s forwarded upstream", k)
		}
	}
	if raw.Header.Get("x-gateway-provider") != "cohere" {
		t.Errorf("response headers %v", raw.Header)
	}
	rec := checkCohereRecordUsage(t, h, raw.Header.Get("x-gateway-request-id"))
	if rec["model"] != "command-a-03-2025" || rec["status_code"] != 200.0 {
		t.Errorf("record = %v", rec)
	}
}

func TestCohereStreamIncludeUsage(t *testing.T) {
	h := start(t)
	fake := providertest.NewCohere(t)
	var raw *http.Response
	stream := cohereClient(h, fake).Chat.Completions.NewStreaming(context.Background(), streamParams("command-a-03-2025", true), option.WithResponseInto(&raw))
	var chunks []openai.ChatCompletionChunk
	var text strings.Builder
	for stream.Next() {
		ch := stream.Current()
		chunks = append(chunks, ch)
		if len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if text.String() != strings.Join(providertest.CohereStreamWords, "") {
		t.Errorf("text = %q", text.String())
	}
	if first := chunks[0]; first.Choices[0].Delta.Role != "assistant" {
		t.Errorf("first chunk = %s", first.RawJSON())
	}
	last := chunks[len(chunks)-1]
	if len(last.Choices) != 0 || last.Usage.TotalTokens != 517 || last.Usage.PromptTokens != 507 {
		t.Fatalf("last chunk = %s, want the usage chunk", last.RawJSON())
	}
	for _, ch := range chunks[:len(chunks)-1] {
		if !strings.Contains(ch.RawJSON(), `"usage":null`) {
			t.Errorf("chunk without usage:null: %s", ch.RawJSON())
		}
	}
	if fr := chunks[len(chunks)-2].Choices[0].FinishReason; fr != "stop" {
		t.Errorf("finish reason %q", fr)
	}
	checkCohereRecordUsage(t, h, raw.Header.Get("x-gateway-request-id"))
}

func TestCohereStreamWithoutIncludeUsage(t *testing.T) {
	h := start(t)
	fake := providertest.NewCohere(t)
	var raw *http.Response
	stream := cohereClient(h, fake).Chat.Completions.NewStreaming(context.Background(), streamParams("command-a-03-2025", false), option.WithResponseInto(&raw))
	n := 0
	for stream.Next() {
		ch := stream.Current()
		n++
		if len(ch.Choices) == 0 || strings.Contains(ch.RawJSON(), `"usage"`) {
			t.Errorf("client sees usage it did not ask for: %s", ch.RawJSON())
		}
	}
	if err := stream.Err(); err != nil || n < 3 {
		t.Fatalf("stream: %v after %d chunks", err, n)
	}
	checkCohereRecordUsage(t, h, raw.Header.Get("x-gateway-request-id"))
	// The raw framing ends with [DONE], which Cohere itself never sends.
	resp, body := h.do("POST", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, cohereRouting(h, fake))
	if resp.StatusCode != 200 || !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
		t.Errorf("raw stream %d: %s", resp.StatusCode, body)
	}
}

func TestCohereToolRoundTrip(t *testing.T) {
	h := start(t)
	fake := providertest.NewCohere(t)
	c := cohereClient(h, fake)
	p := userParams("command-a-03-2025")
	p.Tools = []openai.ChatCompletionToolUnionParam{weatherTool}
	first, err := c.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	calls := first.Choices[0].Message.ToolCalls
	if first.Choices[0].FinishReason != "tool_calls" || len(calls) != 1 || calls[0].ID != "get_weather_fake01" ||
		calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city":"Paris"}` {
		t.Fatalf("first answer = %s", first.RawJSON())
	}
	p.Messages = append(p.Messages, first.Choices[0].Message.ToParam(), openai.ToolMessage(`{"sky":"clear"}`, calls[0].ID))
	second, err := c.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if got := second.Choices[0].Message.Content; got != "It is sunny in Paris." {
		t.Errorf("second answer = %q", got)
	}
	var sent struct {
		Messages []map[string]any `json:"messages"`
		Tools    []map[string]any `json:"tools"`
	}
	json.Unmarshal(fake.Last().Body, &sent)
	if len(sent.Messages) != 4 || sent.Messages[3]["role"] != "tool" || sent.Messages[3]["tool_call_id"] != "get_weather_fake01" || sent.Messages[3]["content"] != `{"sky":"clear"}` {
		t.Errorf("upstream messages = %v", sent.Messages)
	}
	if tc, _ := sent.Messages[2]["tool_calls"].([]any); len(tc) != 1 {
		t.Errorf("assistant turn not replayed with its tool call: %v", sent.Messages[2])
	}
	if len(sent.Tools) != 1 || sent.Tools[0]["type"] != "function" {
		t.Errorf("upstream tools = %v", sent.Tools)
	}

	// The same call streamed, accumulated by the SDK.
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "command-a-03-2025", Messages: p.Messages[:2], Tools: p.Tools})
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	tc := acc.Choices[0].Message.ToolCalls
	if len(tc) != 1 || tc[0].ID != "get_weather_fake01" || tc[0].Function.Arguments != `{"city":"Paris"}` || acc.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("accumulated = %+v", acc.Choices[0])
	}
}

func TestCohereThinking(t *testing.T) {
	h := start(t)
	fake := providertest.NewCohere(t)
	for _, strict := range []bool{true, false} {
		var opts []option.RequestOption
		if !strict {
			opts = append(opts, option.WithHeader("x-gateway-strict-openai-compliance", "false"))
		}
		c := cohereClient(h, fake, opts...)
		resp, err := c.Chat.Completions.New(context.Background(), userParams("command-a-reasoning-08-2025"))
		if err != nil {
			t.Fatal(err)
		}
		var msg map[string]any
		json.Unmarshal([]byte(resp.Choices[0].Message.RawJSON()), &msg)
		if got, _ := msg["reasoning_content"].(string); (got == providertest.CohereThinking) == strict {
			t.Errorf("strict=%v: reasoning_content = %q", strict, got)
		}
		if _, ok := msg["content_blocks"]; ok == strict {
			t.Errorf("strict=%v: content_blocks present = %v", strict, ok)
		}
		if resp.Choices[0].Message.Content != "Hello from the fake Cohere." {
			t.Errorf("content = %q", resp.Choices[0].Message.Content)
		}

		stream := c.Chat.Completions.NewStreaming(context.Background(), streamParams("command-a-reasoning-08-2025", false))
		var reasoning, text strings.Builder
		for stream.Next() {
			ch := stream.Current()
			if len(ch.Choices) == 0 {
				continue
			}
			var d map[string]any
			json.Unmarshal([]byte(ch.Choices[0].Delta.RawJSON()), &d)
			if s, ok := d["reasoning_content"].(string); ok {
				reasoning.WriteString(s)
			}
			text.WriteString(ch.Choices[0].Delta.Content)
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if (reasoning.String() == providertest.CohereThinking) == strict || (strict && reasoning.Len() > 0) {
			t.Errorf("strict=%v: streamed reasoning = %q", strict, reasoning.String())
		}
		if text.String() != "Hello from the fake Cohere." {
			t.Errorf("streamed text = %q", text.String())
		}
	}
	// reasoning_effort reaches Cohere as thinking.
	p := userParams("command-a-reasoning-08-2025")
	p.ReasoningEffort = "low"
	if _, err := cohereClient(h, fake).Chat.Completions.New(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(fake.Last().Body), `"thinking":{"type":"enabled","token_budget":1024}`) {
		t.Errorf("upstream body = %s", fake.Last().Body)
	}
}

func TestCohereUpstreamErrors(t *testing.T) {
	h := start(t)
	fake := providertest.NewCohere(t)
	for _, tc := range []struct {
		model  string
		status int
		typ    string
	}{
		{"err-400", 400, "invalid_request_error"},
		{"err-429", 429, "rate_limit_error"},
		{"err-498", 401, "authentication_error"},
		{"err-500", 500, "server_error"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			_, err := cohereClient(h, fake).Chat.Completions.New(context.Background(), userParams(tc.model))
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status {
				t.Fatalf("err = %v, want status %d", err, tc.status)
			}
			if apiErr.Message != "fake upstream failure "+tc.model[4:] || apiErr.Type != tc.typ {
				t.Errorf("error = %s", apiErr.RawJSON())
			}
			resp, body := h.do("POST", "/v1/chat/completions", `{"model":"`+tc.model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`, cohereRouting(h, fake))
			if resp.StatusCode != tc.status || decode(t, body)["provider"] != "cohere" {
				t.Errorf("stream: status %d body %s", resp.StatusCode, body)
			}
			if tc.status == 429 && resp.Header.Get("Retry-After") != "1" {
				t.Errorf("429 without Retry-After: %v", resp.Header)
			}
		})
	}
	// A generation that Cohere ends with finish_reason ERROR is a 502.
	resp, body := h.do("POST", "/v1/chat/completions", `{"model":"error-end","messages":[{"role":"user","content":"hi"}]}`, cohereRouting(h, fake))
	if resp.StatusCode != 502 || !strings.Contains(string(errorField(t, body, "message").(string)), "finish_reason ERROR") {
		t.Errorf("error-end: %d %s", resp.StatusCode, body)
	}
}

func TestCohereStreamBreaks(t *testing.T) {
	h := start(t)
	fake := providertest.NewCohere(t)
	for _, model := range []string{"cut-after-2", "error-end"} {
		req, _ := http.NewRequest("POST", h.base+"/v1/chat/completions", strings.NewReader(`{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		for k, v := range cohereRouting(h, fake) {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), "[DONE]") || !strings.Contains(string(body), `data: {"error"`) {
			t.Errorf("%s: body = %s", model, body)
		}
	}
}

func TestCohereUnsupportedAndNative(t *testing.T) {
	h := start(t)
	fake := providertest.NewCohere(t)
	resp, body := h.do("POST", "/v1/chat/completions", `{"model":"m","n":2,"messages":[{"role":"user","content":"hi"}]}`, cohereRouting(h, fake))
	if resp.StatusCode != 400 || errorField(t, body, "code") != "unsupported_parameter" || errorField(t, body, "param") != "n" {
		t.Errorf("n=2: %d %s", resp.StatusCode, body)
	}
	resp, body = h.do("POST", "/v1/completions", `{"model":"m","prompt":"hi"}`, cohereRouting(h, fake))
	if resp.StatusCode != 400 || errorField(t, body, "code") != "unsupported_endpoint" {
		t.Errorf("completions: %d %s", resp.StatusCode, body)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("provider called %d times", n)
	}
	// Other paths pass through to Cohere's v2 API with the Bearer key.
	resp, body = h.do("POST", "/v1/rerank", `{"model":"rerank-v3.5","query":"q","documents":["a"]}`, cohereRouting(h, fake))
	if resp.StatusCode != 200 || decode(t, body)["path"] != "/v2/rerank" || decode(t, body)["authorization"] != "Bearer co-test-key" {
		t.Errorf("pass-through: %d %s", resp.StatusCode, body)
	}
}

func TestCohereEmbeddings(t *testing.T) {
	h := start(t)
	fake := providertest.NewCohere(t)
	var raw *http.Response
	emb, err := cohereClient(h, fake).Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model: "embed-v4.0",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}},
	}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(emb.Data) != 2 || emb.Data[1].Embedding[2] != 1.5 || emb.Usage.PromptTokens != 8 || emb.Model != "embed-v4.0" {
		t.Errorf("embeddings = %s", emb.RawJSON())
	}
	last := fake.Last()
	if last.Path != "/v2/embed" || !strings.Contains(string(last.Body), `"input_type":"search_document"`) {
		t.Errorf("upstream %s %s", last.Path, last.Body)
	}
	if rec := h.logRecord(raw.Header.Get("x-gateway-request-id")); rec["usage"].(map[string]any)["prompt_tokens"] != 8.0 {
		t.Errorf("record = %v", rec)
	}
}
