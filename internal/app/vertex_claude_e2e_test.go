package app_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"github.com/ai-gateway/gateway/internal/provider/providertest"
)

// Claude on Vertex AI: slug vertex-ai, a claude-… model, the Vertex
// service-account token, Anthropic's Messages API at rawPredict and
// streamRawPredict.

const vertexClaudeModel = "claude-sonnet-4-5@20250929"

const vertexClaudePath = "/v1/projects/test-project/locations/us-east5/publishers/anthropic/models/"

func vertexClaudeHeaders(h *harness, fake *providertest.GoogleVertexClaude) map[string]string {
	return map[string]string{
		"x-gateway-api-key":                     h.key,
		"x-gateway-provider":                    "vertex-ai",
		"x-gateway-custom-host":                 fake.VertexHost(),
		"x-gateway-vertex-project-id":           "test-project",
		"x-gateway-vertex-region":               "us-east5",
		"x-gateway-vertex-service-account-json": fake.ServiceAccountJSON(),
	}
}

// vertexClaudeClient is the OpenAI SDK routed to the fake Vertex AI with
// a service-account key whose token_uri is the fake's token endpoint.
func vertexClaudeClient(h *harness, fake *providertest.GoogleVertexClaude, opts ...option.RequestOption) *openai.Client {
	base := []option.RequestOption{
		option.WithBaseURL(h.base + "/v1"),
		option.WithAPIKey("unused-with-a-service-account"),
		option.WithMaxRetries(0),
	}
	for k, v := range vertexClaudeHeaders(h, fake) {
		base = append(base, option.WithHeader(k, v))
	}
	c := openai.NewClient(append(base, opts...)...)
	return &c
}

// checkVertexClaudeUpstream checks what Vertex received: the model and
// method in the URL, the bearer token, no Anthropic credential headers,
// and a Messages body without model and with Vertex's anthropic_version.
func checkVertexClaudeUpstream(t *testing.T, got providertest.Received, model, method string, stream bool) gjson.Result {
	t.Helper()
	if got.Method != "POST" || got.Path != vertexClaudePath+model+":"+method || got.Query != "" {
		t.Errorf("upstream %s %s?%s, want %s", got.Method, got.Path, got.Query, vertexClaudePath+model+":"+method)
	}
	if got.Header.Get("Authorization") != "Bearer ya29.fake-1" || got.Header.Get("x-api-key") != "" || got.Header.Get("anthropic-version") != "" || got.Header.Get("x-goog-api-key") != "" {
		t.Errorf("upstream headers = %v", got.Header)
	}
	for k := range got.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-gateway-") {
			t.Errorf("gateway header %s forwarded upstream", k)
		}
	}
	body := gjson.ParseBytes(got.Body)
	if body.Get("model").Exists() || body.Get("anthropic_version").String() != "vertex-2023-10-16" || body.Get("stream").Bool() != stream {
		t.Errorf("upstream body = %s", got.Body)
	}
	return body
}

// checkVertexClaudeUsage checks the log record: provider vertex-ai and the
// fake's Anthropic usage normalised per PROVIDERS.md §0.7.
func checkVertexClaudeUsage(t *testing.T, h *harness, id string, completion int) map[string]any {
	t.Helper()
	rec := h.logRecord(id)
	u, _ := rec["usage"].(map[string]any)
	if u["prompt_tokens"] != float64(anthropicPrompt) || u["completion_tokens"] != float64(completion) || u["total_tokens"] != float64(anthropicPrompt+completion) ||
		u["cached_tokens"] != float64(providertest.AnthropicCacheReadTokens) || u["cache_write_tokens"] != float64(providertest.AnthropicCacheWriteTokens) {
		t.Errorf("record usage = %v, want prompt %d, completion %d", u, anthropicPrompt, completion)
	}
	if rec["provider"] != "vertex-ai" || rec["is_success"] != true {
		t.Errorf("record = %v", rec)
	}
	return rec
}

// TestVertexClaudeChat: a plain answer, translated from Anthropic's, with
// one token serving Claude and Gemini requests alike.
func TestVertexClaudeChat(t *testing.T) {
	h := start(t)
	fake := providertest.NewGoogleVertexClaude(t)
	c := vertexClaudeClient(h, fake)
	var raw *http.Response
	resp, err := c.Chat.Completions.New(context.Background(), userParams(vertexClaudeModel), option.WithResponseInto(&raw))
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if got := resp.Choices[0].Message.Content; got != strings.Join(providertest.AnthropicWords, "") || resp.Choices[0].FinishReason != "stop" {
		t.Errorf("answer = %s", resp.RawJSON())
	}
	if resp.ID != "chatcmpl-msg_01FakeMessage" || resp.Object != "chat.completion" || resp.Model != vertexClaudeModel {
		t.Errorf("envelope = %s", resp.RawJSON())
	}
	if u := resp.Usage; u.PromptTokens != anthropicPrompt || u.CompletionTokens != providertest.AnthropicTextOutputTokens ||
		u.TotalTokens != anthropicPrompt+providertest.AnthropicTextOutputTokens || u.PromptTokensDetails.CachedTokens != providertest.AnthropicCacheReadTokens {
		t.Errorf("usage = %s", resp.Usage.RawJSON())
	}
	if strings.Contains(resp.RawJSON(), "reasoning_content") || strings.Contains(resp.RawJSON(), "content_blocks") {
		t.Errorf("non-OpenAI fields with strict compliance on: %s", resp.RawJSON())
	}
	if raw.Header.Get("x-gateway-provider") != "vertex-ai" {
		t.Errorf("response headers = %v", raw.Header)
	}
	body := checkVertexClaudeUpstream(t, fake.Last(), vertexClaudeModel, "rawPredict", false)
	if body.Get("system.0.text").String() != "You are terse." || body.Get("messages.0.content.0.text").String() != "Say hello." || body.Get("max_tokens").Int() != 32000 {
		t.Errorf("upstream body = %s", body.Raw)
	}
	rec := checkVertexClaudeUsage(t, h, raw.Header.Get("x-gateway-request-id"), providertest.AnthropicTextOutputTokens)
	if rec["model"] != vertexClaudeModel || rec["model_served"] != vertexClaudeModel {
		t.Errorf("record = %v", rec)
	}

	// Gemini on the same Vertex, and Claude again: no new token.
	if _, err := c.Chat.Completions.New(context.Background(), userParams("gemini-2.5-flash")); err != nil {
		t.Fatal(err)
	}
	if p := fake.Google.Last().Path; p != "/v1/projects/test-project/locations/us-east5/publishers/google/models/gemini-2.5-flash:generateContent" {
		t.Errorf("gemini upstream %s", p)
	}
	if _, err := c.Chat.Completions.New(context.Background(), userParams(vertexClaudeModel)); err != nil {
		t.Fatal(err)
	}
	if n := fake.TokenFetches(); n != 1 {
		t.Errorf("token fetched %d times for 3 requests", n)
	}

	// Vertex settings are still required for Claude.
	_, err = vertexClaudeClient(h, fake, option.WithHeaderDel("x-gateway-vertex-region")).Chat.Completions.New(context.Background(), userParams(vertexClaudeModel))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "x-gateway-vertex-region" {
		t.Errorf("no region: %v", err)
	}
	if n := len(fake.Requests()); n != 2 {
		t.Errorf("%d Claude requests upstream, want 2", n)
	}
}

// TestVertexClaudeStream: streamRawPredict, translated chunk by chunk;
// with include_usage the usage chunk comes last and every other chunk has
// usage null; without it no usage is visible.
func TestVertexClaudeStream(t *testing.T) {
	h := start(t)
	fake := providertest.NewGoogleVertexClaude(t)
	c := vertexClaudeClient(h, fake)

	t.Run("include_usage", func(t *testing.T) {
		var raw *http.Response
		stream := c.Chat.Completions.NewStreaming(context.Background(), streamParams(vertexClaudeModel, true), option.WithResponseInto(&raw))
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
		if len(chunks) < 3 {
			t.Fatalf("%d chunks", len(chunks))
		}
		if text.String() != strings.Join(providertest.AnthropicWords, "") {
			t.Errorf("text = %q", text.String())
		}
		if first := chunks[0]; first.Choices[0].Delta.Role != "assistant" || !strings.Contains(first.RawJSON(), `"content":""`) {
			t.Errorf("first chunk = %s", first.RawJSON())
		}
		last := chunks[len(chunks)-1]
		if len(last.Choices) != 0 || last.Usage.PromptTokens != anthropicPrompt || last.Usage.CompletionTokens != providertest.AnthropicTextOutputTokens ||
			last.Usage.TotalTokens != anthropicPrompt+providertest.AnthropicTextOutputTokens {
			t.Fatalf("last chunk = %s, want the usage chunk", last.RawJSON())
		}
		for _, ch := range chunks[:len(chunks)-1] {
			if !strings.Contains(ch.RawJSON(), `"usage":null`) {
				t.Errorf("chunk without usage:null: %s", ch.RawJSON())
			}
			if ch.ID != "chatcmpl-msg_01FakeMessage" || ch.Model != vertexClaudeModel {
				t.Errorf("chunk id %q model %q", ch.ID, ch.Model)
			}
		}
		if fin := chunks[len(chunks)-2]; fin.Choices[0].FinishReason != "stop" {
			t.Errorf("finish chunk = %s", fin.RawJSON())
		}
		up := fake.Last()
		checkVertexClaudeUpstream(t, up, vertexClaudeModel, "streamRawPredict", true)
		if up.Header.Get("Accept") != "text/event-stream" {
			t.Errorf("Accept = %q", up.Header.Get("Accept"))
		}
		rec := checkVertexClaudeUsage(t, h, raw.Header.Get("x-gateway-request-id"), providertest.AnthropicTextOutputTokens)
		if rec["is_streaming"] != true || rec["ttft_ms"] == nil {
			t.Errorf("record = %v", rec)
		}
	})

	t.Run("without include_usage", func(t *testing.T) {
		resp, body := h.do("POST", "/v1/chat/completions", `{"model":"`+vertexClaudeModel+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`, vertexClaudeHeaders(h, fake))
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		if strings.Contains(string(body), `"usage"`) || !strings.HasSuffix(strings.TrimSpace(string(body)), "data: [DONE]") {
			t.Errorf("stream = %s", body)
		}
		checkVertexClaudeUsage(t, h, resp.Header.Get("x-gateway-request-id"), providertest.AnthropicTextOutputTokens)
	})

	if n := fake.TokenFetches(); n != 1 {
		t.Errorf("token fetched %d times for 2 streams", n)
	}
}

// TestVertexClaudeToolRoundTrip: a tool call, then the tool's result, then
// the answer; and the first call streamed, accumulated by the SDK.
func TestVertexClaudeToolRoundTrip(t *testing.T) {
	h := start(t)
	fake := providertest.NewGoogleVertexClaude(t)
	c := vertexClaudeClient(h, fake)
	p := userParams(vertexClaudeModel)
	p.Tools = []openai.ChatCompletionToolUnionParam{weatherTool}
	p.ParallelToolCalls = openai.Bool(false)
	var raw *http.Response
	first, err := c.Chat.Completions.New(context.Background(), p, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	calls := first.Choices[0].Message.ToolCalls
	if first.Choices[0].FinishReason != "tool_calls" || len(calls) != 1 || calls[0].ID != providertest.AnthropicToolUseID ||
		calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city":"Paris"}` || first.Choices[0].Message.Content != "I'll check the weather." {
		t.Fatalf("first answer = %s", first.RawJSON())
	}
	sent := checkVertexClaudeUpstream(t, fake.Last(), vertexClaudeModel, "rawPredict", false)
	if sent.Get("tools.0.name").String() != "get_weather" || sent.Get("tools.0.input_schema.required.0").String() != "city" || !sent.Get("tool_choice.disable_parallel_tool_use").Bool() {
		t.Errorf("upstream tools = %s", sent.Raw)
	}
	checkVertexClaudeUsage(t, h, raw.Header.Get("x-gateway-request-id"), providertest.AnthropicToolOutputTokens)

	p.Messages = append(p.Messages, first.Choices[0].Message.ToParam(), openai.ToolMessage(`{"sky":"clear"}`, calls[0].ID))
	second, err := c.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatalf("tool result turn: %v", err)
	}
	if got := second.Choices[0].Message.Content; got != "It is sunny in Paris." || second.Choices[0].FinishReason != "stop" {
		t.Errorf("second answer = %s", second.RawJSON())
	}
	sent = checkVertexClaudeUpstream(t, fake.Last(), vertexClaudeModel, "rawPredict", false)
	if sent.Get("messages.1.content.1.type").String() != "tool_use" || sent.Get("messages.1.content.1.input.city").String() != "Paris" ||
		sent.Get("messages.2.content.0.tool_use_id").String() != calls[0].ID || sent.Get("messages.2.content.0.content").String() != `{"sky":"clear"}` {
		t.Errorf("upstream messages = %s", sent.Get("messages").Raw)
	}

	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: vertexClaudeModel, Messages: p.Messages[:2], Tools: p.Tools})
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	tc := acc.Choices[0].Message.ToolCalls
	if len(tc) != 1 || tc[0].ID != providertest.AnthropicToolUseID || tc[0].Function.Arguments != `{"city":"Paris"}` || acc.Choices[0].FinishReason != "tool_calls" ||
		acc.Choices[0].Message.Content != "I'll check the weather." {
		t.Errorf("accumulated = %+v", acc.Choices[0])
	}
	checkVertexClaudeUpstream(t, fake.Last(), vertexClaudeModel, "streamRawPredict", true)
	if n := fake.TokenFetches(); n != 1 {
		t.Errorf("token fetched %d times", n)
	}
}

// TestVertexClaudeUpstreamErrors: Anthropic's errors from the model and
// Google's from Vertex itself map to OpenAI errors naming vertex-ai, plain
// and streamed; a rate limit keeps Retry-After; an in-stream error event
// ends the stream with an error event.
func TestVertexClaudeUpstreamErrors(t *testing.T) {
	h := start(t)
	fake := providertest.NewGoogleVertexClaude(t)
	for _, tc := range []struct {
		model   string
		status  int
		typ     string
		message string
	}{
		{"err-400", 400, "invalid_request_error", "fake upstream failure 400"},
		{"err-429", 429, "rate_limit_error", "fake upstream failure 429"},
		{"err-529", 503, "server_error", "Overloaded"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			model := providertest.VertexClaudeFakePrefix + tc.model
			_, err := vertexClaudeClient(h, fake).Chat.Completions.New(context.Background(), userParams(model))
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status {
				t.Fatalf("err = %v, want status %d", err, tc.status)
			}
			if apiErr.Message != tc.message || apiErr.Type != tc.typ {
				t.Errorf("error = %s", apiErr.RawJSON())
			}
			checkVertexClaudeUpstream(t, fake.Last(), model, "rawPredict", false)
			resp, body := h.do("POST", "/v1/chat/completions", `{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`, vertexClaudeHeaders(h, fake))
			if resp.StatusCode != tc.status || decode(t, body)["provider"] != "vertex-ai" || errorField(t, body, "message") != tc.message {
				t.Errorf("stream: status %d body %s", resp.StatusCode, body)
			}
			checkVertexClaudeUpstream(t, fake.Last(), model, "streamRawPredict", true)
			if tc.status == 429 && resp.Header.Get("Retry-After") != "7" {
				t.Errorf("429 without the provider's Retry-After: %v", resp.Header)
			}
			rec := h.logRecord(resp.Header.Get("x-gateway-request-id"))
			if rec["status_code"] != float64(tc.status) || rec["is_success"] != false || rec["provider"] != "vertex-ai" {
				t.Errorf("record = %v", rec)
			}
		})
	}

	t.Run("vertex refuses the token", func(t *testing.T) {
		_, err := vertexClaudeClient(h, fake, option.WithHeaderDel("x-gateway-vertex-service-account-json"), option.WithAPIKey("ya29.revoked")).
			Chat.Completions.New(context.Background(), userParams(vertexClaudeModel))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || !strings.Contains(apiErr.Message, "invalid authentication credentials") {
			t.Errorf("err = %v", err)
		}
		if got := fake.Last().Header.Get("Authorization"); got != "Bearer ya29.revoked" {
			t.Errorf("Authorization = %q", got)
		}
	})

	t.Run("in-stream error event", func(t *testing.T) {
		req, _ := http.NewRequest("POST", h.base+"/v1/chat/completions",
			strings.NewReader(`{"model":"`+providertest.VertexClaudeFakePrefix+`error-event","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		for k, v := range vertexClaudeHeaders(h, fake) {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || strings.Contains(string(body), "[DONE]") || !strings.Contains(string(body), `data: {"error"`) || !strings.Contains(string(body), "Overloaded") {
			t.Errorf("status %d body = %s", resp.StatusCode, body)
		}
		if rec := h.logRecord(resp.Header.Get("x-gateway-request-id")); rec["is_success"] != false || rec["status_code"] != 502.0 {
			t.Errorf("record = %v", rec)
		}
	})

	if n := fake.TokenFetches(); n != 1 {
		t.Errorf("token fetched %d times", n)
	}
}
