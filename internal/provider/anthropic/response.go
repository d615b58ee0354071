package anthropic

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
)

// messageResponse is Anthropic's Message object, as far as the gateway
// reads it.
type messageResponse struct {
	ID         string            `json:"id"`
	Type       string            `json:"type"`
	Model      string            `json:"model"`
	Content    []json.RawMessage `json:"content"`
	StopReason string            `json:"stop_reason"`
	// StopDetails explains a refusal: {type:"refusal", category,
	// explanation} (fixture refusal_response.txt).
	StopDetails *stopDetails `json:"stop_details"`
	Usage       nativeUsage  `json:"usage"`
}

type stopDetails struct {
	Type        string `json:"type"`
	Explanation string `json:"explanation"`
}

// contentBlock is one response content block, as far as the gateway reads
// it.
type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
}

// nativeUsage is Anthropic's usage object. input_tokens excludes the
// cache; output_tokens includes thinking.
type nativeUsage struct {
	InputTokens              int            `json:"input_tokens"`
	CacheCreationInputTokens int            `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int            `json:"cache_read_input_tokens"`
	OutputTokens             int            `json:"output_tokens"`
	OutputTokensDetails      *outputDetails `json:"output_tokens_details"`
}

// outputDetails is usage.output_tokens_details (newer API only).
type outputDetails struct {
	ThinkingTokens int `json:"thinking_tokens"`
}

// usage normalises u per PROVIDERS.md §0.7: prompt tokens are input plus
// cache writes plus cache reads; cached tokens are the cache reads; cache
// writes are reported as such; completion tokens are output tokens
// (thinking included), with thinking_tokens as reasoning tokens where the
// API reports them.
func (u nativeUsage) usage() llm.Usage {
	out := llm.Usage{
		PromptTokens:     u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
		CompletionTokens: u.OutputTokens,
		CachedTokens:     u.CacheReadInputTokens,
		CacheWriteTokens: u.CacheCreationInputTokens,
	}
	if u.OutputTokensDetails != nil {
		out.ReasoningTokens = u.OutputTokensDetails.ThinkingTokens
	}
	out.TotalTokens = out.PromptTokens + out.CompletionTokens
	return out
}

// finishReason maps stop_reason (PROVIDERS.md §0.6). tool_use without a
// client tool call (server tools only) is a plain stop; unknown reasons
// are stop.
func finishReason(stop string, toolCalls bool) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return llm.FinishLength
	case "tool_use":
		if toolCalls {
			return llm.FinishToolCalls
		}
	case "refusal":
		return llm.FinishContentFilter
	}
	return llm.FinishStop
}

// randomID makes the id of an answer that came without a message id;
// golden tests replace it.
var randomID = rand.Text

// completionID is the OpenAI id for an Anthropic message id.
func completionID(msgID string) string {
	if msgID == "" {
		return "chatcmpl-" + randomID()
	}
	return "chatcmpl-" + msgID
}

// translateResponse turns an Anthropic Message into an OpenAI
// chat.completion: text blocks joined into content, tool_use blocks into
// tool_calls, and, with strict compliance off, thinking into
// reasoning_content and every block verbatim into content_blocks.
func translateResponse(raw []byte, strict bool) ([]byte, llm.Usage, string, error) {
	var m messageResponse
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, llm.Usage{}, "", fmt.Errorf("%w: %s answered invalid JSON: %v", provider.ErrBadResponse, Name, err)
	}
	if m.Type != "message" {
		return nil, llm.Usage{}, "", fmt.Errorf("%w: %s answered an object of type %q, not a message", provider.ErrBadResponse, Name, m.Type)
	}
	msg := llm.ResponseMessage{Role: "assistant"}
	var text, reasoning strings.Builder
	hasText := false
	for _, rb := range m.Content {
		var b contentBlock
		if err := json.Unmarshal(rb, &b); err != nil {
			return nil, llm.Usage{}, "", fmt.Errorf("%w: %s answered a malformed content block: %v", provider.ErrBadResponse, Name, err)
		}
		switch b.Type {
		case "text":
			hasText = true
			text.WriteString(b.Text)
		case "tool_use":
			args := "{}"
			if in := bytes.TrimSpace(b.Input); len(in) > 0 && string(in) != "null" {
				args = string(in)
			}
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: b.ID, Type: "function", Function: llm.FunctionCall{Name: b.Name, Arguments: args}})
		case "thinking":
			reasoning.WriteString(b.Thinking)
		}
		if !strict {
			msg.ContentBlocks = append(msg.ContentBlocks, rb)
		}
	}
	if m.StopReason == "refusal" && m.StopDetails != nil && m.StopDetails.Explanation != "" {
		r := m.StopDetails.Explanation
		msg.Refusal = &r
	}
	switch {
	case hasText:
		s := text.String()
		msg.Content = &s
	case len(msg.ToolCalls) > 0 || msg.Refusal != nil:
	default:
		s := ""
		msg.Content = &s
	}
	if !strict {
		msg.ReasoningContent = reasoning.String()
	}
	u := m.Usage.usage()
	resp := llm.ChatResponse{
		ID:      completionID(m.ID),
		Object:  "chat.completion",
		Created: now().Unix(),
		Model:   m.Model,
		Choices: []llm.Choice{{Index: 0, Message: msg, FinishReason: finishReason(m.StopReason, len(msg.ToolCalls) > 0)}},
		Usage:   u.OpenAI(),
	}
	out, err := marshal(resp)
	if err != nil {
		return nil, llm.Usage{}, "", err
	}
	return out, u, m.Model, nil
}

// marshal encodes v without HTML escaping, as OpenAI does, and without the
// encoder's trailing newline.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("anthropic: encode: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
