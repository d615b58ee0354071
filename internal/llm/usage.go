package llm

import "github.com/tidwall/gjson"

// Usage is the token accounting of one request in OpenAI semantics
// (PROVIDERS.md §0.7): prompt tokens include cached ones, completion tokens
// include reasoning ones.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CachedTokens     int `json:"cached_tokens,omitempty"`
	// CacheWriteTokens are prompt tokens written to a provider's prompt
	// cache (Anthropic, Bedrock), billed differently from plain input.
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	ReasoningTokens  int `json:"reasoning_tokens,omitempty"`
}

// IsZero reports whether no token was counted.
func (u Usage) IsZero() bool { return u == Usage{} }

// UsageFromJSON reads an OpenAI "usage" object. ok is false when the value is
// absent or null.
func UsageFromJSON(v gjson.Result) (u Usage, ok bool) {
	if !v.IsObject() {
		return Usage{}, false
	}
	u.PromptTokens = int(v.Get("prompt_tokens").Int())
	u.CompletionTokens = int(v.Get("completion_tokens").Int())
	u.TotalTokens = int(v.Get("total_tokens").Int())
	u.CachedTokens = int(v.Get("prompt_tokens_details.cached_tokens").Int())
	u.CacheWriteTokens = int(v.Get("prompt_tokens_details.cache_write_tokens").Int())
	u.ReasoningTokens = int(v.Get("completion_tokens_details.reasoning_tokens").Int())
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return u, true
}
