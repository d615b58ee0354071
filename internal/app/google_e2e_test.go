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

// googleClient is the OpenAI SDK pointed at the gateway, routed to the fake
// Gemini API by provider header, key and custom host.
func googleClient(h *harness, fake *providertest.Google, opts ...option.RequestOption) *openai.Client {
	base := []option.RequestOption{
		option.WithBaseURL(h.base + "/v1"),
		option.WithAPIKey("gemini-test-key"),
		option.WithHeader("x-gateway-api-key", h.key),
		option.WithHeader("x-gateway-provider", "google"),
		option.WithHeader("x-gateway-custom-host", fake.GeminiBaseURL()),
		option.WithMaxRetries(0),
	}
	c := openai.NewClient(append(base, opts...)...)
	return &c
}

// vertexClient routes to the fake Vertex AI with a service-account key
// whose token_uri is the fake's token endpoint.
func vertexClient(h *harness, fake *providertest.Google, opts ...option.RequestOption) *openai.Client {
	base := []option.RequestOption{
		option.WithBaseURL(h.base + "/v1"),
		option.WithAPIKey("unused-with-a-service-account"),
		option.WithHeader("x-gateway-api-key", h.key),
		option.WithHeader("x-gateway-provider", "vertex-ai"),
		option.WithHeader("x-gateway-custom-host", fake.VertexHost()),
		option.WithHeader("x-gateway-vertex-project-id", "test-project"),
		option.WithHeader("x-gateway-vertex-region", "us-central1"),
		option.WithHeader("x-gateway-vertex-service-account-json", fake.ServiceAccountJSON()),
		option.WithMaxRetries(0),
	}
	c := openai.NewClient(append(base, opts...)...)
	return &c
}

// checkGoogleRecordUsage checks the log record's usage against the fake's
// usageMetadata normalised per PROVIDERS.md §0.7.
func checkGoogleRecordUsage(t *testing.T, h *harness, id, provider string, prompt, completion, total, reasoning, cached float64) {
	t.Helper()
	rec := h.logRecord(id)
	u, _ := rec["usage"].(map[string]any)
	if u["prompt_tokens"] != prompt || u["completion_tokens"] != completion || u["total_tokens"] != total {
		t.Errorf("record usage = %v, want %v/%v/%v", u, prompt, completion, total)
	}
	if r, _ := u["reasoning_tokens"].(float64); r != reasoning {
		t.Errorf("record reasoning tokens = %v, want %v", u["reasoning_tokens"], reasoning)
	}
	if c, _ := u["cached_tokens"].(float64); c != cached {
		t.Errorf("record cached tokens = %v, want %v", u["cached_tokens"], cached)
	}
	if rec["provider"] != provider || rec["is_success"] != true {
		t.Errorf("record = %v", rec)
	}
}

func TestGoogleChat(t *testing.T) {
	h := start(t)
	fake := providertest.NewGoogle(t)
	var raw *http.Response
	resp, err := googleClient(h, fake).Chat.Completions.New(context.Background(), userParams("gemini-2.5-flash"), option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "Hello from Gemini." || resp.Choices[0].FinishReason != "stop" || resp.Object != "chat.completion" {
		t.Errorf("answer = %s", resp.RawJSON())
	}
	if resp.Usage.PromptTokens != 9 || resp.Usage.CompletionTokens != 5 || resp.Usage.TotalTokens != 14 || resp.Model != "gemini-2.5-flash-001" {
		t.Errorf("usage/model = %s", resp.RawJSON())
	}
	if strings.Contains(resp.RawJSON(), "reasoning_content") || strings.Contains(resp.RawJSON(), "content_blocks") {
		t.Errorf("strict answer has extensions: %s", resp.RawJSON())
	}
	last := fake.Last()
	if last.Path != "/v1beta/models/gemini-2.5-flash:generateContent" || last.Header.Get("x-goog-api-key") != "gemini-test-key" || last.Header.Get("Authorization") != "" {
		t.Errorf("upstream request %s %v", last.Path, last.Header)
	}
	for k := range last.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-gateway-") {
			t.Errorf("gateway header %s forwarded upstream", k)
		}
	}
	var sent map[string]any
	json.Unmarshal(last.Body, &sent)
	if si, _ := json.Marshal(sent["systemInstruction"]); string(si) != `{"parts":[{"text":"You are terse."}]}` {
		t.Errorf("systemInstruction = %s", si)
	}
	rec := h.logRecord(raw.Header.Get("x-gateway-request-id"))
	if rec["model_served"] != "gemini-2.5-flash-001" {
		t.Errorf("model_served = %v", rec["model_served"])
	}
	checkGoogleRecordUsage(t, h, raw.Header.Get("x-gateway-request-id"), "google", 9, 5, 14, 0, 0)
}

func TestGoogleStreamIncludeUsage(t *testing.T) {
	h := start(t)
	fake := providertest.NewGoogle(t)
	var raw *http.Response
	stream := googleClient(h, fake).Chat.Completions.NewStreaming(context.Background(), streamParams("gemini-2.5-flash", true), option.WithResponseInto(&raw))
	var chunks []openai.ChatCompletionChunk
	for stream.Next() {
		chunks = append(chunks, stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if fake.Last().Path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || fake.Last().Query != "alt=sse" {
		t.Errorf("upstream %s?%s", fake.Last().Path, fake.Last().Query)
	}
	first, last := chunks[0], chunks[len(chunks)-1]
	if first.Choices[0].Delta.Role != "assistant" || !strings.Contains(first.RawJSON(), `"content":""`) {
		t.Errorf("first chunk = %s", first.RawJSON())
	}
	if len(last.Choices) != 0 || last.Usage.PromptTokens != 9 || last.Usage.CompletionTokens != 5 || last.Usage.TotalTokens != 14 {
		t.Fatalf("last chunk = %s, want the usage chunk", last.RawJSON())
	}
	var text strings.Builder
	for _, ch := range chunks[:len(chunks)-1] {
		if !strings.Contains(ch.RawJSON(), `"usage":null`) {
			t.Errorf("chunk without usage:null: %s", ch.RawJSON())
		}
		text.WriteString(ch.Choices[0].Delta.Content)
	}
	if text.String() != "Hello from Gemini." || chunks[len(chunks)-2].Choices[0].FinishReason != "stop" {
		t.Errorf("text %q, finish chunk %s", text.String(), chunks[len(chunks)-2].RawJSON())
	}
	checkGoogleRecordUsage(t, h, raw.Header.Get("x-gateway-request-id"), "google", 9, 5, 14, 0, 0)
}

func TestGoogleStreamWithoutIncludeUsage(t *testing.T) {
	h := start(t)
	fake := providertest.NewGoogle(t)
	resp, body := h.do("POST", "/v1/chat/completions", `{"model":"gemini-2.5-flash","stream":true,"messages":[{"role":"user","content":"hi"}]}`, map[string]string{
		"x-gateway-api-key": h.key, "x-gateway-provider": "google", "Authorization": "Bearer gemini-test-key", "x-gateway-custom-host": fake.GeminiBaseURL(),
	})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	events := strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n")
	if events[len(events)-1] != "data: [DONE]" {
		t.Errorf("last event = %q", events[len(events)-1])
	}
	for _, e := range events[:len(events)-1] {
		if strings.Contains(e, `"usage"`) || strings.Contains(e, `"choices":[]`) {
			t.Errorf("usage visible to a client that did not ask: %s", e)
		}
	}
	checkGoogleRecordUsage(t, h, resp.Header.Get("x-gateway-request-id"), "google", 9, 5, 14, 0, 0)
}

// TestGoogleToolRoundTrip: a Gemini 3 model calls a tool; the client sends
// back only tool_calls (no signatures) and the tool result; the fake, like
// Gemini 3, refuses a replayed call without its thought signature, so this
// passes only if the gateway restores it. The first turn is streamed, so
// the signature is kept from a stream too.
func TestGoogleToolRoundTrip(t *testing.T) {
	h := start(t)
	fake := providertest.NewGoogle(t)
	c := googleClient(h, fake)
	p := userParams("gemini-3-pro-tool")
	p.Tools = []openai.ChatCompletionToolUnionParam{weatherTool}
	stream := c.Chat.Completions.NewStreaming(context.Background(), p)
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	calls := acc.Choices[0].Message.ToolCalls
	if acc.Choices[0].FinishReason != "tool_calls" || len(calls) != 1 || calls[0].Function.Name != "get_weather" ||
		calls[0].Function.Arguments != `{"city":"Paris"}` || !strings.HasPrefix(calls[0].ID, "call_") {
		t.Fatalf("first answer = %+v", acc.Choices[0])
	}
	var sent struct {
		Tools []struct {
			FunctionDeclarations []map[string]any `json:"functionDeclarations"`
		} `json:"tools"`
	}
	json.Unmarshal(fake.Last().Body, &sent)
	if len(sent.Tools) != 1 || sent.Tools[0].FunctionDeclarations[0]["name"] != "get_weather" || sent.Tools[0].FunctionDeclarations[0]["parametersJsonSchema"] == nil {
		t.Errorf("tools sent = %s", fake.Last().Body)
	}

	p.Messages = append(p.Messages, acc.Choices[0].Message.ToParam(), openai.ToolMessage("18C sunny", calls[0].ID))
	var raw *http.Response
	second, err := c.Chat.Completions.New(context.Background(), p, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatalf("second turn: %v", err)
	}
	if got := second.Choices[0].Message.Content; got != `The tool said {"content":"18C sunny"}.` || second.Choices[0].FinishReason != "stop" {
		t.Errorf("second answer = %s", second.RawJSON())
	}
	var turn struct {
		Contents []struct {
			Role  string           `json:"role"`
			Parts []map[string]any `json:"parts"`
		} `json:"contents"`
	}
	json.Unmarshal(fake.Last().Body, &turn)
	if n := len(turn.Contents); n != 3 || turn.Contents[1].Role != "model" || turn.Contents[2].Role != "user" ||
		turn.Contents[1].Parts[0]["thoughtSignature"] != providertest.GoogleToolSignature {
		t.Errorf("replayed contents = %s", fake.Last().Body)
	}
	fr, _ := turn.Contents[2].Parts[0]["functionResponse"].(map[string]any)
	if fr["name"] != "get_weather" {
		t.Errorf("functionResponse = %v", turn.Contents[2].Parts[0])
	}
	checkGoogleRecordUsage(t, h, raw.Header.Get("x-gateway-request-id"), "google", 40, 8, 48, 0, 0)
}

// TestGoogleThinking: thought summaries appear as reasoning_content (and
// the signatures as content_blocks) only with strict compliance off; the
// reasoning tokens count as completion tokens either way.
func TestGoogleThinking(t *testing.T) {
	h := start(t)
	fake := providertest.NewGoogle(t)
	p := userParams("gemini-2.5-think")
	p.ReasoningEffort = "high"

	var raw *http.Response
	resp, err := googleClient(h, fake, option.WithHeader("x-gateway-strict-openai-compliance", "false")).
		Chat.Completions.New(context.Background(), p, option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	var msg struct {
		Content          string            `json:"content"`
		ReasoningContent string            `json:"reasoning_content"`
		ContentBlocks    []json.RawMessage `json:"content_blocks"`
	}
	json.Unmarshal([]byte(resp.Choices[0].Message.RawJSON()), &msg)
	if msg.Content != "There are 3 r's." || msg.ReasoningContent != "Counting the r's in strawberry." || len(msg.ContentBlocks) != 3 {
		t.Errorf("message = %s", resp.Choices[0].Message.RawJSON())
	}
	if resp.Usage.CompletionTokens != 196 || resp.Usage.CompletionTokensDetails.ReasoningTokens != 186 || resp.Usage.PromptTokensDetails.CachedTokens != 4 {
		t.Errorf("usage = %s", resp.Usage.RawJSON())
	}
	var gc struct {
		GenerationConfig struct {
			ThinkingConfig map[string]any `json:"thinkingConfig"`
		} `json:"generationConfig"`
	}
	json.Unmarshal(fake.Last().Body, &gc)
	if gc.GenerationConfig.ThinkingConfig["includeThoughts"] != true || gc.GenerationConfig.ThinkingConfig["thinkingBudget"] != 24576.0 {
		t.Errorf("thinkingConfig = %v", gc.GenerationConfig.ThinkingConfig)
	}
	checkGoogleRecordUsage(t, h, raw.Header.Get("x-gateway-request-id"), "google", 9, 196, 205, 186, 4)

	// The same streamed: reasoning_content deltas.
	stream := googleClient(h, fake, option.WithHeader("x-gateway-strict-openai-compliance", "false")).
		Chat.Completions.NewStreaming(context.Background(), p)
	var reasoning strings.Builder
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) > 0 {
			var d struct {
				ReasoningContent string `json:"reasoning_content"`
			}
			json.Unmarshal([]byte(ch.Choices[0].Delta.RawJSON()), &d)
			reasoning.WriteString(d.ReasoningContent)
		}
	}
	if err := stream.Err(); err != nil || reasoning.String() != "Counting the r's in strawberry." {
		t.Errorf("streamed reasoning = %q, err %v", reasoning.String(), err)
	}

	// Strict compliance on (the default): no extensions, thoughts not asked for.
	resp, err = googleClient(h, fake).Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(resp.RawJSON(), "reasoning_content") || strings.Contains(resp.RawJSON(), "content_blocks") {
		t.Errorf("strict answer = %s", resp.RawJSON())
	}
	if resp.Choices[0].Message.Content != "There are 3 r's." || resp.Usage.CompletionTokensDetails.ReasoningTokens != 186 {
		t.Errorf("strict answer = %s", resp.RawJSON())
	}
	gc.GenerationConfig.ThinkingConfig = nil
	json.Unmarshal(fake.Last().Body, &gc)
	if gc.GenerationConfig.ThinkingConfig["includeThoughts"] != nil {
		t.Errorf("strict request asked for thoughts: %v", gc.GenerationConfig.ThinkingConfig)
	}
}

func TestGoogleUpstreamErrors(t *testing.T) {
	h := start(t)
	fake := providertest.NewGoogle(t)
	for _, tc := range []struct {
		model      string
		status     int
		typ        string
		msg        string
		retryAfter string
	}{
		{"err-429", 429, "rate_limit_error", "You exceeded your current quota, please check your plan.", "35"},
		{"err-404", 404, "not_found_error", "models/err-404 is not found for API version v1beta, or is not supported for generateContent.", ""},
		{"err-400", 400, "invalid_request_error", "fake upstream failure 400", ""},
		{"err-503", 503, "server_error", "The model is overloaded. Please try again later.", ""},
	} {
		for _, streamed := range []bool{false, true} {
			var raw *http.Response
			var err error
			if streamed {
				s := googleClient(h, fake).Chat.Completions.NewStreaming(context.Background(), streamParams(tc.model, true), option.WithResponseInto(&raw))
				for s.Next() {
				}
				err = s.Err()
			} else {
				_, err = googleClient(h, fake).Chat.Completions.New(context.Background(), userParams(tc.model), option.WithResponseInto(&raw))
			}
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("%s stream=%v: err = %v", tc.model, streamed, err)
			}
			if apiErr.StatusCode != tc.status || apiErr.Message != tc.msg || apiErr.Type != tc.typ {
				t.Errorf("%s stream=%v: %d %s", tc.model, streamed, apiErr.StatusCode, apiErr.RawJSON())
			}
			if got := raw.Header.Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("%s stream=%v: Retry-After = %q, want %q", tc.model, streamed, got, tc.retryAfter)
			}
		}
	}
	// A stream that breaks after its first byte ends with an error event,
	// and the connection is cut.
	req, _ := http.NewRequest("POST", h.base+"/v1/chat/completions", strings.NewReader(`{"model":"error-event","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	for k, v := range map[string]string{"x-gateway-api-key": h.key, "x-gateway-provider": "google", "Authorization": "Bearer k", "x-gateway-custom-host": fake.GeminiBaseURL()} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body) // ends with an error: the cut
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"error"`) || !strings.Contains(string(body), "Internal error encountered.") || strings.Contains(string(body), "[DONE]") {
		t.Errorf("broken stream: %d %s", resp.StatusCode, body)
	}
}

func TestGoogleBlockedPrompt(t *testing.T) {
	h := start(t)
	fake := providertest.NewGoogle(t)
	resp, err := googleClient(h, fake).Chat.Completions.New(context.Background(), userParams("blocked"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 || resp.Choices[0].FinishReason != "content_filter" || resp.Choices[0].Message.Content != "" || resp.Usage.PromptTokens != 7 {
		t.Errorf("answer = %s", resp.RawJSON())
	}
}

func TestGoogleUnsupportedAndPassThrough(t *testing.T) {
	h := start(t)
	fake := providertest.NewGoogle(t)
	p := userParams("gemini-2.5-flash")
	p.Modalities = []string{"text", "audio"}
	_, err := googleClient(h, fake).Chat.Completions.New(context.Background(), p)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "unsupported_parameter" || apiErr.Param != "modalities" {
		t.Errorf("modalities audio: %v", err)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d upstream calls for a refused request", n)
	}
	// Native-only routes and the pass-through to the Gemini API.
	routing := map[string]string{"x-gateway-api-key": h.key, "x-gateway-provider": "google", "Authorization": "Bearer gemini-test-key", "x-gateway-custom-host": fake.GeminiBaseURL()}
	resp, body := h.do("POST", "/v1/completions", `{"model":"gemini-2.5-flash","prompt":"hi"}`, routing)
	if resp.StatusCode != 400 {
		t.Errorf("completions: %d %s", resp.StatusCode, body)
	}
	resp, body = h.do("POST", "/v1/models/gemini-2.5-flash:countTokens?x=1", `{"contents":[]}`, routing)
	echo := decode(t, body)
	if resp.StatusCode != 200 || echo["path"] != "/v1beta/models/gemini-2.5-flash:countTokens" || echo["query"] != "x=1" || echo["x_goog_api_key"] != "gemini-test-key" || echo["authorization"] != "" {
		t.Errorf("pass-through: %d %s", resp.StatusCode, body)
	}
}

func TestGoogleEmbeddings(t *testing.T) {
	h := start(t)
	fake := providertest.NewGoogle(t)
	for _, vertex := range []bool{false, true} {
		c := googleClient(h, fake)
		if vertex {
			c = vertexClient(h, fake)
		}
		var raw *http.Response
		resp, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
			Model:      "gemini-embedding-001",
			Input:      openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"hello world", "bye"}},
			Dimensions: openai.Int(3),
		}, option.WithResponseInto(&raw))
		if err != nil {
			t.Fatalf("vertex=%v: %v", vertex, err)
		}
		if len(resp.Data) != 2 || resp.Data[1].Index != 1 || len(resp.Data[1].Embedding) != 3 || resp.Data[1].Embedding[2] != 1.125 {
			t.Errorf("vertex=%v: answer = %s", vertex, resp.RawJSON())
		}
		wantTokens := int64(0) // the Gemini API reports no usage for embeddings
		if vertex {
			wantTokens = 3
		}
		if resp.Usage.PromptTokens != wantTokens || resp.Usage.TotalTokens != wantTokens {
			t.Errorf("vertex=%v: usage = %s", vertex, resp.Usage.RawJSON())
		}
	}
}

// TestVertexChat: the service-account key is exchanged once for a token
// that then serves every request, plain and streamed.
func TestVertexChat(t *testing.T) {
	h := start(t)
	fake := providertest.NewGoogle(t)
	c := vertexClient(h, fake)
	var raw *http.Response
	resp, err := c.Chat.Completions.New(context.Background(), userParams("gemini-2.5-flash"), option.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "Hello from Gemini." || resp.Usage.TotalTokens != 14 {
		t.Errorf("answer = %s", resp.RawJSON())
	}
	last := fake.Last()
	if last.Path != "/v1/projects/test-project/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent" ||
		last.Header.Get("Authorization") != "Bearer ya29.fake-1" || last.Header.Get("x-goog-api-key") != "" {
		t.Errorf("upstream %s %v", last.Path, last.Header)
	}
	checkGoogleRecordUsage(t, h, raw.Header.Get("x-gateway-request-id"), "vertex-ai", 9, 5, 14, 0, 0)

	stream := c.Chat.Completions.NewStreaming(context.Background(), streamParams("gemini-2.5-flash", true))
	var chunks []openai.ChatCompletionChunk
	for stream.Next() {
		chunks = append(chunks, stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if last := chunks[len(chunks)-1]; len(last.Choices) != 0 || last.Usage.TotalTokens != 14 {
		t.Errorf("last chunk = %s", last.RawJSON())
	}
	if fake.Last().Query != "alt=sse" || !strings.HasSuffix(fake.Last().Path, ":streamGenerateContent") {
		t.Errorf("stream upstream %s?%s", fake.Last().Path, fake.Last().Query)
	}
	for range 3 {
		if _, err := c.Chat.Completions.New(context.Background(), userParams("gemini-2.5-flash")); err != nil {
			t.Fatal(err)
		}
	}
	if n := fake.TokenFetches(); n != 1 {
		t.Errorf("token fetched %d times for 5 requests", n)
	}
}

func TestVertexToolRoundTripWithBlocks(t *testing.T) {
	h := start(t)
	fake := providertest.NewGoogle(t)
	// With strict compliance off the signature also travels in
	// content_blocks, which a raw client sends back as is.
	headers := map[string]string{
		"x-gateway-api-key": h.key, "x-gateway-provider": "vertex-ai", "x-gateway-custom-host": fake.VertexHost(),
		"x-gateway-vertex-project-id": "test-project", "x-gateway-vertex-region": "global",
		"x-gateway-vertex-service-account-json": fake.ServiceAccountJSON(), "x-gateway-strict-openai-compliance": "false",
	}
	req := `{"model":"gemini-3-pro-tool","messages":[{"role":"user","content":"Weather?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`
	resp, body := h.do("POST", "/v1/chat/completions", req, headers)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if !strings.HasPrefix(fake.Last().Path, "/v1/projects/test-project/locations/global/") {
		t.Errorf("path = %s", fake.Last().Path)
	}
	var first struct {
		Choices []struct {
			Message map[string]any `json:"message"`
		} `json:"choices"`
	}
	json.Unmarshal(body, &first)
	msg := first.Choices[0].Message
	blocks, _ := msg["content_blocks"].([]any)
	if len(blocks) != 1 || blocks[0].(map[string]any)["signature"] != providertest.GoogleToolSignature {
		t.Fatalf("message = %v", msg)
	}
	id := msg["tool_calls"].([]any)[0].(map[string]any)["id"].(string)
	// A new gateway would not remember the id; the blocks alone carry it.
	h2 := start(t)
	headers["x-gateway-api-key"] = h2.key
	msgJSON, _ := json.Marshal(msg)
	req2 := `{"model":"gemini-3-pro-tool","messages":[{"role":"user","content":"Weather?"},` + string(msgJSON) +
		`,{"role":"tool","tool_call_id":"` + id + `","content":"{\"sky\":\"clear\"}"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`
	resp, body = h2.do("POST", "/v1/chat/completions", req2, headers)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `The tool said {\"sky\":\"clear\"}.`) {
		t.Errorf("second turn: %d %s", resp.StatusCode, body)
	}
}

func TestVertexConfigErrors(t *testing.T) {
	h := start(t)
	fake := providertest.NewGoogle(t)
	for _, tc := range []struct {
		name    string
		opts    []option.RequestOption
		model   string
		param   string
		message string
	}{
		{"no region", []option.RequestOption{option.WithHeaderDel("x-gateway-vertex-region")}, "gemini-2.5-flash", "x-gateway-vertex-region", "region"},
		{"no project", []option.RequestOption{option.WithHeaderDel("x-gateway-vertex-project-id")}, "gemini-2.5-flash", "x-gateway-vertex-project-id", "project"},
		{"bad key file", []option.RequestOption{option.WithHeader("x-gateway-vertex-service-account-json", "{oops")}, "gemini-2.5-flash", "x-gateway-vertex-service-account-json", "service-account"},
	} {
		_, err := vertexClient(h, fake, tc.opts...).Chat.Completions.New(context.Background(), userParams(tc.model))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != tc.param || !strings.Contains(apiErr.Message, tc.message) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d upstream calls", n)
	}
}
