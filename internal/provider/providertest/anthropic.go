package providertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Anthropic is a fake Anthropic Messages API (POST /v1/messages, GET
// /v1/models) speaking the real wire format: typed SSE events with padded
// data lines and pings, Anthropic's error shape, and the request checks
// Anthropic makes that a translator can get wrong (x-api-key and
// anthropic-version headers, required max_tokens, alternating roles,
// tool_result blocks answering the previous turn's tool_use blocks, thinking
// budgets, and thinking blocks replayed with their signature on tool-use
// continuations). Behaviour is chosen by the model name as in the package
// doc, plus "refusal" (a refusal with stop_details).
type Anthropic struct {
	Server *httptest.Server

	mu sync.Mutex
	requestLog
	canceled int
}

// Usage the fake reports on every answer. Input, cache-write and
// cache-read tokens are the same for every request; output tokens depend
// on the answer: a text answer, a tool call, plus the thinking block when
// thinking is on.
const (
	AnthropicInputTokens      = 10
	AnthropicCacheWriteTokens = 3
	AnthropicCacheReadTokens  = 5
	AnthropicTextOutputTokens = 7
	AnthropicToolOutputTokens = 21
	AnthropicThinkingTokens   = 30
)

// AnthropicSignature is the signature of the fake's thinking blocks; a
// tool-use continuation with thinking on must replay it.
const AnthropicSignature = "EqQBCkYIBxgCKkBfakeSignatureForGatewayTests=="

// AnthropicThinking is the fake's thinking text.
const AnthropicThinking = "The user wants the weather. I should call the tool."

// AnthropicToolUseID is the id of the fake's tool_use block.
const AnthropicToolUseID = "toolu_01FakeWeatherCall"

// AnthropicWords are the text deltas of a plain streamed answer; joined they
// are the plain non-streamed answer.
var AnthropicWords = []string{"Hello", " from", " Claude", "."}

// NewAnthropic starts a fake and stops it when the test ends.
func NewAnthropic(t testing.TB) *Anthropic {
	f := &Anthropic{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", f.messages)
	mux.HandleFunc("GET /v1/models", f.models)
	f.Server = httptest.NewServer(f.recording(mux))
	t.Cleanup(f.Server.Close)
	return f
}

// BaseURL is the fake's base URL including /v1, for x-gateway-custom-host.
func (f *Anthropic) BaseURL() string { return f.Server.URL + "/v1" }

// Canceled reports how many streams ended because the client went away.
func (f *Anthropic) Canceled() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.canceled
}

// WriteAnthropicError writes Anthropic's error shape.
func WriteAnthropicError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_fakeerror")
	if status == http.StatusTooManyRequests {
		w.Header().Set("retry-after", "7")
		w.Header().Set("anthropic-ratelimit-requests-remaining", "0")
	}
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}, "request_id": "req_fakeerror"})
	w.Write(b)
}

// anthropicErrorType is the error.type Anthropic uses for status.
func anthropicErrorType(status int) string {
	switch status {
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 500:
		return "api_error"
	case 504:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	return "invalid_request_error"
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Signature string          `json:"signature"`
	Thinking  string          `json:"thinking"`
}

type anthropicTurn struct {
	Role    string
	Content []anthropicBlock
}

type anthropicRequest struct {
	Model       string   `json:"model"`
	MaxTokens   int      `json:"max_tokens"`
	Stream      bool     `json:"stream"`
	Temperature *float64 `json:"temperature"`
	Thinking    *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`

	turns []anthropicTurn
}

// check applies Anthropic's request rules; it returns the error message of
// the first one broken.
func (req *anthropicRequest) check() string {
	if req.Model == "" {
		return "model: Field required"
	}
	if req.MaxTokens < 1 {
		return "max_tokens: Field required"
	}
	if len(req.Messages) == 0 {
		return "messages: at least one message is required"
	}
	if t := req.Temperature; t != nil && (*t < 0 || *t > 1) {
		return "temperature: Input should be less than or equal to 1"
	}
	for i, m := range req.Messages {
		var blocks []anthropicBlock
		if len(m.Content) > 0 && m.Content[0] == '"' {
			var s string
			json.Unmarshal(m.Content, &s)
			blocks = []anthropicBlock{{Type: "text", Text: s}}
		} else if err := json.Unmarshal(m.Content, &blocks); err != nil {
			return fmt.Sprintf("messages.%d.content: Input should be a valid list", i)
		}
		if m.Role != "user" && m.Role != "assistant" {
			return fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		if i > 0 && req.Messages[i-1].Role == m.Role {
			return fmt.Sprintf("messages.%d: roles must alternate between \"user\" and \"assistant\"", i)
		}
		final := i == len(req.Messages)-1 && m.Role == "assistant"
		if len(blocks) == 0 && !final {
			return fmt.Sprintf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
		for j, b := range blocks {
			if b.Type == "text" && b.Text == "" && !final {
				return fmt.Sprintf("messages.%d.content.%d.text: text content blocks must be non-empty", i, j)
			}
		}
		req.turns = append(req.turns, anthropicTurn{Role: m.Role, Content: blocks})
	}
	for i, t := range req.turns {
		if t.Role != "user" {
			continue
		}
		var prev map[string]bool
		if i > 0 {
			prev = map[string]bool{}
			for _, b := range req.turns[i-1].Content {
				if b.Type == "tool_use" {
					prev[b.ID] = true
				}
			}
		}
		seenOther := false
		answered := map[string]bool{}
		for j, b := range t.Content {
			switch {
			case b.Type == "tool_result" && seenOther:
				return fmt.Sprintf("messages.%d.content.%d: tool_result blocks must come first in the user message", i, j)
			case b.Type == "tool_result" && !prev[b.ToolUseID]:
				return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
			case b.Type == "tool_result":
				answered[b.ToolUseID] = true
			default:
				seenOther = true
			}
		}
		for id := range prev {
			if !answered[id] {
				return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s", i-1, id)
			}
		}
	}
	if th := req.Thinking; th != nil && th.Type == "enabled" {
		if th.BudgetTokens < 1024 {
			return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
		}
		if req.MaxTokens <= th.BudgetTokens {
			return "`max_tokens` must be greater than `thinking.budget_tokens`"
		}
		// The last assistant turn of a tool-use continuation must start
		// with the thinking block Anthropic issued.
		if n := len(req.turns); n >= 2 && req.turns[n-2].Role == "assistant" {
			a := req.turns[n-2].Content
			calls := false
			for _, b := range a {
				calls = calls || b.Type == "tool_use"
			}
			if calls && (a[0].Type != "thinking" || a[0].Signature != AnthropicSignature) {
				if a[0].Type == "thinking" {
					return fmt.Sprintf("messages.%d.content.0: Invalid `signature` in `thinking` block", n-2)
				}
				return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block.", n-2, a[0].Type)
			}
		}
	}
	return ""
}

func (f *Anthropic) messages(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("x-api-key") == "" {
		WriteAnthropicError(w, 401, "authentication_error", "x-api-key header is required")
		return
	}
	if r.Header.Get("anthropic-version") == "" {
		WriteAnthropicError(w, 400, "invalid_request_error", "anthropic-version: header is required")
		return
	}
	var req anthropicRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		WriteAnthropicError(w, 400, "invalid_request_error", "There was an issue with the request body: "+err.Error())
		return
	}
	if s, ok := strings.CutPrefix(req.Model, "err-"); ok {
		status, _ := strconv.Atoi(s)
		msg := "fake upstream failure " + s
		if status == 529 {
			msg = "Overloaded"
		}
		WriteAnthropicError(w, status, anthropicErrorType(status), msg)
		return
	}
	if msg := req.check(); msg != "" {
		WriteAnthropicError(w, 400, "invalid_request_error", msg)
		return
	}
	if req.Model == "stall" {
		<-r.Context().Done()
		return
	}
	w.Header().Set("request-id", "req_fake01")
	w.Header().Set("anthropic-organization-id", "org-fake")
	w.Header().Set("anthropic-ratelimit-requests-remaining", "99")
	blocks, stop, out := f.answer(&req)
	if req.Stream {
		f.stream(w, r, &req, blocks, stop, out)
		return
	}
	content, _ := json.Marshal(blocks)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"model":%q,"id":"msg_01FakeMessage","type":"message","role":"assistant","content":%s,"stop_reason":%q,"stop_sequence":null%s,"usage":%s}`,
		req.Model, content, stop, stopDetails(stop), anthropicUsage(out))
}

func stopDetails(stop string) string {
	if stop == "refusal" {
		return `,"stop_details":{"type":"refusal","category":"cyber","explanation":"This request was refused due to policy."}`
	}
	return ""
}

// answerBlock is a content block of the fake's answer.
type answerBlock struct {
	Type      string          `json:"type"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	Text      *string         `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

func strPtr(s string) *string { return &s }

// answer picks the fake's answer: thinking first when enabled; a tool call
// when tools are offered and the last user turn holds no tool result; the
// weather after a tool result; a greeting otherwise.
func (f *Anthropic) answer(req *anthropicRequest) ([]answerBlock, string, int) {
	var blocks []answerBlock
	out := AnthropicTextOutputTokens
	if req.Thinking != nil && req.Thinking.Type == "enabled" {
		blocks = append(blocks, answerBlock{Type: "thinking", Thinking: strPtr(AnthropicThinking), Signature: strPtr(AnthropicSignature)})
		out += AnthropicThinkingTokens
	}
	last := req.turns[len(req.turns)-1]
	result := false
	for _, b := range last.Content {
		result = result || b.Type == "tool_result"
	}
	stop := "end_turn"
	switch {
	case req.Model == "refusal":
		blocks = append(blocks, answerBlock{Type: "text", Text: strPtr("")})
		stop = "refusal"
	case len(req.Tools) > 0 && !result:
		blocks = append(blocks,
			answerBlock{Type: "text", Text: strPtr("I'll check the weather.")},
			answerBlock{Type: "tool_use", ID: AnthropicToolUseID, Name: req.Tools[0].Name, Input: json.RawMessage(`{"city":"Paris"}`)})
		stop = "tool_use"
		out += AnthropicToolOutputTokens - AnthropicTextOutputTokens
	case result:
		blocks = append(blocks, answerBlock{Type: "text", Text: strPtr("It is sunny in Paris.")})
	default:
		blocks = append(blocks, answerBlock{Type: "text", Text: strPtr(strings.Join(AnthropicWords, ""))})
	}
	return blocks, stop, out
}

// anthropicUsage is the usage object with output tokens out.
func anthropicUsage(out int) string {
	return fmt.Sprintf(`{"input_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d,"cache_creation":{"ephemeral_5m_input_tokens":%d,"ephemeral_1h_input_tokens":0},"output_tokens":%d,"service_tier":"standard"}`,
		AnthropicInputTokens, AnthropicCacheWriteTokens, AnthropicCacheReadTokens, AnthropicCacheWriteTokens, out)
}

// stream writes the answer as Anthropic's typed events. Data lines carry
// trailing-space padding and a ping follows the first block start, as in
// recorded streams.
func (f *Anthropic) stream(w http.ResponseWriter, r *http.Request, req *anthropicRequest, blocks []answerBlock, stop string, out int) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	sent := 0
	cutAfter := -1
	if s, ok := strings.CutPrefix(req.Model, "cut-after-"); ok {
		cutAfter, _ = strconv.Atoi(s)
	}
	send := func(event, data string) bool {
		if sent == cutAfter {
			panic(http.ErrAbortHandler) // cut the connection mid-stream
		}
		sent++
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s%s\n\n", event, data, strings.Repeat(" ", sent%7)); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	gone := func() {
		f.mu.Lock()
		f.canceled++
		f.mu.Unlock()
	}
	if !send("message_start", fmt.Sprintf(`{"type":"message_start","message":{"model":%q,"id":"msg_01FakeMessage","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"usage":%s}}`, req.Model, anthropicUsage(1))) {
		return
	}
	for i, b := range blocks {
		switch b.Type {
		case "thinking":
			send("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"thinking","thinking":"","signature":""}}`, i))
			for _, part := range splitWords(*b.Thinking) {
				send("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"thinking_delta","thinking":%s}}`, i, jsonString(part)))
			}
			send("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"signature_delta","signature":%s}}`, i, jsonString(*b.Signature)))
		case "text":
			send("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, i))
			if i == 0 {
				send("ping", `{"type": "ping"}`)
			}
			words := splitWords(*b.Text)
			pause := time.Duration(0)
			switch req.Model {
			case "slow":
				words = make([]string, 50)
				for k := range words {
					words[k] = " w"
				}
				pause = 20 * time.Millisecond
			case "error-event":
				send("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":"Hel"}}`, i))
				send("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
				return
			}
			for _, wd := range words {
				if pause > 0 {
					select {
					case <-r.Context().Done():
						gone()
						return
					case <-time.After(pause):
					}
				}
				if !send("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, i, jsonString(wd))) {
					gone()
					return
				}
			}
		case "tool_use":
			send("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, i, b.ID, b.Name))
			in := string(b.Input)
			half := len(in) / 2
			for _, part := range []string{"", in[:half], in[half:]} {
				send("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, i, jsonString(part)))
			}
		}
		send("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
	}
	send("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null%s},"usage":%s}`, stop, stopDetails(stop), anthropicUsage(out)))
	send("message_stop", `{"type":"message_stop"}`)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// splitWords splits s before every space, keeping the spaces.
func splitWords(s string) []string {
	var out []string
	start := 0
	for i := 1; i < len(s); i++ {
		if s[i] == ' ' {
			out = append(out, s[start:i])
			start = i
		}
	}
	return append(out, s[start:])
}

func (f *Anthropic) models(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("x-api-key") == "" {
		WriteAnthropicError(w, 401, "authentication_error", "x-api-key header is required")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"data":[{"type":"model","id":"claude-sonnet-4-5-20250929","display_name":"Claude Sonnet 4.5","created_at":"2025-09-29T00:00:00Z"}],"has_more":false,"first_id":"claude-sonnet-4-5-20250929","last_id":"claude-sonnet-4-5-20250929"}`)
}
