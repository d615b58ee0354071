package llm

import "encoding/json"

// ChatResponse is an OpenAI chat.completion, as translating adapters build
// it from a provider's native answer.
type ChatResponse struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"` // "chat.completion"
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []Choice     `json:"choices"`
	Usage             *OpenAIUsage `json:"usage,omitempty"`
	SystemFingerprint string       `json:"system_fingerprint,omitempty"`
}

// Choice is one answer of a ChatResponse.
type Choice struct {
	Index   int             `json:"index"`
	Message ResponseMessage `json:"message"`
	// Logprobs is null unless the provider returned log probabilities.
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

// ResponseMessage is the assistant message of a Choice. Content is null
// when the model only called tools. ReasoningContent and ContentBlocks are
// set only when strict OpenAI compliance is off (SPEC.md, API.md §3).
type ResponseMessage struct {
	Role             string            `json:"role"`
	Content          *string           `json:"content"`
	Refusal          *string           `json:"refusal"`
	ToolCalls        []ToolCall        `json:"tool_calls,omitempty"`
	ReasoningContent string            `json:"reasoning_content,omitempty"`
	ContentBlocks    []json.RawMessage `json:"content_blocks,omitempty"`
}

// ChatChunk is an OpenAI chat.completion.chunk. Translating adapters always
// stream in include_usage form: "usage": null on every chunk, then one
// usage chunk with empty choices before the end; the gateway hides the
// usage from clients that did not ask for it.
type ChatChunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"` // "chat.completion.chunk"
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	SystemFingerprint string        `json:"system_fingerprint,omitempty"`
	Choices           []ChunkChoice `json:"choices"`
	Usage             *OpenAIUsage  `json:"usage"`
}

// ChunkChoice is one choice's delta in a ChatChunk.
type ChunkChoice struct {
	Index        int             `json:"index"`
	Delta        Delta           `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

// Delta is the increment of a streamed message. The first delta of a
// choice carries Role "assistant" and an empty Content.
type Delta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	Refusal          *string         `json:"refusal,omitempty"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCallDelta `json:"tool_calls,omitempty"`
	// ContentBlocks carries provider blocks (thinking signatures) with
	// strict OpenAI compliance off.
	ContentBlocks []json.RawMessage `json:"content_blocks,omitempty"`
}

// ToolCallDelta is a streamed fragment of a tool call: the first fragment
// has ID, Type and Function.Name; later ones append Function.Arguments.
type ToolCallDelta struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function FunctionDelta `json:"function"`
}

// FunctionDelta is the function part of a ToolCallDelta.
type FunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// OpenAIUsage is the usage object in OpenAI's wire shape.
type OpenAIUsage struct {
	PromptTokens            int                      `json:"prompt_tokens"`
	CompletionTokens        int                      `json:"completion_tokens"`
	TotalTokens             int                      `json:"total_tokens"`
	PromptTokensDetails     *PromptTokensDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
}

// PromptTokensDetails breaks prompt tokens down.
type PromptTokensDetails struct {
	CachedTokens     int `json:"cached_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
}

// CompletionTokensDetails breaks completion tokens down.
type CompletionTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// OpenAI renders u in OpenAI's wire shape, with the details objects.
func (u Usage) OpenAI() *OpenAIUsage {
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	return &OpenAIUsage{
		PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: total,
		PromptTokensDetails:     &PromptTokensDetails{CachedTokens: u.CachedTokens, CacheWriteTokens: u.CacheWriteTokens},
		CompletionTokensDetails: &CompletionTokensDetails{ReasoningTokens: u.ReasoningTokens},
	}
}

// Finish reasons (SPEC.md "Chat completion response").
const (
	FinishStop          = "stop"
	FinishLength        = "length"
	FinishToolCalls     = "tool_calls"
	FinishContentFilter = "content_filter"
	FinishFunctionCall  = "function_call"
)
