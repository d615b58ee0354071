package google

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
)

// generateRequest is GenerateContentRequest (Gemini API v1beta and Vertex
// v1 share it; JSON names are lowerCamelCase). The model is in the URL.
type generateRequest struct {
	Contents          []content         `json:"contents"`
	SystemInstruction *content          `json:"systemInstruction,omitempty"`
	Tools             []tool            `json:"tools,omitempty"`
	ToolConfig        *toolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
}

// content is one turn: role "user" or "model" (none for systemInstruction).
type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

// part is one Part. Text is a pointer because an empty text part that
// carries only a thoughtSignature is meaningful (PROVIDERS.md §4).
type part struct {
	Text             *string           `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	InlineData       *blob             `json:"inlineData,omitempty"`
	FileData         *fileData         `json:"fileData,omitempty"`
	FunctionCall     *functionCall     `json:"functionCall,omitempty"`
	FunctionResponse *functionResponse `json:"functionResponse,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
}

type blob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type fileData struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

type functionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type functionResponse struct {
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type tool struct {
	FunctionDeclarations []functionDeclaration `json:"functionDeclarations"`
}

type functionDeclaration struct {
	Name string `json:"name"`
	// Description is required by the Gemini API spec; an empty one is the
	// proto3 default, the same as none, so it is always sent.
	Description string `json:"description"`
	// ParametersJSONSchema takes plain JSON Schema; the older "parameters"
	// takes only Google's OpenAPI subset (no $ref, no additionalProperties),
	// so OpenAI tool schemas go here unchanged.
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type toolConfig struct {
	FunctionCallingConfig functionCallingConfig `json:"functionCallingConfig"`
}

type functionCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type generationConfig struct {
	StopSequences      []string        `json:"stopSequences,omitempty"`
	CandidateCount     *int            `json:"candidateCount,omitempty"`
	MaxOutputTokens    *int            `json:"maxOutputTokens,omitempty"`
	Temperature        *float64        `json:"temperature,omitempty"`
	TopP               *float64        `json:"topP,omitempty"`
	TopK               *int            `json:"topK,omitempty"`
	Seed               *int32          `json:"seed,omitempty"`
	PresencePenalty    *float64        `json:"presencePenalty,omitempty"`
	FrequencyPenalty   *float64        `json:"frequencyPenalty,omitempty"`
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	ResponseLogprobs   bool            `json:"responseLogprobs,omitempty"`
	Logprobs           *int            `json:"logprobs,omitempty"`
	ThinkingConfig     *thinkingConfig `json:"thinkingConfig,omitempty"`
}

type thinkingConfig struct {
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
	ThinkingBudget  *int   `json:"thinkingBudget,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
}

// maxStopSequences is Gemini's limit on generationConfig.stopSequences.
const maxStopSequences = 5

// skipSignature is the placeholder Google documents for a Gemini 3
// functionCall part whose real thought signature is lost (history from
// another model, or a client that dropped it): it skips the validator
// instead of failing the request with 400.
const skipSignature = "skip_thought_signature_validator"

// builder translates one OpenAI chat request.
type builder struct {
	c    *Client
	ctx  context.Context
	call *provider.ChatCall
	req  *llm.ChatRequest
	out  generateRequest
	// callNames maps the tool_call ids of earlier assistant messages to
	// function names: Gemini's functionResponse needs the name.
	callNames map[string]string
	dropped   map[string]bool
}

// buildRequest translates call into a GenerateContentRequest.
func (c *Client) buildRequest(ctx context.Context, call *provider.ChatCall) (*generateRequest, error) {
	b := &builder{c: c, ctx: ctx, call: call, req: call.Request, callNames: map[string]string{}, out: generateRequest{Contents: []content{}}}
	if err := b.unsupported(); err != nil {
		return nil, err
	}
	b.drops()
	for i := range b.req.Messages {
		if err := b.message(i); err != nil {
			return nil, err
		}
	}
	if err := b.tools(); err != nil {
		return nil, err
	}
	if err := b.generationConfig(); err != nil {
		return nil, err
	}
	return &b.out, nil
}

func (b *builder) unsupportedErr(param, reason string) error {
	return &provider.UnsupportedParameterError{Provider: b.c.name, Param: param, Reason: reason}
}

func (b *builder) drop(param string) {
	if b.dropped == nil {
		b.dropped = map[string]bool{}
	}
	if !b.dropped[param] {
		b.dropped[param] = true
		b.call.Drop(param)
	}
}

// unsupported rejects the fields PROVIDERS.md §0.2 says must not be
// ignored and Gemini chat models cannot honour.
func (b *builder) unsupported() error {
	r := b.req
	if len(r.Audio) > 0 {
		return b.unsupportedErr("audio", "audio output needs a Gemini TTS model and is not translated")
	}
	for _, m := range r.Modalities {
		if m != "text" {
			return b.unsupportedErr("modalities", fmt.Sprintf("output modality %q is not translated", m))
		}
	}
	if len(r.Prediction) > 0 {
		return b.unsupportedErr("prediction", "Gemini has no predicted outputs")
	}
	return nil
}

// drops records the hints Gemini has no field for (PROVIDERS.md §4).
func (b *builder) drops() {
	r := b.req
	if len(r.LogitBias) > 0 {
		b.drop("logit_bias")
	}
	if r.User != "" {
		b.drop("user")
	}
	if r.SafetyIdentifier != "" {
		b.drop("safety_identifier")
	}
	if len(r.Metadata) > 0 {
		b.drop("metadata")
	}
	if r.Store != nil {
		b.drop("store")
	}
	if r.ServiceTier != "" {
		b.drop("service_tier")
	}
	if r.PromptCacheKey != "" {
		b.drop("prompt_cache_key")
	}
	if r.PromptCacheRetention != "" {
		b.drop("prompt_cache_retention")
	}
	if len(r.PromptCacheOptions) > 0 {
		b.drop("prompt_cache_options")
	}
	if r.Verbosity != "" {
		b.drop("verbosity")
	}
	if len(r.Moderation) > 0 {
		b.drop("moderation")
	}
	if len(r.WebSearchOptions) > 0 {
		b.drop("web_search_options")
	}
	if r.ParallelToolCalls != nil && !*r.ParallelToolCalls {
		// Gemini may still return several calls in one turn.
		b.drop("parallel_tool_calls")
	}
}

// appendContent adds parts as a turn of role, merging them into the
// previous turn when it has the same role: Gemini wants alternating turns,
// and OpenAI's consecutive tool messages answer one model turn together.
func (b *builder) appendContent(role string, parts []part) {
	if len(parts) == 0 {
		return
	}
	if n := len(b.out.Contents); n > 0 && b.out.Contents[n-1].Role == role {
		b.out.Contents[n-1].Parts = append(b.out.Contents[n-1].Parts, parts...)
		return
	}
	b.out.Contents = append(b.out.Contents, content{Role: role, Parts: parts})
}

func textPart(s string) part { return part{Text: &s} }

func (b *builder) message(i int) error {
	m := &b.req.Messages[i]
	if m.Name != "" && m.Role != llm.RoleFunction {
		b.drop("messages.name")
	}
	switch m.Role {
	case llm.RoleSystem, llm.RoleDeveloper:
		text := m.Content.JoinText("\n")
		if b.out.SystemInstruction == nil {
			b.out.SystemInstruction = &content{}
		}
		b.out.SystemInstruction.Parts = append(b.out.SystemInstruction.Parts, textPart(text))
		return nil
	case llm.RoleUser:
		parts, err := b.userParts(i, m)
		if err != nil {
			return err
		}
		b.appendContent("user", parts)
		return nil
	case llm.RoleAssistant:
		parts, err := b.assistantParts(i, m)
		if err != nil {
			return err
		}
		b.appendContent("model", parts)
		return nil
	case llm.RoleTool:
		name := b.callNames[m.ToolCallID]
		if name == "" {
			return b.unsupportedErr(fmt.Sprintf("messages[%d].tool_call_id", i),
				fmt.Sprintf("%q names no tool call of an earlier assistant message; Gemini needs the function's name", m.ToolCallID))
		}
		b.appendContent("user", []part{functionResponsePart(name, m.Content.JoinText("\n"))})
		return nil
	case llm.RoleFunction:
		b.appendContent("user", []part{functionResponsePart(m.Name, m.Content.JoinText("\n"))})
		return nil
	}
	return b.unsupportedErr(fmt.Sprintf("messages[%d].role", i), fmt.Sprintf("role %q is not translated", m.Role))
}

// functionResponsePart wraps a tool result. Gemini wants a JSON object:
// a result that is one is sent as is, anything else as {"content": text}.
func functionResponsePart(name, result string) part {
	var resp json.RawMessage
	trimmed := strings.TrimSpace(result)
	if strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) {
		resp = json.RawMessage(trimmed)
	} else {
		resp, _ = json.Marshal(map[string]string{"content": result})
	}
	return part{FunctionResponse: &functionResponse{Name: name, Response: resp}}
}

func (b *builder) userParts(i int, m *llm.Message) ([]part, error) {
	switch m.Content.Kind {
	case llm.ContentString:
		return []part{textPart(m.Content.Text)}, nil
	case llm.ContentNull:
		return nil, nil
	}
	parts := make([]part, 0, len(m.Content.Parts))
	for j := range m.Content.Parts {
		cp := &m.Content.Parts[j]
		if len(cp.CacheControl) > 0 {
			// Gemini caches implicitly, or explicitly through a separate
			// cachedContents resource.
			b.drop("cache_control")
		}
		param := fmt.Sprintf("messages[%d].content[%d]", i, j)
		switch cp.Type {
		case llm.PartText:
			parts = append(parts, textPart(cp.Text))
		case llm.PartImageURL:
			if cp.ImageURL.Detail != "" && cp.ImageURL.Detail != "auto" {
				b.drop("image_url.detail")
			}
			p, err := b.c.imagePart(b.ctx, cp.ImageURL.URL, param+".image_url.url")
			if err != nil {
				return nil, err
			}
			parts = append(parts, p)
		case llm.PartInputAudio:
			parts = append(parts, part{InlineData: &blob{MimeType: audioMime(cp.InputAudio.Format), Data: cp.InputAudio.Data}})
		case llm.PartFile:
			p, err := b.c.filePart(cp.File, param+".file")
			if err != nil {
				return nil, err
			}
			parts = append(parts, p)
		default:
			return nil, b.unsupportedErr(param+".type", fmt.Sprintf("content part type %q is not translated", cp.Type))
		}
	}
	return parts, nil
}

// assistantParts rebuilds a model turn. When the client sends back the
// content_blocks this adapter returned (strict compliance off), they give
// the parts in order with their thought signatures; otherwise the text and
// tool calls are used, with the signatures remembered by tool-call id.
func (b *builder) assistantParts(i int, m *llm.Message) ([]part, error) {
	calls := m.ToolCalls
	if m.FunctionCall != nil {
		calls = append(calls[:len(calls):len(calls)], llm.ToolCall{Function: *m.FunctionCall})
	}
	callParts := make([]part, len(calls))
	for k := range calls {
		tc := &calls[k]
		args, err := toolArgs(tc.Function.Arguments)
		if err != nil {
			param := fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, k)
			if tc.ID == "" {
				param = fmt.Sprintf("messages[%d].function_call.arguments", i)
			}
			return nil, b.unsupportedErr(param, err.Error())
		}
		if tc.ID != "" {
			b.callNames[tc.ID] = tc.Function.Name
		}
		callParts[k] = part{FunctionCall: &functionCall{Name: tc.Function.Name, Args: args}, ThoughtSignature: b.c.sigs.get(tc.ID)}
	}
	text := assistantText(m)

	var parts []part
	used := make([]bool, len(calls))
	textAt := -1 // index of the first text block's part
	var joined strings.Builder
	blocks := gjson.GetBytes(b.call.Body, "messages."+strconv.Itoa(i)+".content_blocks")
	if blocks.IsArray() {
		blocks.ForEach(func(_, blk gjson.Result) bool {
			sig := blk.Get("signature").String()
			switch blk.Get("type").String() {
			case blockThinking:
				p := textPart(blk.Get("thinking").String())
				p.Thought, p.ThoughtSignature = true, sig
				parts = append(parts, p)
			case blockText:
				if textAt < 0 {
					textAt = len(parts)
				}
				t := blk.Get("text").String()
				joined.WriteString(t)
				p := textPart(t)
				p.ThoughtSignature = sig
				parts = append(parts, p)
			case blockFunctionCall:
				id := blk.Get("id").String()
				for k := range calls {
					if !used[k] && calls[k].ID == id {
						used[k] = true
						p := callParts[k]
						if sig != "" {
							p.ThoughtSignature = sig
						}
						parts = append(parts, p)
						break
					}
				}
			}
			return true
		})
	}
	switch {
	case joined.String() == text:
		// The blocks hold the text as the model wrote it.
	case joined.Len() == 0:
		// A streamed answer: its text came as content deltas and the
		// blocks only carry the signature parts (often an empty text
		// part at the end). The text goes before them, after thoughts.
		at := textAt
		if at < 0 {
			at = 0
			for at < len(parts) && parts[at].Thought {
				at++
			}
		}
		parts = append(parts[:at], append([]part{textPart(text)}, parts[at:]...)...)
	default:
		// The client changed the text: send its text once, keeping the
		// first text signature.
		kept := parts[:0]
		first := true
		for _, p := range parts {
			if p.Text != nil && !p.Thought && p.FunctionCall == nil {
				if !first {
					continue
				}
				first = false
				p.Text = &text
			}
			kept = append(kept, p)
		}
		parts = kept
	}
	firstCall := true
	for _, p := range parts {
		if p.FunctionCall != nil {
			firstCall = false
		}
	}
	for k := range calls {
		if used[k] {
			continue
		}
		p := callParts[k]
		// Gemini 3 validates the signature of the first call of a turn
		// (parallel calls carry only one).
		if firstCall && p.ThoughtSignature == "" && isGemini3(b.req.Model) {
			p.ThoughtSignature = skipSignature
		}
		firstCall = false
		parts = append(parts, p)
	}
	return parts, nil
}

// assistantText is the text of an assistant message; a replayed refusal
// counts as text, since Gemini has no refusal part.
func assistantText(m *llm.Message) string {
	if m.Content.Kind != llm.ContentParts {
		if m.Content.Text == "" && m.Refusal != "" {
			return m.Refusal
		}
		return m.Content.Text
	}
	var sb strings.Builder
	for _, p := range m.Content.Parts {
		switch p.Type {
		case llm.PartText:
			sb.WriteString(p.Text)
		case llm.PartRefusal:
			sb.WriteString(p.Refusal)
		}
	}
	return sb.String()
}

// toolArgs parses tool-call arguments into the JSON object Gemini's
// functionCall.args needs.
func toolArgs(s string) (json.RawMessage, error) {
	t := bytes.TrimSpace([]byte(s))
	if len(t) == 0 {
		return json.RawMessage("{}"), nil
	}
	if t[0] != '{' || !json.Valid(t) {
		return nil, fmt.Errorf("Gemini needs tool-call arguments that are a JSON object")
	}
	return json.RawMessage(t), nil
}

func (b *builder) tools() error {
	r := b.req
	var decls []functionDeclaration
	for i := range r.Tools {
		f := &r.Tools[i].Function
		if f.Strict != nil && *f.Strict {
			// Gemini validates calls against the schema only in VALIDATED
			// mode; strict is a request for exactness it cannot promise.
			b.drop("tools.function.strict")
		}
		decls = append(decls, functionDeclaration{Name: f.Name, Description: f.Description, ParametersJSONSchema: f.Parameters})
	}
	if len(r.Tools) == 0 {
		for i := range r.Functions {
			f := &r.Functions[i]
			decls = append(decls, functionDeclaration{Name: f.Name, Description: f.Description, ParametersJSONSchema: f.Parameters})
		}
	}
	if len(decls) > 0 {
		b.out.Tools = []tool{{FunctionDeclarations: decls}}
	}
	if tc := r.ToolChoice; tc != nil {
		cfg, err := b.toolChoice(tc)
		if err != nil {
			return err
		}
		if cfg != nil {
			b.out.ToolConfig = &toolConfig{FunctionCallingConfig: *cfg}
		}
	} else if fc := r.FunctionCall; fc != nil && len(r.Tools) == 0 {
		switch {
		case fc.Mode == "none":
			b.out.ToolConfig = &toolConfig{functionCallingConfig{Mode: "NONE"}}
		case fc.Mode == "auto":
			b.out.ToolConfig = &toolConfig{functionCallingConfig{Mode: "AUTO"}}
		case fc.Name != "":
			b.out.ToolConfig = &toolConfig{functionCallingConfig{Mode: "ANY", AllowedFunctionNames: []string{fc.Name}}}
		}
	}
	return nil
}

// toolChoice maps tool_choice to functionCallingConfig: none → NONE, auto →
// AUTO, required → ANY, a named function → ANY limited to it, and
// allowed_tools → ANY (required) or VALIDATED (auto) limited to the list.
func (b *builder) toolChoice(tc *llm.ToolChoice) (*functionCallingConfig, error) {
	switch tc.Mode {
	case "none":
		return &functionCallingConfig{Mode: "NONE"}, nil
	case "auto":
		return &functionCallingConfig{Mode: "AUTO"}, nil
	case "required":
		return &functionCallingConfig{Mode: "ANY"}, nil
	}
	switch tc.Type {
	case "function":
		return &functionCallingConfig{Mode: "ANY", AllowedFunctionNames: []string{tc.Function.Name}}, nil
	case "allowed_tools":
		at := gjson.ParseBytes(tc.AllowedTools)
		var names []string
		at.Get("tools").ForEach(func(_, t gjson.Result) bool {
			if n := t.Get("function.name").String(); n != "" {
				names = append(names, n)
			}
			return true
		})
		if len(names) == 0 {
			return nil, b.unsupportedErr("tool_choice.allowed_tools.tools", "must name at least one function")
		}
		mode := "VALIDATED"
		if at.Get("mode").String() == "required" {
			mode = "ANY"
		}
		return &functionCallingConfig{Mode: mode, AllowedFunctionNames: names}, nil
	}
	return nil, nil
}

func (b *builder) generationConfig() error {
	r := b.req
	g := &generationConfig{}
	set := false
	if n, ok := r.MaxOutputTokens(); ok {
		g.MaxOutputTokens, set = &n, true
	}
	if r.Temperature != nil {
		g.Temperature, set = r.Temperature, true
	}
	if r.TopP != nil {
		g.TopP, set = r.TopP, true
	}
	if k := gjson.GetBytes(b.call.Body, "top_k"); k.Type == gjson.Number {
		v := int(k.Int())
		g.TopK, set = &v, true
	}
	if len(r.Stop) > 0 {
		if len(r.Stop) > maxStopSequences {
			return b.unsupportedErr("stop", fmt.Sprintf("Gemini takes at most %d stop sequences", maxStopSequences))
		}
		g.StopSequences, set = r.Stop, true
	}
	if r.N != nil && *r.N > 1 {
		g.CandidateCount, set = r.N, true
	}
	if r.Seed != nil {
		// generationConfig.seed is an int32: a wider seed is folded into
		// it, so one client seed still always means one Gemini seed.
		s := *r.Seed
		v := int32(s)
		if s > math.MaxInt32 || s < math.MinInt32 {
			v = int32(uint32(s) ^ uint32(uint64(s)>>32))
		}
		g.Seed, set = &v, true
	}
	if r.PresencePenalty != nil {
		g.PresencePenalty, set = r.PresencePenalty, true
	}
	if r.FrequencyPenalty != nil {
		g.FrequencyPenalty, set = r.FrequencyPenalty, true
	}
	if f := r.ResponseFormat; f != nil {
		switch f.Type {
		case "json_object":
			g.ResponseMimeType, set = "application/json", true
		case "json_schema":
			g.ResponseMimeType, set = "application/json", true
			if f.JSONSchema != nil && len(f.JSONSchema.Schema) > 0 {
				g.ResponseJSONSchema = f.JSONSchema.Schema
			}
		}
	}
	if r.Logprobs != nil && *r.Logprobs {
		g.ResponseLogprobs, set = true, true
		if r.TopLogprobs != nil {
			g.Logprobs = r.TopLogprobs
		}
	}
	if tc := b.thinking(); tc != nil {
		g.ThinkingConfig, set = tc, true
	}
	if set {
		b.out.GenerationConfig = g
	}
	return nil
}

// thinking maps the gateway's thinking object and reasoning_effort to
// thinkingConfig. thinking wins when both are set. Gemini 3 models take
// thinkingLevel for an effort; earlier ones a token budget. Thought
// summaries (includeThoughts) are asked for only when the client can see
// them, that is with strict OpenAI compliance off.
func (b *builder) thinking() *thinkingConfig {
	r := b.req
	show := !b.call.StrictOpenAI
	if t := r.Thinking; t != nil {
		if t.Type == "disabled" {
			if isGemini3(r.Model) {
				return &thinkingConfig{ThinkingLevel: "MINIMAL"}
			}
			zero := 0
			return &thinkingConfig{ThinkingBudget: &zero}
		}
		budget := -1 // dynamic
		if t.BudgetTokens != nil {
			budget = *t.BudgetTokens
		}
		return &thinkingConfig{ThinkingBudget: &budget, IncludeThoughts: show}
	}
	effort := r.ReasoningEffort
	if effort == "" {
		return nil
	}
	if isGemini3(r.Model) {
		level := map[string]string{"none": "MINIMAL", "minimal": "MINIMAL", "low": "LOW", "medium": "MEDIUM"}[effort]
		if level == "" {
			level = "HIGH"
		}
		return &thinkingConfig{ThinkingLevel: level, IncludeThoughts: show && effort != "none"}
	}
	budget, ok := effortBudgets[effort]
	if !ok {
		budget = effortBudgets["high"]
	}
	return &thinkingConfig{ThinkingBudget: &budget, IncludeThoughts: show && budget != 0}
}

// effortBudgets are the Gemini 2.5 thinking budgets for reasoning_effort;
// 24576 is the largest budget every 2.5 model accepts.
var effortBudgets = map[string]int{
	"none":    0,
	"minimal": 512,
	"low":     1024,
	"medium":  8192,
	"high":    24576,
	"xhigh":   24576,
	"max":     24576,
}

// isGemini3 reports a Gemini 3 model, which thinks by levels and requires
// thought signatures on replayed function calls.
func isGemini3(model string) bool {
	return strings.Contains(strings.ToLower(model), "gemini-3")
}
