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
	"github.com/openai/openai-go/v3/shared"

	"github.com/ai-gateway/gateway/internal/provider/providertest"
)

// bedrockHeaders route a request to the fake Bedrock with SigV4 keys.
func bedrockHeaders(h *harness, f *providertest.Bedrock) map[string]string {
	return map[string]string{
		"x-gateway-api-key":               h.key,
		"x-gateway-provider":              "bedrock",
		"x-gateway-custom-host":           f.URL(),
		"x-gateway-aws-access-key-id":     providertest.BedrockAccessKeyID,
		"x-gateway-aws-secret-access-key": providertest.BedrockSecretAccessKey,
		"x-gateway-aws-session-token":     "session-token-e2e",
		"x-gateway-aws-region":            "eu-west-1",
	}
}

// bedrockClient is the OpenAI SDK pointed at the gateway, routed to the
// fake Bedrock. Its API key is ignored upstream: access keys win.
func bedrockClient(h *harness, f *providertest.Bedrock, opts ...option.RequestOption) *openai.Client {
	base := []option.RequestOption{
		option.WithBaseURL(h.base + "/v1"),
		option.WithAPIKey("sk-ignored"),
		option.WithMaxRetries(0),
	}
	for k, v := range bedrockHeaders(h, f) {
		base = append(base, option.WithHeader(k, v))
	}
	c := openai.NewClient(append(base, opts...)...)
	return &c
}

const bedrockClaude = "anthropic.claude-3-5-haiku-20241022-v1:0"

// checkBedrockUsage checks the log record's usage: Bedrock's
// inputTokens 10 + cache read 3 + cache write 2 = 15 prompt tokens
// (PROVIDERS.md §0.7), 6 completion tokens, 21 in all.
func checkBedrockUsage(t *testing.T, h *harness, id string) {
	t.Helper()
	rec := h.logRecord(id)
	u, _ := rec["usage"].(map[string]any)
	if u["prompt_tokens"] != 15.0 || u["completion_tokens"] != 6.0 || u["total_tokens"] != 21.0 || u["cached_tokens"] != 3.0 || u["cache_write_tokens"] != 2.0 {
		t.Errorf("record usage = %v", u)
	}
	if rec["provider"] != "bedrock" || rec["is_success"] != true {
		t.Errorf("record = %v", rec)
	}
}

func TestBedrockChat(t *testing.T) {
	h := start(t)
	f := providertest.NewBedrock(t)
	var raw *http.Response
	resp, err := bedrockClient(h, f).Chat.Completions.New(context.Background(), userParams(bedrockClaude), option.WithResponseInto(&raw))
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if got := resp.Choices[0].Message.Content; got != strings.Join(providertest.StreamWords, "") || resp.Choices[0].FinishReason != "stop" {
		t.Errorf("answer = %s", resp.RawJSON())
	}
	if resp.ID != "chatcmpl-"+providertest.BedrockRequestID || resp.Model != bedrockClaude || resp.Object != "chat.completion" {
		t.Errorf("envelope = %s", resp.RawJSON())
	}
	if resp.Usage.PromptTokens != 15 || resp.Usage.CompletionTokens != 6 || resp.Usage.TotalTokens != 21 || resp.Usage.PromptTokensDetails.CachedTokens != 3 {
		t.Errorf("usage = %s", resp.Usage.RawJSON())
	}
	if strings.Contains(resp.RawJSON(), "reasoning_content") || strings.Contains(resp.RawJSON(), "content_blocks") {
		t.Errorf("non-OpenAI fields with strict compliance on: %s", resp.RawJSON())
	}
	last := f.Last()
	if last.Path != "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse" {
		t.Errorf("upstream path = %s", last.Path)
	}
	if !strings.HasPrefix(last.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential="+providertest.BedrockAccessKeyID+"/") || last.Header.Get("X-Amz-Security-Token") != "session-token-e2e" {
		t.Errorf("upstream auth headers = %v", last.Header)
	}
	if got := f.Regions(); len(got) != 1 || got[0] != "eu-west-1" {
		t.Errorf("signed regions = %v", got)
	}
	for k := range last.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-gateway-") {
			t.Errorf("gateway header %s forwarded upstream", k)
		}
	}
	var sent map[string]any
	json.Unmarshal(last.Body, &sent)
	if sys, _ := sent["system"].([]any); len(sys) != 1 || sent["modelId"] != nil {
		t.Errorf("upstream body = %s", last.Body)
	}
	if raw.Header.Get("X-Amzn-Requestid") != providertest.BedrockRequestID {
		t.Errorf("provider request id not passed: %v", raw.Header)
	}
	checkBedrockUsage(t, h, raw.Header.Get("x-gateway-request-id"))
}

func TestBedrockStreamIncludeUsage(t *testing.T) {
	h := start(t)
	f := providertest.NewBedrock(t)
	var raw *http.Response
	stream := bedrockClient(h, f).Chat.Completions.NewStreaming(context.Background(), streamParams(bedrockClaude, true), option.WithResponseInto(&raw))
	var chunks []openai.ChatCompletionChunk
	for stream.Next() {
		chunks = append(chunks, stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(chunks) < 3 {
		t.Fatalf("%d chunks", len(chunks))
	}
	last := chunks[len(chunks)-1]
	if len(last.Choices) != 0 || last.Usage.PromptTokens != 15 || last.Usage.TotalTokens != 21 {
		t.Fatalf("last chunk = %s, want the usage chunk", last.RawJSON())
	}
	var text strings.Builder
	for i, ch := range chunks[:len(chunks)-1] {
		if !strings.Contains(ch.RawJSON(), `"usage":null`) {
			t.Errorf("chunk %d without usage:null: %s", i, ch.RawJSON())
		}
		text.WriteString(ch.Choices[0].Delta.Content)
	}
	if chunks[0].Choices[0].Delta.Role != "assistant" || text.String() != strings.Join(providertest.StreamWords, "") {
		t.Errorf("first chunk %s, text %q", chunks[0].RawJSON(), text.String())
	}
	if fin := chunks[len(chunks)-2].Choices[0].FinishReason; fin != "stop" {
		t.Errorf("finish_reason = %q", fin)
	}
	if f.Last().Path != "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream" {
		t.Errorf("upstream path = %s", f.Last().Path)
	}
	checkBedrockUsage(t, h, raw.Header.Get("x-gateway-request-id"))
}

func TestBedrockStreamWithoutIncludeUsage(t *testing.T) {
	h := start(t)
	f := providertest.NewBedrock(t)
	var raw *http.Response
	stream := bedrockClient(h, f).Chat.Completions.NewStreaming(context.Background(), streamParams(bedrockClaude, false), option.WithResponseInto(&raw))
	var text strings.Builder
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) == 0 || strings.Contains(ch.RawJSON(), `"usage"`) {
			t.Errorf("usage visible to a client that did not ask: %s", ch.RawJSON())
			continue
		}
		text.WriteString(ch.Choices[0].Delta.Content)
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if text.String() != strings.Join(providertest.StreamWords, "") || raw.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("text %q, content type %q", text.String(), raw.Header.Get("Content-Type"))
	}
	checkBedrockUsage(t, h, raw.Header.Get("x-gateway-request-id"))
}

func TestBedrockToolRoundTrip(t *testing.T) {
	h := start(t)
	f := providertest.NewBedrock(t)
	c := bedrockClient(h, f)
	p := userParams(bedrockClaude)
	p.Tools = []openai.ChatCompletionToolUnionParam{weatherTool}
	first, err := c.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	calls := first.Choices[0].Message.ToolCalls
	if first.Choices[0].FinishReason != "tool_calls" || len(calls) != 1 || calls[0].ID != "tooluse_kZJ1fake" || calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city":"Paris"}` {
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
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(f.Last().Body, &sent)
	if n := len(sent.Messages); n != 3 || sent.Messages[1].Content[0]["toolUse"] == nil || sent.Messages[2].Content[0]["toolResult"] == nil {
		t.Errorf("upstream messages = %s", f.Last().Body)
	}

	// The same call streamed, accumulated by the SDK.
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: bedrockClaude, Messages: p.Messages[:2], Tools: p.Tools})
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	tc := acc.Choices[0].Message.ToolCalls
	if len(tc) != 1 || tc[0].ID != "tooluse_kZJ1fake" || tc[0].Function.Arguments != `{"city":"Paris"}` || acc.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("accumulated = %+v", acc.Choices[0])
	}
}

// TestBedrockThinking asks a Claude model to reason: with strict
// compliance off the answer carries reasoning_content and the signed
// reasoning block in content_blocks, which the client sends back so the
// tool-use turn continues (the fake, like Claude, refuses it otherwise);
// with strict compliance on neither field appears.
func TestBedrockThinking(t *testing.T) {
	h := start(t)
	f := providertest.NewBedrock(t)
	const model = "us.anthropic.claude-sonnet-4-20250514-v1:0"
	p := userParams(model)
	p.Tools = []openai.ChatCompletionToolUnionParam{weatherTool}
	p.ReasoningEffort = shared.ReasoningEffortLow

	strict, err := bedrockClient(h, f).Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strict.RawJSON(), "reasoning_content") || strings.Contains(strict.RawJSON(), "content_blocks") {
		t.Errorf("strict answer carries reasoning: %s", strict.RawJSON())
	}
	var sent struct {
		Additional struct {
			Thinking struct {
				Type   string `json:"type"`
				Budget int    `json:"budget_tokens"`
			} `json:"thinking"`
		} `json:"additionalModelRequestFields"`
	}
	json.Unmarshal(f.Last().Body, &sent)
	if sent.Additional.Thinking.Type != "enabled" || sent.Additional.Thinking.Budget != 2048 {
		t.Errorf("upstream body = %s", f.Last().Body)
	}

	loose := bedrockClient(h, f, option.WithHeader("x-gateway-strict-openai-compliance", "false"))
	first, err := loose.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		ReasoningContent string            `json:"reasoning_content"`
		ContentBlocks    []json.RawMessage `json:"content_blocks"`
		ToolCalls        []struct {
			ID string `json:"id"`
		} `json:"tool_calls"`
	}
	json.Unmarshal([]byte(first.Choices[0].Message.RawJSON()), &msg)
	if msg.ReasoningContent == "" || len(msg.ContentBlocks) != 1 || !strings.Contains(string(msg.ContentBlocks[0]), providertest.BedrockSignature) || len(msg.ToolCalls) != 1 {
		t.Fatalf("extended answer = %s", first.Choices[0].Message.RawJSON())
	}

	// Send the assistant turn back verbatim, content_blocks included.
	round := func(assistant json.RawMessage, headers map[string]string) (*http.Response, []byte) {
		body := `{"model":"` + model + `","reasoning_effort":"low","tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],
			"messages":[{"role":"user","content":"Weather in Paris?"},` + string(assistant) + `,{"role":"tool","tool_call_id":"` + msg.ToolCalls[0].ID + `","content":"18C"}]}`
		return h.do("POST", "/v1/chat/completions", body, headers)
	}
	headers := bedrockHeaders(h, f)
	headers["x-gateway-strict-openai-compliance"] = "false"
	resp, out := round(json.RawMessage(first.Choices[0].Message.RawJSON()), headers)
	if resp.StatusCode != 200 || !strings.Contains(string(out), "It is sunny in Paris.") || !strings.Contains(string(out), `"reasoning_content"`) {
		t.Fatalf("second turn with signatures: %d %s", resp.StatusCode, out)
	}
	// Without the signed block Bedrock refuses the turn.
	resp, out = round(json.RawMessage(strict.Choices[0].Message.RawJSON()), bedrockHeaders(h, f))
	if resp.StatusCode != 400 || decode(t, out)["provider"] != "bedrock" || !strings.Contains(errorField(t, out, "message").(string), "thinking") {
		t.Errorf("second turn without signatures: %d %s", resp.StatusCode, out)
	}

	// Streamed, strict off: reasoning deltas and the block at its end.
	stream := loose.Chat.Completions.NewStreaming(context.Background(), p)
	var reasoning strings.Builder
	blocks := 0
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) == 0 {
			continue
		}
		var d struct {
			ReasoningContent string            `json:"reasoning_content"`
			ContentBlocks    []json.RawMessage `json:"content_blocks"`
		}
		json.Unmarshal([]byte(ch.Choices[0].Delta.RawJSON()), &d)
		reasoning.WriteString(d.ReasoningContent)
		blocks += len(d.ContentBlocks)
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if reasoning.String() != msg.ReasoningContent || blocks != 1 {
		t.Errorf("streamed reasoning %q, %d blocks", reasoning.String(), blocks)
	}
}

func TestBedrockUpstreamErrors(t *testing.T) {
	h := start(t)
	f := providertest.NewBedrock(t)
	for _, tc := range []struct {
		model  string
		status int
		typ    string
		code   string
	}{
		{"err-400", 400, "invalid_request_error", "ValidationException"},
		{"err-403", 403, "permission_error", "AccessDeniedException"},
		{"err-429", 429, "rate_limit_error", "ThrottlingException"},
		{"err-503", 503, "server_error", "ServiceUnavailableException"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			_, err := bedrockClient(h, f).Chat.Completions.New(context.Background(), userParams(tc.model))
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status {
				t.Fatalf("err = %v, want status %d", err, tc.status)
			}
			if apiErr.Message == "" || apiErr.Type != tc.typ || apiErr.Code != tc.code {
				t.Errorf("error = %s", apiErr.RawJSON())
			}
			resp, body := h.do("POST", "/v1/chat/completions", `{"model":"`+tc.model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`, bedrockHeaders(h, f))
			if resp.StatusCode != tc.status || decode(t, body)["provider"] != "bedrock" {
				t.Errorf("stream: status %d body %s", resp.StatusCode, body)
			}
			if tc.status == 429 && resp.Header.Get("Retry-After") != "2" {
				t.Errorf("429 without the provider's Retry-After: %v", resp.Header)
			}
			rec := h.logRecord(resp.Header.Get("x-gateway-request-id"))
			if rec["status_code"] != float64(tc.status) || rec["is_success"] != false {
				t.Errorf("record = %v", rec)
			}
		})
	}
	t.Run("exception after the first byte", func(t *testing.T) {
		stream := bedrockClient(h, f).Chat.Completions.NewStreaming(context.Background(), streamParams("exception-event", false))
		for stream.Next() {
		}
		if stream.Err() == nil {
			t.Fatal("SDK saw a clean end")
		}
		req, _ := http.NewRequest("POST", h.base+"/v1/chat/completions", strings.NewReader(`{"model":"exception-event","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		for k, v := range bedrockHeaders(h, f) {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil {
			t.Errorf("body read ended cleanly; want an aborted connection")
		}
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"code":"throttlingException"`) || !strings.Contains(string(body), "Too many tokens") || strings.Contains(string(body), "[DONE]") {
			t.Errorf("stream = %d %s", resp.StatusCode, body)
		}
	})
	t.Run("bad signature", func(t *testing.T) {
		hd := bedrockHeaders(h, f)
		hd["x-gateway-aws-secret-access-key"] = "wrong"
		resp, body := h.do("POST", "/v1/chat/completions", `{"model":"m.x","messages":[{"role":"user","content":"hi"}]}`, hd)
		if resp.StatusCode != 403 || errorField(t, body, "code") != "InvalidSignatureException" {
			t.Errorf("%d %s", resp.StatusCode, body)
		}
	})
}

func TestBedrockBearerAndRequestErrors(t *testing.T) {
	h := start(t)
	f := providertest.NewBedrock(t)
	bearer := map[string]string{
		"x-gateway-api-key": h.key, "x-gateway-provider": "bedrock", "x-gateway-custom-host": f.URL(),
		"Authorization": "Bearer " + providertest.BedrockAPIKey,
	}
	resp, body := h.do("POST", "/v1/chat/completions", `{"model":"amazon.nova-micro-v1:0","messages":[{"role":"user","content":"hi"}]}`, bearer)
	if resp.StatusCode != 200 || f.Last().Header.Get("Authorization") != "Bearer "+providertest.BedrockAPIKey {
		t.Errorf("bearer: %d %s, upstream auth %q", resp.StatusCode, body, f.Last().Header.Get("Authorization"))
	}
	noRegion := bedrockHeaders(h, f)
	delete(noRegion, "x-gateway-aws-region")
	delete(noRegion, "x-gateway-custom-host")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	resp, body = h.do("POST", "/v1/chat/completions", `{"model":"amazon.nova-micro-v1:0","messages":[{"role":"user","content":"hi"}]}`, noRegion)
	if resp.StatusCode != 400 || errorField(t, body, "param") != "x-gateway-aws-region" {
		t.Errorf("no region: %d %s", resp.StatusCode, body)
	}
	resp, body = h.do("POST", "/v1/chat/completions", `{"model":"amazon.nova-micro-v1:0","n":2,"messages":[{"role":"user","content":"hi"}]}`, bedrockHeaders(h, f))
	if resp.StatusCode != 400 || errorField(t, body, "code") != "unsupported_parameter" || errorField(t, body, "param") != "n" {
		t.Errorf("n=2: %d %s", resp.StatusCode, body)
	}
}

func TestBedrockEmbeddingsAndPassThrough(t *testing.T) {
	h := start(t)
	f := providertest.NewBedrock(t)
	var raw *http.Response
	resp, err := bedrockClient(h, f).Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model: "amazon.titan-embed-text-v2:0",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"hello world", "bye"}},
	}, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Data) != 2 || resp.Data[1].Index != 1 || resp.Usage.PromptTokens != 3 {
		t.Errorf("embeddings = %s", resp.RawJSON())
	}
	if rec := h.logRecord(raw.Header.Get("x-gateway-request-id")); rec["usage"].(map[string]any)["prompt_tokens"] != 3.0 {
		t.Errorf("record = %v", rec)
	}
	// Any other path goes to bedrock-runtime as is, signed.
	r, body := h.do("POST", "/v1/model/cohere.embed-english-v3/invoke", `{"texts":["a b"],"input_type":"search_query"}`, bedrockHeaders(h, f))
	if r.StatusCode != 200 || !strings.Contains(string(body), `"embeddings"`) || f.Last().Path != "/model/cohere.embed-english-v3/invoke" {
		t.Errorf("pass-through: %d %s (upstream %s)", r.StatusCode, body, f.Last().Path)
	}
}
