package cohere

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
)

// chatResponse is Cohere's non-streamed v2 answer.
type chatResponse struct {
	ID           string          `json:"id"`
	FinishReason string          `json:"finish_reason"`
	Message      responseMessage `json:"message"`
	Usage        *usage          `json:"usage"`
	Logprobs     []logprobItem   `json:"logprobs"`
}

type responseMessage struct {
	Role      string            `json:"role"`
	Content   []responseContent `json:"content"`
	ToolPlan  string            `json:"tool_plan"`
	ToolCalls []toolCall        `json:"tool_calls"`
}

// responseContent is a text or thinking content item.
type responseContent struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Thinking string `json:"thinking"`
}

// usage counts are JSON numbers Cohere documents as "number", so they are
// read as floats.
type usage struct {
	BilledUnits *tokenCounts `json:"billed_units"`
	Tokens      *tokenCounts `json:"tokens"`
	// CachedTokens is the part of the prompt served from Cohere's cache.
	CachedTokens float64 `json:"cached_tokens"`
}

type tokenCounts struct {
	InputTokens  float64 `json:"input_tokens"`
	OutputTokens float64 `json:"output_tokens"`
}

// logprobItem is one generated chunk's log probabilities: the chunk's text
// and one log probability per token.
type logprobItem struct {
	Text     string    `json:"text"`
	TokenIDs []int     `json:"token_ids"`
	Logprobs []float64 `json:"logprobs"`
}

// normalizeUsage follows PROVIDERS.md §0.7: prompt tokens are
// usage.tokens.input_tokens (what the model read, template included, the
// cache included), completion tokens usage.tokens.output_tokens (thinking
// included); billed_units is the fallback when tokens is absent.
func normalizeUsage(u *usage) llm.Usage {
	if u == nil {
		return llm.Usage{}
	}
	c := u.Tokens
	if c == nil {
		c = u.BilledUnits
	}
	var out llm.Usage
	if c != nil {
		out.PromptTokens = int(math.Round(c.InputTokens))
		out.CompletionTokens = int(math.Round(c.OutputTokens))
	}
	out.CachedTokens = int(math.Round(u.CachedTokens))
	out.TotalTokens = out.PromptTokens + out.CompletionTokens
	return out
}

// finishReason maps Cohere's finish_reason (PROVIDERS.md §0.6). ok is
// false for ERROR and TIMEOUT, which become errors. An unknown reason is
// "stop", or "tool_calls" when the answer calls tools.
func finishReason(native string, hasToolCalls bool) (string, bool) {
	switch native {
	case "ERROR", "TIMEOUT":
		return "", false
	case "MAX_TOKENS":
		return llm.FinishLength, true
	case "TOOL_CALL":
		return llm.FinishToolCalls, true
	}
	if hasToolCalls {
		return llm.FinishToolCalls, true
	}
	return llm.FinishStop, true
}

// convertLogprobs renders Cohere's logprobs in OpenAI's choice.logprobs
// shape. Cohere gives a text per item with one log probability per token
// but not each token's text, so each item becomes one entry whose token
// is the item's text and whose logprob is the sum of its tokens' (the log
// probability of the whole chunk); top_logprobs is always empty.
func convertLogprobs(items []logprobItem) json.RawMessage {
	if len(items) == 0 {
		return nil
	}
	type entry struct {
		Token       string   `json:"token"`
		Logprob     float64  `json:"logprob"`
		Bytes       []int    `json:"bytes"`
		TopLogprobs []string `json:"top_logprobs"`
	}
	content := make([]entry, 0, len(items))
	for _, it := range items {
		var sum float64
		for _, lp := range it.Logprobs {
			sum += lp
		}
		b := make([]int, len(it.Text))
		for i := range len(it.Text) {
			b[i] = int(it.Text[i])
		}
		content = append(content, entry{Token: it.Text, Logprob: sum, Bytes: b, TopLogprobs: []string{}})
	}
	out, _ := json.Marshal(struct {
		Content []entry `json:"content"`
		Refusal *string `json:"refusal"`
	}{Content: content})
	return out
}

// reasoningBlocks returns the thinking items and the tool_plan as
// content_blocks, for clients with strict OpenAI compliance off to send
// back on the next turn.
func reasoningBlocks(m *responseMessage) []json.RawMessage {
	var out []json.RawMessage
	for _, c := range m.Content {
		if c.Type == "thinking" {
			b, _ := json.Marshal(struct {
				Type     string `json:"type"`
				Thinking string `json:"thinking"`
			}{"thinking", c.Thinking})
			out = append(out, b)
		}
	}
	if m.ToolPlan != "" {
		b, _ := json.Marshal(struct {
			Type     string `json:"type"`
			ToolPlan string `json:"tool_plan"`
		}{"tool_plan", m.ToolPlan})
		out = append(out, b)
	}
	return out
}

// translateResponse turns Cohere's answer into an OpenAI chat.completion.
// model is the requested model: Cohere's answer does not name one.
func translateResponse(body []byte, model string, strict bool) (*llm.ChatResponse, llm.Usage, error) {
	var cr chatResponse
	if err := json.Unmarshal(body, &cr); err != nil {
		return nil, llm.Usage{}, fmt.Errorf("%w: cohere answer is not a chat response: %v", provider.ErrBadResponse, err)
	}
	fr, ok := finishReason(cr.FinishReason, len(cr.Message.ToolCalls) > 0)
	if !ok {
		return nil, llm.Usage{}, generationError(cr.FinishReason, "")
	}
	var text, reasoning strings.Builder
	hasText := false
	for _, c := range cr.Message.Content {
		switch c.Type {
		case "text":
			text.WriteString(c.Text)
			hasText = true
		case "thinking":
			reasoning.WriteString(c.Thinking)
		}
	}
	msg := llm.ResponseMessage{Role: "assistant"}
	if hasText || len(cr.Message.ToolCalls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	for _, tc := range cr.Message.ToolCalls {
		id := tc.ID
		if id == "" {
			id = "call_" + newID()
		}
		msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: id, Type: "function", Function: llm.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
	}
	if !strict {
		// tool_plan is Cohere's chain of thought before tool calls
		// (PROVIDERS.md §7): it is reasoning, not answer text.
		if cr.Message.ToolPlan != "" {
			if reasoning.Len() > 0 {
				reasoning.WriteString("\n\n")
			}
			reasoning.WriteString(cr.Message.ToolPlan)
		}
		msg.ReasoningContent = reasoning.String()
		msg.ContentBlocks = reasoningBlocks(&cr.Message)
	}
	u := normalizeUsage(cr.Usage)
	id := cr.ID
	if id == "" {
		id = newID()
	}
	resp := &llm.ChatResponse{
		ID:      "chatcmpl-" + id,
		Object:  "chat.completion",
		Created: now().Unix(),
		Model:   model,
		Choices: []llm.Choice{{Index: 0, Message: msg, Logprobs: convertLogprobs(cr.Logprobs), FinishReason: fr}},
		Usage:   u.OpenAI(),
	}
	return resp, u, nil
}
