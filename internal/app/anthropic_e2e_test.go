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
	"github.com/tidwall/gjson"

	"github.com/ai-gateway/gateway/internal/provider/providertest"
)

// anthropicClient is the OpenAI SDK pointed at the gateway, routed to a fake
// Anthropic by provider header, Bearer key and custom host.
func anthropicClient(h *harness, fake *providertest.Anthropic, opts ...option.RequestOption) *openai.Client {
	base := []option.RequestOption{
		option.WithBaseURL(h.base + "/v1"),
		option.WithAPIKey("sk-ant-test"),
		option.WithHeader("x-gateway-api-key", h.key),
		option.WithHeader("x-gateway-provider", "anthropic"),
		option.WithHeader("x-gateway-custom-host", fake.BaseURL()),
		option.WithMaxRetries(0),
	}
	c := openai.NewClient(append(base, opts...)...)
	return &c
}

func anthropicRouting(h *harness, fake *providertest.Anthropic) map[string]string {
	return map[string]string{
		"x-gateway-api-key":     h.key,
		"x-gateway-provider":    "anthropic",
		"Authorization":         "Bearer sk-ant-test",
		"x-gateway-custom-host": fake.BaseURL(),
	}
}

// anthropicPrompt is the fake's usage normalised per PROVIDERS.md §0.7:
// input + cache writes + cache reads.
const anthropicPrompt = providertest.AnthropicInputTokens + providertest.AnthropicCacheWriteTokens + providertest.AnthropicCacheReadTokens

// checkAnthropicUsage checks the log record's usage against the fake's,
// normalised: prompt includes the cache, cached = cache reads, cache
// writes kept, completion = output tokens.
func checkAnthropicUsage(t *testing.T, h *harness, id string, completion int) map[string]any {
	t.Helper()
	rec := h.logRecord(id)
	u, _ := rec["usage"].(map[string]any)
	if u["prompt_tokens"] != float64(anthropicPrompt) || u["completion_tokens"] != float64(completion) || u["total_tokens"] != float64(anthropicPrompt+completion) ||
		u["cached_tokens"] != float64(providertest.AnthropicCacheReadTokens) || u["cache_write_tokens"] != float64(providertest.AnthropicCacheWriteTokens) {
		t.Errorf("record usage = %v, want prompt %d (cached %d, written %d), completion %d", u, anthropicPrompt, providertest.AnthropicCacheReadTokens, providertest.AnthropicCacheWriteTokens, completion)
	}
	if rec["provider"] != "anthropic" || rec["is_success"] != true {
		t.Errorf("record = %v", rec)
	}
	return rec
}

func TestAnthropicChat(t *testing.T) {
	h := start(t)
	fake := providertest.NewAnthropic(t)
	var raw *http.Response
	resp, err := anthropicClient(h, fake, option.WithHeader("x-gateway-anthropic-beta", "token-efficient-tools-2025-02-19")).Chat.Completions.New(context.Background(),
		userParams("claude-sonnet-4-5"), option.WithResponseInto(&raw))
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if got := resp.Choices[0].Message.Content; got != strings.Join(providertest.AnthropicWords, "") || resp.Choices[0].FinishReason != "stop" {
		t.Errorf("answer = %s", resp.RawJSON())
	}
	if resp.ID != "chatcmpl-msg_01FakeMessage" || resp.Object != "chat.completion" || resp.Model != "claude-sonnet-4-5" {
		t.Errorf("envelope = %s", resp.RawJSON())
	}
	if u := resp.Usage; u.PromptTokens != anthropicPrompt || u.CompletionTokens != providertest.AnthropicTextOutputTokens ||
		u.TotalTokens != anthropicPrompt+providertest.AnthropicTextOutputTokens || u.PromptTokensDetails.CachedTokens != providertest.AnthropicCacheReadTokens {
		t.Errorf("usage = %s", resp.Usage.RawJSON())
	}
	if strings.Contains(resp.RawJSON(), "reasoning_content") || strings.Contains(resp.RawJSON(), "content_blocks") {
		t.Errorf("non-OpenAI fields with strict compliance on: %s", resp.RawJSON())
	}
	if raw.Header.Get("x-gateway-provider") != "anthropic" || raw.Header.Get("request-id") != "req_fake01" {
		t.Errorf("response headers = %v", raw.Header)
	}
	up := fake.Last()
	if up.Path != "/v1/messages" || up.Header.Get("x-api-key") != "sk-ant-test" || up.Header.Get("anthropic-version") != "2023-06-01" ||
		up.Header.Get("anthropic-beta") != "token-efficient-tools-2025-02-19" || up.Header.Get("Authorization") != "" {
		t.Errorf("upstream %s headers %v", up.Path, up.Header)
	}
	for k := range up.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-gateway-") {
			t.Errorf("gateway header %s forwarded upstream", k)
		}
	}
	body := gjson.ParseBytes(up.Body)
	if body.Get("system.0.text").String() != "You are terse." || body.Get("messages.0.content.0.text").String() != "Say hello." || body.Get("max_tokens").Int() != 32000 {
		t.Errorf("upstream body = %s", up.Body)
	}
	rec := checkAnthropicUsage(t, h, raw.Header.Get("x-gateway-request-id"), providertest.AnthropicTextOutputTokens)
	if rec["model"] != "claude-sonnet-4-5" || rec["model_served"] != "claude-sonnet-4-5" {
		t.Errorf("record = %v", rec)
	}
}

func TestAnthropicStreamWithIncludeUsage(t *testing.T) {
	h := start(t)
	fake := providertest.NewAnthropic(t)
	var raw *http.Response
	stream := anthropicClient(h, fake).Chat.Completions.NewStreaming(context.Background(), streamParams("claude-sonnet-4-5", true), option.WithResponseInto(&raw))
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
		if ch.ID != "chatcmpl-msg_01FakeMessage" {
			t.Errorf("chunk id %q", ch.ID)
		}
	}
	if fin := chunks[len(chunks)-2]; fin.Choices[0].FinishReason != "stop" {
		t.Errorf("finish chunk = %s", fin.RawJSON())
	}
	if gjson.GetBytes(fake.Last().Body, "stream").Bool() != true || fake.Last().Header.Get("Accept") != "text/event-stream" {
		t.Errorf("upstream request %v %s", fake.Last().Header, fake.Last().Body)
	}
	rec := checkAnthropicUsage(t, h, raw.Header.Get("x-gateway-request-id"), providertest.AnthropicTextOutputTokens)
	if rec["is_streaming"] != true || rec["ttft_ms"] == nil {
		t.Errorf("record = %v", rec)
	}
}

func TestAnthropicStreamWithoutIncludeUsage(t *testing.T) {
	h := start(t)
	fake := providertest.NewAnthropic(t)
	var raw *http.Response
	stream := anthropicClient(h, fake).Chat.Completions.NewStreaming(context.Background(), streamParams("claude-sonnet-4-5", false), option.WithResponseInto(&raw))
	var text strings.Builder
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) == 0 {
			t.Errorf("client got a usage chunk it did not ask for: %s", ch.RawJSON())
			continue
		}
		if strings.Contains(ch.RawJSON(), `"usage"`) {
			t.Errorf("chunk carries a usage field the client did not ask for: %s", ch.RawJSON())
		}
		text.WriteString(ch.Choices[0].Delta.Content)
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if text.String() != strings.Join(providertest.AnthropicWords, "") {
		t.Errorf("text = %q", text.String())
	}
	if raw.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("content type %q", raw.Header.Get("Content-Type"))
	}
	checkAnthropicUsage(t, h, raw.Header.Get("x-gateway-request-id"), providertest.AnthropicTextOutputTokens)
}

func TestAnthropicToolRoundTrip(t *testing.T) {
	h := start(t)
	fake := providertest.NewAnthropic(t)
	c := anthropicClient(h, fake)
	p := userParams("claude-sonnet-4-5")
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
	sent := gjson.ParseBytes(fake.Last().Body)
	if sent.Get("tools.0.name").String() != "get_weather" || sent.Get("tools.0.input_schema.required.0").String() != "city" || !sent.Get("tool_choice.disable_parallel_tool_use").Bool() {
		t.Errorf("upstream tools = %s", fake.Last().Body)
	}
	checkAnthropicUsage(t, h, raw.Header.Get("x-gateway-request-id"), providertest.AnthropicToolOutputTokens)

	p.Messages = append(p.Messages, first.Choices[0].Message.ToParam(), openai.ToolMessage(`{"sky":"clear"}`, calls[0].ID))
	second, err := c.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatalf("tool result turn: %v", err)
	}
	if got := second.Choices[0].Message.Content; got != "It is sunny in Paris." {
		t.Errorf("second answer = %q", got)
	}
	sent = gjson.ParseBytes(fake.Last().Body)
	if sent.Get("messages.1.content.1.type").String() != "tool_use" || sent.Get("messages.1.content.1.input.city").String() != "Paris" ||
		sent.Get("messages.2.content.0.tool_use_id").String() != calls[0].ID || sent.Get("messages.2.content.0.content").String() != `{"sky":"clear"}` {
		t.Errorf("upstream messages = %s", sent.Get("messages").Raw)
	}

	// The first call streamed, accumulated by the SDK.
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "claude-sonnet-4-5", Messages: p.Messages[:2], Tools: p.Tools})
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
}

// TestAnthropicThinking: with strict compliance off the answer carries
// reasoning_content and content_blocks (the thinking block with its
// signature); sending the blocks back lets the tool-use continuation keep
// thinking on (the fake rejects it otherwise). With strict compliance on
// neither field appears and the continuation runs with thinking off.
func TestAnthropicThinking(t *testing.T) {
	h := start(t)
	fake := providertest.NewAnthropic(t)
	p := userParams("claude-sonnet-4-5")
	p.Tools = []openai.ChatCompletionToolUnionParam{weatherTool}
	p.ReasoningEffort = "low"
	lax := anthropicClient(h, fake, option.WithHeader("x-gateway-strict-openai-compliance", "false"))

	t.Run("plain", func(t *testing.T) {
		var raw *http.Response
		first, err := lax.Chat.Completions.New(context.Background(), p, option.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		msg := gjson.Get(first.RawJSON(), "choices.0.message")
		if msg.Get("reasoning_content").String() != providertest.AnthropicThinking {
			t.Errorf("reasoning_content missing: %s", msg.Raw)
		}
		blocks := msg.Get("content_blocks")
		if blocks.Get("0.type").String() != "thinking" || blocks.Get("0.signature").String() != providertest.AnthropicSignature {
			t.Fatalf("content_blocks = %s", blocks.Raw)
		}
		if th := gjson.GetBytes(fake.Last().Body, "thinking"); th.Get("type").String() != "enabled" || th.Get("budget_tokens").Int() != 1024 {
			t.Errorf("upstream thinking = %s", th.Raw)
		}
		checkAnthropicUsage(t, h, raw.Header.Get("x-gateway-request-id"), providertest.AnthropicToolOutputTokens+providertest.AnthropicThinkingTokens)

		calls := first.Choices[0].Message.ToolCalls
		q := p
		q.Messages = append(append([]openai.ChatCompletionMessageParamUnion{}, p.Messages...), first.Choices[0].Message.ToParam(), openai.ToolMessage("18C", calls[0].ID))
		second, err := lax.Chat.Completions.New(context.Background(), q, option.WithJSONSet("messages.2.content_blocks", decodeAny(t, blocks.Raw)))
		if err != nil {
			t.Fatalf("continuation with the blocks sent back: %v", err)
		}
		if second.Choices[0].Message.Content != "It is sunny in Paris." {
			t.Errorf("continuation = %s", second.RawJSON())
		}
		sent := gjson.ParseBytes(fake.Last().Body)
		if sent.Get("thinking.type").String() != "enabled" || sent.Get("messages.1.content.0.signature").String() != providertest.AnthropicSignature {
			t.Errorf("upstream continuation = %s", fake.Last().Body)
		}
	})

	t.Run("streamed", func(t *testing.T) {
		stream := lax.Chat.Completions.NewStreaming(context.Background(), p)
		acc := openai.ChatCompletionAccumulator{}
		var reasoning strings.Builder
		var blocks []any
		for stream.Next() {
			ch := stream.Current()
			acc.AddChunk(ch)
			d := gjson.Get(ch.RawJSON(), "choices.0.delta")
			reasoning.WriteString(d.Get("reasoning_content").String())
			if cb := d.Get("content_blocks"); cb.Exists() {
				blocks = append(blocks, decodeAny(t, cb.Raw).([]any)...)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if reasoning.String() != providertest.AnthropicThinking || len(blocks) != 1 {
			t.Fatalf("streamed reasoning %q, blocks %v", reasoning.String(), blocks)
		}
		msg := acc.Choices[0].Message
		q := p
		q.Messages = append(append([]openai.ChatCompletionMessageParamUnion{}, p.Messages...), msg.ToParam(), openai.ToolMessage("18C", msg.ToolCalls[0].ID))
		second, err := lax.Chat.Completions.New(context.Background(), q, option.WithJSONSet("messages.2.content_blocks", blocks))
		if err != nil {
			t.Fatalf("continuation with the streamed blocks sent back: %v", err)
		}
		if second.Choices[0].Message.Content != "It is sunny in Paris." {
			t.Errorf("continuation = %s", second.RawJSON())
		}
		sent := gjson.ParseBytes(fake.Last().Body)
		if sent.Get("thinking.type").String() != "enabled" || sent.Get("messages.1.content.0.thinking").String() != providertest.AnthropicThinking ||
			sent.Get("messages.1.content.1.text").String() != "I'll check the weather." || sent.Get("messages.1.content.2.id").String() != providertest.AnthropicToolUseID {
			t.Errorf("upstream continuation = %s", fake.Last().Body)
		}
	})

	t.Run("strict", func(t *testing.T) {
		strict := anthropicClient(h, fake)
		first, err := strict.Chat.Completions.New(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(first.RawJSON(), "reasoning_content") || strings.Contains(first.RawJSON(), "content_blocks") {
			t.Errorf("non-OpenAI fields with strict compliance on: %s", first.RawJSON())
		}
		stream := strict.Chat.Completions.NewStreaming(context.Background(), p)
		for stream.Next() {
			if raw := stream.Current().RawJSON(); strings.Contains(raw, "reasoning_content") || strings.Contains(raw, "content_blocks") {
				t.Errorf("non-OpenAI fields in a strict stream: %s", raw)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		q := p
		q.Messages = append(append([]openai.ChatCompletionMessageParamUnion{}, p.Messages...), first.Choices[0].Message.ToParam(), openai.ToolMessage("18C", first.Choices[0].Message.ToolCalls[0].ID))
		second, err := strict.Chat.Completions.New(context.Background(), q)
		if err != nil {
			t.Fatalf("strict continuation: %v", err)
		}
		if second.Choices[0].Message.Content != "It is sunny in Paris." || gjson.GetBytes(fake.Last().Body, "thinking").Exists() {
			t.Errorf("strict continuation = %s, upstream %s", second.RawJSON(), fake.Last().Body)
		}
	})
}

func decodeAny(t *testing.T, raw string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestAnthropicUpstreamErrors(t *testing.T) {
	h := start(t)
	fake := providertest.NewAnthropic(t)
	for _, tc := range []struct {
		model   string
		status  int
		typ     string
		message string
	}{
		{"err-400", 400, "invalid_request_error", "fake upstream failure 400"},
		{"err-401", 401, "authentication_error", "fake upstream failure 401"},
		{"err-404", 404, "not_found_error", "fake upstream failure 404"},
		{"err-429", 429, "rate_limit_error", "fake upstream failure 429"},
		{"err-500", 500, "server_error", "fake upstream failure 500"},
		{"err-529", 503, "server_error", "Overloaded"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			_, err := anthropicClient(h, fake).Chat.Completions.New(context.Background(), userParams(tc.model))
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status {
				t.Fatalf("err = %v, want status %d", err, tc.status)
			}
			if apiErr.Message != tc.message || apiErr.Type != tc.typ {
				t.Errorf("error = %s", apiErr.RawJSON())
			}
			resp, body := h.do("POST", "/v1/chat/completions", `{"model":"`+tc.model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`, anthropicRouting(h, fake))
			if resp.StatusCode != tc.status || decode(t, body)["provider"] != "anthropic" || errorField(t, body, "message") != tc.message {
				t.Errorf("stream: status %d body %s", resp.StatusCode, body)
			}
			if tc.status == 429 && resp.Header.Get("Retry-After") != "7" {
				t.Errorf("429 without the provider's Retry-After: %v", resp.Header)
			}
			rec := h.logRecord(resp.Header.Get("x-gateway-request-id"))
			if rec["status_code"] != float64(tc.status) || rec["is_success"] != false {
				t.Errorf("record = %v", rec)
			}
		})
	}
}

// TestAnthropicStreamBrokenAfterFirstByte: an in-stream error event or a
// cut connection reaches the client as one error event, without [DONE].
func TestAnthropicStreamBrokenAfterFirstByte(t *testing.T) {
	h := start(t)
	fake := providertest.NewAnthropic(t)
	for _, tc := range []struct{ model, message string }{
		{"error-event", "Overloaded"},
		{"cut-after-4", ""},
	} {
		t.Run(tc.model, func(t *testing.T) {
			req, _ := http.NewRequest("POST", h.base+"/v1/chat/completions", strings.NewReader(`{"model":"`+tc.model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
			for k, v := range anthropicRouting(h, fake) {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || strings.Contains(string(body), "[DONE]") || !strings.Contains(string(body), `data: {"error"`) || !strings.Contains(string(body), tc.message) {
				t.Errorf("status %d body = %s", resp.StatusCode, body)
			}
			if rec := h.logRecord(resp.Header.Get("x-gateway-request-id")); rec["is_success"] != false || rec["status_code"] != 502.0 {
				t.Errorf("record = %v", rec)
			}
		})
	}
}

func TestAnthropicUnsupported(t *testing.T) {
	h := start(t)
	fake := providertest.NewAnthropic(t)
	before := len(fake.Requests())
	for _, tc := range []struct{ path, body, param, code string }{
		{"/v1/chat/completions", `{"model":"claude-sonnet-4-5","n":2,"messages":[{"role":"user","content":"hi"}]}`, "n", "unsupported_parameter"},
		{"/v1/chat/completions", `{"model":"claude-sonnet-4-5","logprobs":true,"messages":[{"role":"user","content":"hi"}]}`, "logprobs", "unsupported_parameter"},
		{"/v1/chat/completions", `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{oops"}}]},{"role":"tool","tool_call_id":"t1","content":"x"}]}`, "messages[1].tool_calls[0].function.arguments", "unsupported_parameter"},
		{"/v1/embeddings", `{"model":"claude-sonnet-4-5","input":"hi"}`, "", "unsupported_endpoint"},
	} {
		resp, body := h.do("POST", tc.path, tc.body, anthropicRouting(h, fake))
		if resp.StatusCode != 400 || errorField(t, body, "code") != tc.code || errorField(t, body, "type") != "invalid_request_error" {
			t.Errorf("%s: %d %s", tc.body, resp.StatusCode, body)
		}
		if p, _ := errorField(t, body, "param").(string); p != tc.param {
			t.Errorf("%s: param %q, want %q", tc.body, p, tc.param)
		}
	}
	if after := len(fake.Requests()); after != before {
		t.Errorf("provider called %d times for requests it cannot honour", after-before)
	}
}

// TestAnthropicPassThrough: another /v1 path goes to Anthropic's base URL
// with Anthropic's credential headers.
func TestAnthropicPassThrough(t *testing.T) {
	h := start(t)
	fake := providertest.NewAnthropic(t)
	hdr := anthropicRouting(h, fake)
	hdr["x-gateway-anthropic-version"] = "2023-06-01"
	resp, body := h.do("GET", "/v1/models?limit=1", nil, hdr)
	if resp.StatusCode != 200 || gjson.GetBytes(body, "data.0.id").String() != "claude-sonnet-4-5-20250929" {
		t.Fatalf("status %d body %s", resp.StatusCode, body)
	}
	up := fake.Last()
	if up.Path != "/v1/models" || up.Query != "limit=1" || up.Header.Get("x-api-key") != "sk-ant-test" || up.Header.Get("anthropic-version") != "2023-06-01" || up.Header.Get("Authorization") != "" {
		t.Errorf("upstream %s?%s headers %v", up.Path, up.Query, up.Header)
	}
}
