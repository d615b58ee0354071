package google

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
)

// generateResponse is GenerateContentResponse; each streamed event is one
// too, holding only the new parts.
type generateResponse struct {
	Candidates     []candidate     `json:"candidates"`
	PromptFeedback *promptFeedback `json:"promptFeedback"`
	UsageMetadata  *usageMetadata  `json:"usageMetadata"`
	ModelVersion   string          `json:"modelVersion"`
	ResponseID     string          `json:"responseId"`
	// Error is set on an in-stream error event.
	Error json.RawMessage `json:"error"`
}

type candidate struct {
	Content        *content        `json:"content"`
	FinishReason   string          `json:"finishReason"`
	Index          int             `json:"index"`
	LogprobsResult *logprobsResult `json:"logprobsResult"`
}

type promptFeedback struct {
	BlockReason string `json:"blockReason"`
}

type usageMetadata struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int `json:"toolUsePromptTokenCount"`
	CachedContentTokenCount int `json:"cachedContentTokenCount"`
	TotalTokenCount         int `json:"totalTokenCount"`
}

type logprobsResult struct {
	TopCandidates    []topCandidates `json:"topCandidates"`
	ChosenCandidates []lpCandidate   `json:"chosenCandidates"`
}

type topCandidates struct {
	Candidates []lpCandidate `json:"candidates"`
}

type lpCandidate struct {
	Token          string  `json:"token"`
	LogProbability float64 `json:"logProbability"`
}

// Block types of content_blocks (strict compliance off): the model turn's
// parts in order, with their thought signatures, so a client can send the
// turn back exactly (assistantParts reads them).
const (
	blockThinking     = "thinking"
	blockText         = "text"
	blockFunctionCall = "function_call"
)

type contentBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking,omitempty"`
	Text      string `json:"text,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Signature string `json:"signature,omitempty"`
}

func (b contentBlock) raw() json.RawMessage {
	// Text blocks always carry "text", even empty: they may exist only for
	// their signature.
	if b.Type == blockText {
		out, _ := json.Marshal(struct {
			Type      string `json:"type"`
			Text      string `json:"text"`
			Signature string `json:"signature,omitempty"`
		}{b.Type, b.Text, b.Signature})
		return out
	}
	out, _ := json.Marshal(b)
	return out
}

// usage normalises usageMetadata (PROVIDERS.md §0.7): prompt includes
// tool-use prompt tokens, completion includes thoughts, which Gemini
// counts apart from candidates.
func (u *usageMetadata) usage() llm.Usage {
	if u == nil {
		return llm.Usage{}
	}
	out := llm.Usage{
		PromptTokens:     u.PromptTokenCount + u.ToolUsePromptTokenCount,
		CompletionTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount,
		CachedTokens:     u.CachedContentTokenCount,
		ReasoningTokens:  u.ThoughtsTokenCount,
	}
	out.TotalTokens = out.PromptTokens + out.CompletionTokens
	if u.TotalTokenCount > out.TotalTokens {
		out.TotalTokens = u.TotalTokenCount
	}
	return out
}

// finishReason maps Candidate.finishReason (PROVIDERS.md §0.6). STOP with a
// function call is tool_calls; the safety family is content_filter; the
// rest (MALFORMED_FUNCTION_CALL, OTHER, LANGUAGE, ...) end the answer
// normally as stop.
func finishReason(native string, calledTool bool) string {
	switch native {
	case "MAX_TOKENS":
		return llm.FinishLength
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
		"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION", "MODEL_ARMOR":
		return llm.FinishContentFilter
	}
	if calledTool {
		return llm.FinishToolCalls
	}
	return llm.FinishStop
}

// toChatResponse translates a complete answer. A prompt blocked before
// generation (promptFeedback.blockReason, no candidates) becomes a 200 with
// one empty choice finished by content_filter, as OpenAI reports its own
// filtered outputs.
func (c *Client) toChatResponse(gr *generateResponse, call *provider.ChatCall) (*llm.ChatResponse, llm.Usage) {
	out := &llm.ChatResponse{
		ID:      gr.ResponseID,
		Object:  "chat.completion",
		Created: now().Unix(),
		Model:   gr.ModelVersion,
		Choices: []llm.Choice{},
	}
	if out.ID == "" {
		out.ID = newID("chatcmpl-")
	}
	if out.Model == "" {
		out.Model = call.Request.Model
	}
	wantLogprobs := call.Request.Logprobs != nil && *call.Request.Logprobs
	cands := append([]candidate(nil), gr.Candidates...)
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].Index < cands[j].Index })
	for _, cand := range cands {
		out.Choices = append(out.Choices, c.choice(&cand, call.StrictOpenAI, wantLogprobs))
	}
	if len(cands) == 0 {
		empty := ""
		out.Choices = append(out.Choices, llm.Choice{
			Message:      llm.ResponseMessage{Role: "assistant", Content: &empty},
			Logprobs:     json.RawMessage("null"),
			FinishReason: llm.FinishContentFilter,
		})
	}
	u := gr.UsageMetadata.usage()
	out.Usage = u.OpenAI()
	return out, u
}

// choice translates one candidate.
func (c *Client) choice(cand *candidate, strict, wantLogprobs bool) llm.Choice {
	var text, reasoning strings.Builder
	var calls []llm.ToolCall
	var blocks []json.RawMessage
	hasSig := false
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			hasSig = hasSig || p.ThoughtSignature != ""
			switch {
			case p.FunctionCall != nil:
				id := p.FunctionCall.ID
				if id == "" {
					id = newID("call_")
				}
				c.sigs.put(id, p.ThoughtSignature)
				calls = append(calls, llm.ToolCall{ID: id, Type: "function", Function: llm.FunctionCall{Name: p.FunctionCall.Name, Arguments: argsString(p.FunctionCall.Args)}})
				blocks = append(blocks, contentBlock{Type: blockFunctionCall, ID: id, Name: p.FunctionCall.Name, Signature: p.ThoughtSignature}.raw())
			case p.Thought:
				t := deref(p.Text)
				reasoning.WriteString(t)
				blocks = append(blocks, contentBlock{Type: blockThinking, Thinking: t, Signature: p.ThoughtSignature}.raw())
			case p.Text != nil:
				text.WriteString(*p.Text)
				if *p.Text != "" || p.ThoughtSignature != "" {
					blocks = append(blocks, contentBlock{Type: blockText, Text: *p.Text, Signature: p.ThoughtSignature}.raw())
				}
			}
		}
	}
	msg := llm.ResponseMessage{Role: "assistant", ToolCalls: calls}
	if s := text.String(); s != "" || len(calls) == 0 {
		msg.Content = &s
	}
	if !strict {
		msg.ReasoningContent = reasoning.String()
		if hasSig || reasoning.Len() > 0 {
			msg.ContentBlocks = blocks
		}
	}
	ch := llm.Choice{
		Index:        cand.Index,
		Message:      msg,
		Logprobs:     json.RawMessage("null"),
		FinishReason: finishReason(cand.FinishReason, len(calls) > 0),
	}
	if wantLogprobs && cand.LogprobsResult != nil {
		ch.Logprobs = cand.LogprobsResult.openAI()
	}
	return ch
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// argsString renders functionCall.args as OpenAI's arguments string,
// compact as OpenAI sends it.
func argsString(args json.RawMessage) string {
	if len(args) == 0 || string(args) == "null" {
		return "{}"
	}
	var b bytes.Buffer
	if err := json.Compact(&b, args); err != nil {
		return string(args)
	}
	return b.String()
}

// openAILogprob is one entry of OpenAI's logprobs.content.
type openAILogprob struct {
	Token       string             `json:"token"`
	Logprob     float64            `json:"logprob"`
	Bytes       []int              `json:"bytes"`
	TopLogprobs []openAITopLogprob `json:"top_logprobs"`
}

// openAITopLogprob is one alternative in top_logprobs.
type openAITopLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// openAI maps logprobsResult to OpenAI's {"content": [...]}: chosen
// candidates are the tokens, topCandidates at the same position their
// alternatives. Gemini gives no bytes; they are the token's UTF-8.
func (r *logprobsResult) openAI() json.RawMessage {
	entries := make([]openAILogprob, 0, len(r.ChosenCandidates))
	for i, cc := range r.ChosenCandidates {
		e := openAILogprob{Token: cc.Token, Logprob: cc.LogProbability, Bytes: utf8Bytes(cc.Token), TopLogprobs: []openAITopLogprob{}}
		if i < len(r.TopCandidates) {
			for _, alt := range r.TopCandidates[i].Candidates {
				e.TopLogprobs = append(e.TopLogprobs, openAITopLogprob{Token: alt.Token, Logprob: alt.LogProbability, Bytes: utf8Bytes(alt.Token)})
			}
		}
		entries = append(entries, e)
	}
	out, _ := json.Marshal(struct {
		Content []openAILogprob `json:"content"`
		Refusal *string         `json:"refusal"`
	}{entries, nil})
	return out
}

func utf8Bytes(s string) []int {
	out := make([]int, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = int(s[i])
	}
	return out
}
