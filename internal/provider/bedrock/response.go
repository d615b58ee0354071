package bedrock

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
)

// converseResponse is the part of ConverseResponse the gateway reads;
// unknown keys (metrics, trace, serverToolUsage, ...) are ignored.
type converseResponse struct {
	Output struct {
		Message *struct {
			Role    string          `json:"role"`
			Content []responseBlock `json:"content"`
		} `json:"message"`
	} `json:"output"`
	StopReason string     `json:"stopReason"`
	Usage      tokenUsage `json:"usage"`
}

type responseBlock struct {
	Text    *string `json:"text"`
	ToolUse *struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"toolUse"`
	ReasoningContent *reasoningContent `json:"reasoningContent"`
}

// reasoningContent is the ReasoningContentBlock union.
type reasoningContent struct {
	ReasoningText *struct {
		Text      string `json:"text"`
		Signature string `json:"signature,omitempty"`
	} `json:"reasoningText,omitempty"`
	RedactedContent string `json:"redactedContent,omitempty"`
}

// tokenUsage is TokenUsage.
type tokenUsage struct {
	InputTokens           int `json:"inputTokens"`
	OutputTokens          int `json:"outputTokens"`
	TotalTokens           int `json:"totalTokens"`
	CacheReadInputTokens  int `json:"cacheReadInputTokens"`
	CacheWriteInputTokens int `json:"cacheWriteInputTokens"`
}

// usage normalises Bedrock's usage to OpenAI's (PROVIDERS.md §0.7): like
// Anthropic's, inputTokens leaves out the tokens read from and written to
// the prompt cache, which OpenAI counts as prompt tokens.
func (u tokenUsage) usage() llm.Usage {
	prompt := u.InputTokens + u.CacheReadInputTokens + u.CacheWriteInputTokens
	return llm.Usage{
		PromptTokens: prompt, CompletionTokens: u.OutputTokens, TotalTokens: prompt + u.OutputTokens,
		CachedTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheWriteInputTokens,
	}
}

// finishReason maps a stopReason (PROVIDERS.md §0.6); anything unknown is
// "stop".
func finishReason(stop string) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return llm.FinishLength
	case "tool_use":
		return llm.FinishToolCalls
	case "guardrail_intervened", "content_filtered":
		return llm.FinishContentFilter
	}
	return llm.FinishStop
}

// reasoningBlock is the content_blocks entry for a reasoning block: the
// native block, so a client can send it back unchanged.
func reasoningBlock(rc *reasoningContent) json.RawMessage {
	b, _ := json.Marshal(struct {
		ReasoningContent *reasoningContent `json:"reasoningContent"`
	}{rc})
	return b
}

// translateResponse turns a ConverseResponse into an OpenAI
// chat.completion. With extended (strict OpenAI compliance off), reasoning
// text is added as reasoning_content and the reasoning blocks, signatures
// included, as content_blocks.
func translateResponse(raw []byte, model, id string, extended bool) ([]byte, llm.Usage, error) {
	var cr converseResponse
	if err := json.Unmarshal(raw, &cr); err != nil {
		return nil, llm.Usage{}, fmt.Errorf("%w: bedrock answered a body that is not a Converse response: %v", provider.ErrBadResponse, err)
	}
	msg := llm.ResponseMessage{Role: "assistant"}
	var text, reasoning bytes.Buffer
	if m := cr.Output.Message; m != nil {
		for _, blk := range m.Content {
			switch {
			case blk.Text != nil:
				text.WriteString(*blk.Text)
			case blk.ToolUse != nil:
				args := "{}"
				if present(blk.ToolUse.Input) {
					args = string(compactJSON(string(blk.ToolUse.Input)))
				}
				msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: blk.ToolUse.ToolUseID, Type: "function", Function: llm.FunctionCall{Name: blk.ToolUse.Name, Arguments: args}})
			case blk.ReasoningContent != nil && extended:
				if rt := blk.ReasoningContent.ReasoningText; rt != nil {
					reasoning.WriteString(rt.Text)
				}
				msg.ContentBlocks = append(msg.ContentBlocks, reasoningBlock(blk.ReasoningContent))
			}
		}
	}
	if text.Len() > 0 || len(msg.ToolCalls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	msg.ReasoningContent = reasoning.String()
	u := cr.Usage.usage()
	resp := llm.ChatResponse{
		ID: id, Object: "chat.completion", Created: now().Unix(), Model: model,
		Choices: []llm.Choice{{Index: 0, Message: msg, FinishReason: finishReason(cr.StopReason)}},
		Usage:   u.OpenAI(),
	}
	out, err := marshal(resp)
	if err != nil {
		return nil, llm.Usage{}, err
	}
	return out, u, nil
}

// marshal encodes v without HTML escaping and without a trailing newline.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("bedrock: encode answer: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
