package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/ai-gateway/gateway/internal/provider/providertest"
)

func userParams(model string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are terse."), openai.UserMessage("Say hello.")},
	}
}

func TestChatNonStream(t *testing.T) {
	h := start(t)
	var raw *http.Response
	resp, err := h.client().Chat.Completions.New(context.Background(), userParams("gpt-4.1-mini"), option.WithResponseInto(&raw))
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if got := resp.Choices[0].Message.Content; got != "Hello from choice 0." {
		t.Errorf("content = %q", got)
	}
	if resp.Usage.PromptTokens != 12 || resp.Usage.CompletionTokens != 5 || resp.Usage.TotalTokens != 17 {
		t.Errorf("usage = %+v", resp.Usage)
	}
	reqID := raw.Header.Get("x-gateway-request-id")
	if reqID == "" || raw.Header.Get("x-gateway-trace-id") != reqID {
		t.Errorf("request id %q, trace id %q: want a generated trace id equal to the request id", reqID, raw.Header.Get("x-gateway-trace-id"))
	}
	if raw.Header.Get("x-gateway-provider") != "openai" || raw.Header.Get("x-request-id") != "req_fake123" {
		t.Errorf("headers: provider %q, upstream x-request-id %q", raw.Header.Get("x-gateway-provider"), raw.Header.Get("x-request-id"))
	}
	last := h.up.Last()
	if last.Header.Get("Authorization") != "Bearer sk-provider-test" {
		t.Errorf("upstream Authorization = %q", last.Header.Get("Authorization"))
	}
	for k := range last.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-gateway-") {
			t.Errorf("gateway header %s forwarded upstream", k)
		}
	}
	rec := h.logRecord(reqID)
	if rec["status_code"] != 200.0 || rec["provider"] != "openai" || rec["model"] != "gpt-4.1-mini" || rec["model_served"] != "gpt-4.1-mini-2025-04-14" || rec["is_success"] != true {
		t.Errorf("record = %v", rec)
	}
	if u := rec["usage"].(map[string]any); u["prompt_tokens"] != 12.0 || u["completion_tokens"] != 5.0 || u["total_tokens"] != 17.0 {
		t.Errorf("record usage = %v", u)
	}
	if !strings.Contains(rec["request_body"].(string), "Say hello.") || !strings.Contains(rec["response_body"].(string), "Hello from choice 0.") {
		t.Errorf("record bodies = %q / %q", rec["request_body"], rec["response_body"])
	}
	if rec["latency_ms"].(float64) < rec["upstream_latency_ms"].(float64) {
		t.Errorf("latency %v < upstream latency %v", rec["latency_ms"], rec["upstream_latency_ms"])
	}
}

// TestChatForwardsBodyBytes checks the client's bytes reach an
// OpenAI-compatible provider unchanged, unknown fields included.
func TestChatForwardsBodyBytes(t *testing.T) {
	h := start(t)
	body := `{"model":"gpt-4.1-mini","messages":[{"role":"user","content":"hi"}],"vendor_extension":{"x":1},  "temperature":0.2}`
	resp, out := h.do("POST", "/v1/chat/completions", body, h.routing())
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	if got := string(h.up.Last().Body); got != body {
		t.Errorf("upstream body = %s\nwant %s", got, body)
	}
}

func streamParams(model string, includeUsage bool) openai.ChatCompletionNewParams {
	p := userParams(model)
	if includeUsage {
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}
	return p
}

func TestChatStreamWithoutIncludeUsage(t *testing.T) {
	h := start(t)
	var raw *http.Response
	stream := h.client().Chat.Completions.NewStreaming(context.Background(), streamParams("gpt-4.1-mini", false), option.WithResponseInto(&raw))
	var text strings.Builder
	chunks := 0
	for stream.Next() {
		ch := stream.Current()
		chunks++
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
	if got := text.String(); got != strings.Join(providertest.StreamWords, "") {
		t.Errorf("text = %q", got)
	}
	if raw.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("content type %q", raw.Header.Get("Content-Type"))
	}
	var sent map[string]any
	json.Unmarshal(h.up.Last().Body, &sent)
	if so, _ := sent["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("gateway did not request usage upstream: %s", h.up.Last().Body)
	}
	rec := h.logRecord(raw.Header.Get("x-gateway-request-id"))
	if u := rec["usage"].(map[string]any); u["total_tokens"] != 18.0 {
		t.Errorf("record usage = %v, want the usage captured from the hidden chunk", u)
	}
	if rec["is_streaming"] != true || rec["ttft_ms"] == nil {
		t.Errorf("record = %v", rec)
	}
}

func TestChatStreamWithIncludeUsage(t *testing.T) {
	h := start(t)
	stream := h.client().Chat.Completions.NewStreaming(context.Background(), streamParams("gpt-4.1-mini", true))
	var chunks []openai.ChatCompletionChunk
	for stream.Next() {
		chunks = append(chunks, stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	last := chunks[len(chunks)-1]
	if len(last.Choices) != 0 || last.Usage.TotalTokens != 18 {
		t.Fatalf("last chunk = %s, want the usage chunk", last.RawJSON())
	}
	for _, ch := range chunks[:len(chunks)-1] {
		if !strings.Contains(ch.RawJSON(), `"usage":null`) {
			t.Errorf("chunk without usage:null: %s", ch.RawJSON())
		}
	}
	if chunks[len(chunks)-2].Choices[0].FinishReason != "stop" {
		t.Errorf("finish reason chunk = %s", chunks[len(chunks)-2].RawJSON())
	}
}

// TestChatStreamRawFraming checks the exact SSE framing: data-only events,
// [DONE] last.
func TestChatStreamRawFraming(t *testing.T) {
	h := start(t)
	resp, body := h.do("POST", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, h.routing())
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	events := strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n")
	for _, e := range events {
		if !strings.HasPrefix(e, "data: ") || strings.Contains(e, "\n") {
			t.Errorf("event not a single data line: %q", e)
		}
	}
	if events[len(events)-1] != "data: [DONE]" {
		t.Errorf("last event = %q", events[len(events)-1])
	}
}

var weatherTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:        "get_weather",
	Description: openai.String("Get current weather"),
	Parameters:  shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
})

func TestChatToolRoundTrip(t *testing.T) {
	h := start(t)
	c := h.client()
	p := userParams("gpt-4.1-mini")
	p.Tools = []openai.ChatCompletionToolUnionParam{weatherTool}
	first, err := c.Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	calls := first.Choices[0].Message.ToolCalls
	if first.Choices[0].FinishReason != "tool_calls" || len(calls) != 1 || calls[0].Function.Name != "get_weather" || calls[0].Function.Arguments != `{"city":"Paris"}` {
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
	}
	json.Unmarshal(h.up.Last().Body, &sent)
	if n := len(sent.Messages); n != 4 || sent.Messages[3]["tool_call_id"] != calls[0].ID {
		t.Errorf("upstream messages = %v", sent.Messages)
	}

	// The same call streamed, accumulated by the SDK.
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4.1-mini", Messages: p.Messages[:2], Tools: p.Tools})
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	tc := acc.Choices[0].Message.ToolCalls
	if len(tc) != 1 || tc[0].Function.Arguments != `{"city":"Paris"}` || acc.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("accumulated = %+v", acc.Choices[0])
	}
}

func TestChatNAndLogprobs(t *testing.T) {
	h := start(t)
	p := userParams("gpt-4.1-mini")
	p.N = openai.Int(3)
	p.Logprobs = openai.Bool(true)
	p.TopLogprobs = openai.Int(1)
	resp, err := h.client().Chat.Completions.New(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 3 || resp.Choices[2].Index != 2 {
		t.Fatalf("choices = %d", len(resp.Choices))
	}
	lp := resp.Choices[1].Logprobs.Content
	if len(lp) != 1 || lp[0].Token != "Hello" || len(lp[0].TopLogprobs) != 1 {
		t.Errorf("logprobs = %+v", resp.Choices[1].Logprobs)
	}
}

func TestChatUpstreamErrors(t *testing.T) {
	h := start(t)
	for _, tc := range []struct {
		model  string
		status int
		typ    string
	}{
		{"err-400", 400, "invalid_request_error"},
		{"err-401", 401, "invalid_request_error"},
		{"err-404", 404, "invalid_request_error"},
		{"err-429", 429, "invalid_request_error"},
		{"err-500", 500, "server_error"},
		{"err-503", 503, "server_error"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			_, err := h.client().Chat.Completions.New(context.Background(), userParams(tc.model))
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status {
				t.Fatalf("err = %v, want status %d", err, tc.status)
			}
			if apiErr.Message != "fake upstream failure "+tc.model[4:] || apiErr.Type != tc.typ || apiErr.Code != "upstream_"+tc.model[4:] {
				t.Errorf("error = %s", apiErr.RawJSON())
			}
			resp, body := h.do("POST", "/v1/chat/completions", `{"model":"`+tc.model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`, h.routing())
			if resp.StatusCode != tc.status || decode(t, body)["provider"] != "openai" {
				t.Errorf("stream: status %d body %s", resp.StatusCode, body)
			}
			if tc.status == 429 && (resp.Header.Get("Retry-After") != "1" || resp.Header.Get("x-ratelimit-remaining-requests") != "0") {
				t.Errorf("429 without the provider's retry headers: %v", resp.Header)
			}
			rec := h.logRecord(resp.Header.Get("x-gateway-request-id"))
			if rec["status_code"] != float64(tc.status) || rec["is_success"] != false {
				t.Errorf("record = %v", rec)
			}
		})
	}
}

func TestChatUpstreamUnreachableAndTimeout(t *testing.T) {
	h := start(t)
	hdr := h.routing()
	hdr["x-gateway-custom-host"] = "http://127.0.0.1:1/v1"
	resp, body := h.do("POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, hdr)
	if resp.StatusCode != 502 || errorField(t, body, "type") != "upstream_error" {
		t.Errorf("unreachable: %d %s", resp.StatusCode, body)
	}
	hdr = h.routing()
	hdr["x-gateway-request-timeout"] = "200"
	start := time.Now()
	resp, body = h.do("POST", "/v1/chat/completions", `{"model":"stall","messages":[{"role":"user","content":"hi"}]}`, hdr)
	if resp.StatusCode != 504 || errorField(t, body, "type") != "timeout_error" {
		t.Errorf("stall: %d %s", resp.StatusCode, body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("timeout took %v", d)
	}
}

// TestChatStreamCutAfterFirstByte: an upstream failure after the first
// byte must not look like a complete stream: the client gets an error event,
// no [DONE], and an aborted connection.
func TestChatStreamCutAfterFirstByte(t *testing.T) {
	h := start(t)
	for _, model := range []string{"cut-after-2", "error-event"} {
		t.Run(model, func(t *testing.T) {
			stream := h.client().Chat.Completions.NewStreaming(context.Background(), streamParams(model, false))
			n := 0
			for stream.Next() {
				n++
			}
			if stream.Err() == nil {
				t.Fatalf("SDK saw a clean end after %d chunks", n)
			}
			req, _ := http.NewRequest("POST", h.base+"/v1/chat/completions", strings.NewReader(`{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
			for k, v := range h.routing() {
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
			if strings.Contains(string(body), "[DONE]") || !strings.Contains(string(body), `data: {"error"`) {
				t.Errorf("body = %s", body)
			}
			rec := h.logRecord(resp.Header.Get("x-gateway-request-id"))
			if rec["is_success"] != false || rec["status_code"] != 502.0 {
				t.Errorf("record = %v", rec)
			}
		})
	}
}

func TestChatClientDisconnectCancelsUpstream(t *testing.T) {
	h := start(t)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", h.base+"/v1/chat/completions", strings.NewReader(`{"model":"slow","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	for k, v := range h.routing() {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Header.Get("x-gateway-request-id")
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for h.up.Canceled() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("upstream stream was not cancelled after the client left")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if rec := h.logRecord(id); rec["status_code"] != 499.0 {
		t.Errorf("record = %v, want status 499", rec)
	}
}

func TestChatValidationBeforeProviderCall(t *testing.T) {
	h := start(t)
	before := len(h.up.Requests())
	for _, tc := range []struct{ body, param string }{
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":5}`, "temperature"},
		{`{"model":"m","messages":[]}`, "messages"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"n":0}`, "n"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"top_logprobs":3}`, "top_logprobs"},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":["a","b","c","d","e"]}`, "stop"},
		{`{"messages":[{"role":"user","content":"hi"}]}`, "model"},
		{`{"model":"m","messages":`, ""},
	} {
		resp, body := h.do("POST", "/v1/chat/completions", tc.body, h.routing())
		if resp.StatusCode != 400 || errorField(t, body, "type") != "invalid_request_error" {
			t.Errorf("%s: %d %s", tc.body, resp.StatusCode, body)
			continue
		}
		if p, _ := errorField(t, body, "param").(string); p != tc.param {
			t.Errorf("%s: param %q, want %q", tc.body, p, tc.param)
		}
	}
	if after := len(h.up.Requests()); after != before {
		t.Errorf("provider called %d times for invalid requests", after-before)
	}
}
