package bedrock

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
)

// converseRequest is the JSON body of Converse and ConverseStream
// (smithy ConverseRequest; the modelId travels in the path).
type converseRequest struct {
	Messages                     []message         `json:"messages"`
	System                       []systemBlock     `json:"system,omitempty"`
	InferenceConfig              *inferenceConfig  `json:"inferenceConfig,omitempty"`
	ToolConfig                   *toolConfig       `json:"toolConfig,omitempty"`
	AdditionalModelRequestFields map[string]any    `json:"additionalModelRequestFields,omitempty"`
	RequestMetadata              map[string]string `json:"requestMetadata,omitempty"`
	// OutputConfig is structured output, newer than the Oct 2025 model
	// (specs/README.md "Bedrock model age").
	OutputConfig *outputConfig `json:"outputConfig,omitempty"`
}

type message struct {
	Role    string         `json:"role"`
	Content []contentBlock `json:"content"`
}

// contentBlock is the ContentBlock union: exactly one field is set.
type contentBlock struct {
	Text             *string          `json:"text,omitempty"`
	Image            *imageBlock      `json:"image,omitempty"`
	Document         *documentBlock   `json:"document,omitempty"`
	ToolUse          *toolUseBlock    `json:"toolUse,omitempty"`
	ToolResult       *toolResultBlock `json:"toolResult,omitempty"`
	ReasoningContent json.RawMessage  `json:"reasoningContent,omitempty"`
	CachePoint       *cachePoint      `json:"cachePoint,omitempty"`
}

type systemBlock struct {
	Text       string      `json:"text,omitempty"`
	CachePoint *cachePoint `json:"cachePoint,omitempty"`
}

type cachePoint struct {
	Type string `json:"type"`
}

var defaultCachePoint = &cachePoint{Type: "default"}

type imageBlock struct {
	Format string      `json:"format"`
	Source bytesSource `json:"source"`
}

type documentBlock struct {
	Format string      `json:"format"`
	Name   string      `json:"name"`
	Source bytesSource `json:"source"`
}

// bytesSource is {bytes: <base64>}: restJson1 sends blobs as base64.
type bytesSource struct {
	Bytes string `json:"bytes"`
}

type toolUseBlock struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

type toolResultBlock struct {
	ToolUseID string              `json:"toolUseId"`
	Content   []toolResultContent `json:"content"`
}

type toolResultContent struct {
	JSON json.RawMessage `json:"json,omitempty"`
	Text *string         `json:"text,omitempty"`
}

type inferenceConfig struct {
	MaxTokens     *int     `json:"maxTokens,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty"`
	TopP          *float64 `json:"topP,omitempty"`
	StopSequences []string `json:"stopSequences,omitempty"`
}

type toolConfig struct {
	Tools      []tool      `json:"tools"`
	ToolChoice *toolChoice `json:"toolChoice,omitempty"`
}

type tool struct {
	ToolSpec toolSpec `json:"toolSpec"`
}

type toolSpec struct {
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	InputSchema inputSchema `json:"inputSchema"`
}

type inputSchema struct {
	JSON json.RawMessage `json:"json"`
}

type toolChoice struct {
	Auto *struct{}  `json:"auto,omitempty"`
	Any  *struct{}  `json:"any,omitempty"`
	Tool *namedTool `json:"tool,omitempty"`
}

type namedTool struct {
	Name string `json:"name"`
}

type outputConfig struct {
	TextFormat textFormat `json:"textFormat"`
}

type textFormat struct {
	Type      string          `json:"type"`
	Structure formatStructure `json:"structure"`
}

type formatStructure struct {
	JSONSchema jsonSchemaFormat `json:"jsonSchema"`
}

type jsonSchemaFormat struct {
	// Schema is the JSON Schema as a JSON string, not an object.
	Schema      string `json:"schema"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
}

// maxImageBytes caps an image the gateway downloads to inline (PROVIDERS.md
// §0.5: Bedrock takes no URLs; requests are limited to about 20 MB).
const maxImageBytes = 20 << 20

// noToolsNote is appended to the system prompt when the conversation holds
// tool calls but the client allows none this turn: Bedrock rejects toolUse
// and toolResult blocks without a toolConfig and has no tool_choice "none",
// so the tools stay declared and the model is told not to use them.
const noToolsNote = "Do not call any tool in this response; answer with text only."

// Reasoning budgets for reasoning_effort on Claude models (thinking
// budget_tokens; Anthropic's minimum is 1024).
var effortBudget = map[string]int{
	"minimal": 1024,
	"low":     2048,
	"medium":  8192,
	"high":    16384,
	"xhigh":   24576,
	"max":     32000,
}

// defaultThinkingBudget is used for thinking {type: enabled} without a
// budget.
const defaultThinkingBudget = 8192

// builder translates one chat request.
type builder struct {
	c    *Client
	ctx  context.Context
	call *provider.ChatCall
	req  *llm.ChatRequest
	out  converseRequest
	// docNames keeps document names unique within the request, as Bedrock
	// requires.
	docNames map[string]bool
	// toolHistory is set when a message carries toolUse or toolResult;
	// toolNames are the tool names those calls used.
	toolHistory bool
	toolNames   []string
}

// buildRequest translates call to a Converse body.
func (c *Client) buildRequest(ctx context.Context, call *provider.ChatCall) ([]byte, error) {
	b := &builder{c: c, ctx: ctx, call: call, req: call.Request}
	if err := b.build(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&b.out); err != nil {
		return nil, fmt.Errorf("bedrock: encode request: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func unsupported(param, reason string) error {
	return &provider.UnsupportedParameterError{Provider: Name, Param: param, Reason: reason}
}

func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && string(raw) != "null"
}

func (b *builder) build() error {
	if err := b.rejectUnsupported(); err != nil {
		return err
	}
	b.dropHints()
	if err := b.messages(); err != nil {
		return err
	}
	b.inference()
	if err := b.tools(); err != nil {
		return err
	}
	b.reasoning()
	b.responseFormat()
	b.metadata()
	if b.out.Messages == nil {
		b.out.Messages = []message{}
	}
	return nil
}

// rejectUnsupported answers 400 for fields whose loss would change the
// answer (PROVIDERS.md §0.2).
func (b *builder) rejectUnsupported() error {
	r := b.req
	switch {
	case r.N != nil && *r.N > 1:
		return unsupported("n", "Bedrock Converse returns one choice")
	case r.Logprobs != nil && *r.Logprobs:
		return unsupported("logprobs", "Bedrock Converse returns no log probabilities")
	case r.TopLogprobs != nil && *r.TopLogprobs > 0:
		return unsupported("top_logprobs", "Bedrock Converse returns no log probabilities")
	case present(r.Audio):
		return unsupported("audio", "Bedrock Converse has no audio output")
	case present(r.Prediction):
		return unsupported("prediction", "Bedrock Converse has no predicted outputs")
	case len(r.Functions) > 0:
		return unsupported("functions", "use tools instead of the deprecated functions")
	case r.FunctionCall != nil:
		return unsupported("function_call", "use tool_choice instead of the deprecated function_call")
	}
	for _, m := range r.Modalities {
		if m != "text" {
			return unsupported("modalities", "Bedrock Converse answers text only")
		}
	}
	return nil
}

// dropHints records the hint fields Bedrock cannot take.
func (b *builder) dropHints() {
	r, call := b.req, b.call
	if r.Seed != nil {
		call.Drop("seed")
	}
	if r.FrequencyPenalty != nil {
		call.Drop("frequency_penalty")
	}
	if r.PresencePenalty != nil {
		call.Drop("presence_penalty")
	}
	if len(r.LogitBias) > 0 {
		call.Drop("logit_bias")
	}
	if r.Store != nil {
		call.Drop("store")
	}
	if r.ServiceTier != "" {
		call.Drop("service_tier")
	}
	if r.PromptCacheKey != "" {
		call.Drop("prompt_cache_key")
	}
	if r.PromptCacheRetention != "" {
		call.Drop("prompt_cache_retention")
	}
	if present(r.PromptCacheOptions) {
		call.Drop("prompt_cache_options")
	}
	if r.SafetyIdentifier != "" {
		call.Drop("safety_identifier")
	}
	if r.Verbosity != "" {
		call.Drop("verbosity")
	}
	if present(r.WebSearchOptions) {
		call.Drop("web_search_options")
	}
	if present(r.Moderation) {
		call.Drop("moderation")
	}
	if r.ParallelToolCalls != nil && !*r.ParallelToolCalls {
		call.Drop("parallel_tool_calls")
	}
}

// add appends blocks as a turn of role, merging with the previous turn of
// the same role: Bedrock wants alternating turns.
func (b *builder) add(role string, blocks []contentBlock) {
	if len(blocks) == 0 {
		return
	}
	if n := len(b.out.Messages); n > 0 && b.out.Messages[n-1].Role == role {
		b.out.Messages[n-1].Content = append(b.out.Messages[n-1].Content, blocks...)
		return
	}
	b.out.Messages = append(b.out.Messages, message{Role: role, Content: blocks})
}

func textBlock(s string) contentBlock { return contentBlock{Text: &s} }

func (b *builder) messages() error {
	droppedName := false
	for i := range b.req.Messages {
		m := &b.req.Messages[i]
		if m.Name != "" && !droppedName {
			b.call.Drop("messages[].name")
			droppedName = true
		}
		switch m.Role {
		case llm.RoleSystem, llm.RoleDeveloper:
			if err := b.system(i, m); err != nil {
				return err
			}
		case llm.RoleUser:
			blocks, err := b.userBlocks(i, m.Content)
			if err != nil {
				return err
			}
			b.add("user", blocks)
		case llm.RoleAssistant:
			blocks, err := b.assistantBlocks(i, m)
			if err != nil {
				return err
			}
			b.add("assistant", blocks)
		case llm.RoleTool:
			b.add("user", []contentBlock{b.toolResult(m)})
		default:
			return unsupported(fmt.Sprintf("messages[%d].role", i), fmt.Sprintf("role %q is not supported; use tool messages", m.Role))
		}
	}
	return nil
}

// system gathers system and developer messages, wherever they are, into
// the top-level system blocks; a cache_control marker on a part becomes a
// cachePoint after it.
func (b *builder) system(i int, m *llm.Message) error {
	switch m.Content.Kind {
	case llm.ContentString:
		if m.Content.Text != "" {
			b.out.System = append(b.out.System, systemBlock{Text: m.Content.Text})
		}
	case llm.ContentParts:
		for j, p := range m.Content.Parts {
			if p.Type != llm.PartText {
				return unsupported(fmt.Sprintf("messages[%d].content[%d]", i, j), "system messages take text parts only")
			}
			if p.Text != "" {
				b.out.System = append(b.out.System, systemBlock{Text: p.Text})
			}
			if present(p.CacheControl) {
				b.out.System = append(b.out.System, systemBlock{CachePoint: defaultCachePoint})
			}
		}
	}
	return nil
}

func (b *builder) userBlocks(i int, c llm.MessageContent) ([]contentBlock, error) {
	switch c.Kind {
	case llm.ContentString:
		if c.Text == "" {
			return nil, nil
		}
		return []contentBlock{textBlock(c.Text)}, nil
	case llm.ContentParts:
		blocks := make([]contentBlock, 0, len(c.Parts))
		for j := range c.Parts {
			p := &c.Parts[j]
			param := fmt.Sprintf("messages[%d].content[%d]", i, j)
			switch p.Type {
			case llm.PartText:
				if p.Text != "" {
					blocks = append(blocks, textBlock(p.Text))
				}
			case llm.PartRefusal:
				if p.Refusal != "" {
					blocks = append(blocks, textBlock(p.Refusal))
				}
			case llm.PartImageURL:
				if p.ImageURL == nil {
					return nil, unsupported(param+".image_url", "image_url is required")
				}
				img, err := b.image(param+".image_url", p.ImageURL.URL)
				if err != nil {
					return nil, err
				}
				blocks = append(blocks, contentBlock{Image: img})
			case llm.PartFile:
				doc, err := b.document(param+".file", p.File)
				if err != nil {
					return nil, err
				}
				blocks = append(blocks, contentBlock{Document: doc})
			case llm.PartInputAudio:
				return nil, unsupported(param+".input_audio", "Bedrock Converse takes no audio input")
			default:
				return nil, unsupported(param, fmt.Sprintf("content part type %q is not supported", p.Type))
			}
			if present(p.CacheControl) {
				blocks = append(blocks, contentBlock{CachePoint: defaultCachePoint})
			}
		}
		return blocks, nil
	}
	return nil, nil
}

// assistantBlocks replays an assistant turn: reasoning blocks the client
// sent back in content_blocks (with their signatures), then text, then
// tool calls.
func (b *builder) assistantBlocks(i int, m *llm.Message) ([]contentBlock, error) {
	blocks := b.replayedReasoning(i)
	switch m.Content.Kind {
	case llm.ContentString:
		if m.Content.Text != "" {
			blocks = append(blocks, textBlock(m.Content.Text))
		}
	case llm.ContentParts:
		for _, p := range m.Content.Parts {
			switch {
			case p.Type == llm.PartText && p.Text != "":
				blocks = append(blocks, textBlock(p.Text))
			case p.Type == llm.PartRefusal && p.Refusal != "":
				blocks = append(blocks, textBlock(p.Refusal))
			}
		}
	}
	if m.Refusal != "" && m.Content.IsNull() {
		blocks = append(blocks, textBlock(m.Refusal))
	}
	for j, tc := range m.ToolCalls {
		input := json.RawMessage(`{}`)
		if args := strings.TrimSpace(tc.Function.Arguments); args != "" {
			if !json.Valid([]byte(args)) {
				return nil, unsupported(fmt.Sprintf("messages[%d].tool_calls[%d].function.arguments", i, j), "Bedrock needs tool arguments that are valid JSON")
			}
			input = compactJSON(args)
		}
		blocks = append(blocks, contentBlock{ToolUse: &toolUseBlock{ToolUseID: toolUseID(tc.ID), Name: tc.Function.Name, Input: input}})
		b.noteTool(tc.Function.Name)
	}
	return blocks, nil
}

func (b *builder) noteTool(name string) {
	b.toolHistory = true
	for _, n := range b.toolNames {
		if n == name {
			return
		}
	}
	if name != "" {
		b.toolNames = append(b.toolNames, name)
	}
}

// replayedReasoning reads messages[i].content_blocks from the client's
// body: the blocks this adapter returned with strict compliance off
// ({"reasoningContent": ...}), or Anthropic-style thinking and
// redacted_thinking blocks. Bedrock needs them, signatures included, to
// continue a thinking model's tool use.
func (b *builder) replayedReasoning(i int) []contentBlock {
	cb := gjson.GetBytes(b.call.Body, fmt.Sprintf("messages.%d.content_blocks", i))
	if !cb.IsArray() {
		return nil
	}
	var blocks []contentBlock
	for _, v := range cb.Array() {
		var rc *reasoningContent
		text := func(t, sig string) *reasoningContent {
			rc := &reasoningContent{}
			rc.ReasoningText = &struct {
				Text      string `json:"text"`
				Signature string `json:"signature,omitempty"`
			}{t, sig}
			return rc
		}
		switch rcv := v.Get("reasoningContent"); {
		case rcv.IsObject():
			if t := rcv.Get("reasoningText"); t.IsObject() && t.Get("text").Type == gjson.String {
				rc = text(t.Get("text").String(), t.Get("signature").String())
			} else if r := rcv.Get("redactedContent"); r.Type == gjson.String {
				rc = &reasoningContent{RedactedContent: r.String()}
			}
		case v.Get("type").String() == "thinking":
			rc = text(v.Get("thinking").String(), v.Get("signature").String())
		case v.Get("type").String() == "redacted_thinking":
			rc = &reasoningContent{RedactedContent: v.Get("data").String()}
		}
		if rc == nil {
			continue
		}
		raw, err := json.Marshal(rc)
		if err != nil {
			continue
		}
		blocks = append(blocks, contentBlock{ReasoningContent: raw})
	}
	return blocks
}

// toolResult turns a tool message into a toolResult block: content that is
// a JSON object goes as {json}, anything else as {text}.
func (b *builder) toolResult(m *llm.Message) contentBlock {
	b.toolHistory = true
	tr := &toolResultBlock{ToolUseID: toolUseID(m.ToolCallID), Content: []toolResultContent{}}
	switch m.Content.Kind {
	case llm.ContentString:
		s := m.Content.Text
		if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
			tr.Content = append(tr.Content, toolResultContent{JSON: compactJSON(t)})
		} else if s != "" {
			tr.Content = append(tr.Content, toolResultContent{Text: &s})
		}
	case llm.ContentParts:
		for _, p := range m.Content.Parts {
			if p.Type == llm.PartText && p.Text != "" {
				text := p.Text
				tr.Content = append(tr.Content, toolResultContent{Text: &text})
			}
		}
	}
	return contentBlock{ToolResult: tr}
}

var toolUseIDPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// toolUseID maps an OpenAI tool-call id to a Bedrock toolUseId
// (^[a-zA-Z0-9_-]+$, at most 64 characters). Valid ids pass unchanged, so
// Bedrock's own ids round-trip; others are replaced by a hash, the same for
// the call and its result (PROVIDERS.md §0.4).
func toolUseID(id string) string {
	if toolUseIDPattern.MatchString(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "tooluse_" + hex.EncodeToString(sum[:12])
}

func compactJSON(s string) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		return json.RawMessage(s)
	}
	return buf.Bytes()
}

func (b *builder) inference() {
	r := b.req
	var ic inferenceConfig
	set := false
	if n, ok := r.MaxOutputTokens(); ok {
		ic.MaxTokens, set = &n, true
	}
	if r.Temperature != nil {
		// The model's range is 0–1; OpenAI's 0–2 is clamped where it
		// keeps its meaning (API.md §3).
		t := min(*r.Temperature, 1)
		ic.Temperature, set = &t, true
	}
	if r.TopP != nil {
		p := *r.TopP
		ic.TopP, set = &p, true
	}
	for _, s := range r.Stop {
		if s != "" {
			ic.StopSequences, set = append(ic.StopSequences, s), true
		}
	}
	if set {
		b.out.InferenceConfig = &ic
	}
}

// tools maps tools and tool_choice (PROVIDERS.md §6): auto → {auto},
// required → {any}, a named function → {tool}, allowed_tools → the listed
// tools only; none → no toolConfig, except that Bedrock requires one when
// the conversation holds tool calls, so then the tools stay and the model
// is told not to call them.
func (b *builder) tools() error {
	r := b.req
	var specs []tool
	for _, t := range r.Tools {
		specs = append(specs, tool{ToolSpec: toolSpec{Name: t.Function.Name, Description: t.Function.Description, InputSchema: inputSchema{JSON: schemaOrEmpty(t.Function.Parameters)}}})
		if t.Function.Strict != nil && *t.Function.Strict {
			b.call.Drop("tools[].function.strict")
		}
	}
	var choice *toolChoice
	none := false
	if tc := r.ToolChoice; tc != nil {
		switch {
		case tc.Mode == "none":
			none = true
		case tc.Mode == "auto":
			choice = &toolChoice{Auto: &struct{}{}}
		case tc.Mode == "required":
			choice = &toolChoice{Any: &struct{}{}}
		case tc.Type == "function" && tc.Function != nil:
			choice = &toolChoice{Tool: &namedTool{Name: tc.Function.Name}}
		case tc.Type == "allowed_tools":
			at := gjson.ParseBytes(tc.AllowedTools)
			allowed := map[string]bool{}
			for _, t := range at.Get("tools").Array() {
				allowed[t.Get("function.name").String()] = true
			}
			kept := specs[:0:0]
			for _, s := range specs {
				if allowed[s.ToolSpec.Name] {
					kept = append(kept, s)
				}
			}
			specs = kept
			if at.Get("mode").String() == "required" {
				choice = &toolChoice{Any: &struct{}{}}
			} else {
				choice = &toolChoice{Auto: &struct{}{}}
			}
		case tc.Mode != "":
			return unsupported("tool_choice", fmt.Sprintf("tool_choice %q is not supported", tc.Mode))
		case tc.Type != "":
			return unsupported("tool_choice", fmt.Sprintf("tool_choice of type %q is not supported", tc.Type))
		}
	}
	if len(specs) == 0 && !b.toolHistory {
		return nil
	}
	if none || len(specs) == 0 {
		if !b.toolHistory {
			return nil
		}
		// Tool calls in the history need a toolConfig; declare the tools
		// they used when the client sent none.
		if len(specs) == 0 {
			for _, n := range b.toolNames {
				specs = append(specs, tool{ToolSpec: toolSpec{Name: n, InputSchema: inputSchema{JSON: json.RawMessage(`{"type":"object","properties":{}}`)}}})
			}
			if len(specs) == 0 {
				return nil
			}
		}
		b.out.System = append(b.out.System, systemBlock{Text: noToolsNote})
		b.out.ToolConfig = &toolConfig{Tools: specs}
		return nil
	}
	b.out.ToolConfig = &toolConfig{Tools: specs, ToolChoice: choice}
	return nil
}

func schemaOrEmpty(raw json.RawMessage) json.RawMessage {
	if !present(raw) {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return compactJSON(string(raw))
}

// isClaude reports whether model names an Anthropic Claude model (a base
// id, an inference profile such as us.anthropic.claude-…, or a foundation
// model ARN); application inference profiles and provisioned ARNs do not
// say, and are treated as other families.
func isClaude(model string) bool {
	return strings.Contains(strings.ToLower(model), "anthropic.claude")
}

// reasoning maps thinking and reasoning_effort. For Claude models they
// become additionalModelRequestFields.thinking {type: enabled,
// budget_tokens}; an effort's budget is kept below max_tokens, and no
// budget goes under Anthropic's minimum of 1024. Other
// families take reasoning settings in per-model shapes (or always reason),
// so the fields are dropped as hints there.
func (b *builder) reasoning() {
	r := b.req
	budget := 0
	explicit := false
	switch {
	case r.Thinking != nil && r.Thinking.Type == "enabled":
		budget, explicit = defaultThinkingBudget, r.Thinking.BudgetTokens != nil
		if explicit {
			budget = *r.Thinking.BudgetTokens
		}
	case r.Thinking != nil:
		// disabled: the default
	case r.ReasoningEffort != "" && r.ReasoningEffort != "none":
		var ok bool
		if budget, ok = effortBudget[r.ReasoningEffort]; !ok {
			budget = effortBudget["medium"]
		}
	}
	if budget == 0 {
		return
	}
	if !isClaude(r.Model) {
		if r.Thinking != nil {
			b.call.Drop("thinking")
		}
		if r.ReasoningEffort != "" {
			b.call.Drop("reasoning_effort")
		}
		return
	}
	if limit, ok := r.MaxOutputTokens(); ok && !explicit && budget >= limit {
		budget = limit - 1
	}
	budget = max(budget, 1024)
	b.out.AdditionalModelRequestFields = map[string]any{
		"thinking": map[string]any{"type": "enabled", "budget_tokens": budget},
	}
}

// responseFormat maps json_schema to outputConfig.textFormat (structured
// output; the schema travels as a JSON string). json_object, which Bedrock
// lacks, is asked for as the schema {"type":"object"}.
func (b *builder) responseFormat() {
	rf := b.req.ResponseFormat
	if rf == nil {
		return
	}
	switch rf.Type {
	case "json_schema":
		js := jsonSchemaFormat{Schema: `{"type":"object"}`}
		if s := rf.JSONSchema; s != nil {
			if present(s.Schema) {
				js.Schema = string(compactJSON(string(s.Schema)))
			}
			js.Name, js.Description = s.Name, s.Description
		}
		b.out.OutputConfig = &outputConfig{TextFormat: textFormat{Type: "json_schema", Structure: formatStructure{JSONSchema: js}}}
	case "json_object":
		b.out.OutputConfig = &outputConfig{TextFormat: textFormat{Type: "json_schema", Structure: formatStructure{JSONSchema: jsonSchemaFormat{Schema: `{"type":"object"}`, Name: "json_object"}}}}
	}
}

// metadataValue is the smithy pattern of RequestMetadata keys and values.
var metadataValue = regexp.MustCompile(`^[a-zA-Z0-9\s:_@$#=/+,\-.]{0,256}$`)

// metadata maps user and metadata to requestMetadata (used to filter
// Bedrock's invocation logs), where they fit its constraints: at most 16
// pairs, keys of 1–256 and values of 0–256 characters from a small set.
// Pairs that do not fit are dropped as hints.
func (b *builder) metadata() {
	md := map[string]string{}
	put := func(k, v, field string) {
		if len(md) < 16 && k != "" && metadataValue.MatchString(k) && metadataValue.MatchString(v) {
			md[k] = v
			return
		}
		b.call.Drop(field)
	}
	if u := b.req.User; u != "" {
		put("user", u, "user")
	}
	keys := make([]string, 0, len(b.req.Metadata))
	for k := range b.req.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, taken := md[k]; taken {
			b.call.Drop("metadata." + k)
			continue
		}
		put(k, b.req.Metadata[k], "metadata."+k)
	}
	if len(md) > 0 {
		b.out.RequestMetadata = md
	}
}

// imageFormats maps MIME types to Bedrock's image formats.
var imageFormats = map[string]string{
	"image/png": "png", "image/jpeg": "jpeg", "image/jpg": "jpeg", "image/gif": "gif", "image/webp": "webp",
}

// image inlines an image part: data: URLs are decoded, http(s) URLs are
// fetched by the gateway, since Converse takes only bytes or S3 locations.
func (b *builder) image(param, u string) (*imageBlock, error) {
	var data []byte
	var mt string
	switch {
	case strings.HasPrefix(u, "data:"):
		var err error
		if mt, data, err = decodeDataURL(u); err != nil {
			return nil, unsupported(param, err.Error())
		}
	case strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://"):
		var err error
		if mt, data, err = b.fetchImage(u); err != nil {
			var up *provider.UnsupportedParameterError
			if errors.As(err, &up) {
				up.Param = param
			}
			return nil, err
		}
	default:
		return nil, unsupported(param, "images must be data: or http(s) URLs")
	}
	format := imageFormats[mt]
	if format == "" {
		format = imageFormats[http.DetectContentType(data)]
	}
	if format == "" {
		return nil, unsupported(param, "Bedrock takes png, jpeg, gif or webp images")
	}
	return &imageBlock{Format: format, Source: bytesSource{Bytes: base64.StdEncoding.EncodeToString(data)}}, nil
}

// decodeDataURL returns the media type and bytes of a data: URL.
func decodeDataURL(u string) (string, []byte, error) {
	meta, payload, ok := strings.Cut(strings.TrimPrefix(u, "data:"), ",")
	if !ok {
		return "", nil, errors.New("malformed data: URL")
	}
	isBase64 := strings.HasSuffix(meta, ";base64")
	mt, _, _ := strings.Cut(strings.TrimSuffix(meta, ";base64"), ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	if !isBase64 {
		s, err := url.PathUnescape(payload)
		if err != nil {
			return "", nil, errors.New("malformed data: URL")
		}
		return mt, []byte(s), nil
	}
	payload = strings.TrimSpace(payload)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if data, err := enc.DecodeString(payload); err == nil {
			return mt, data, nil
		}
	}
	return "", nil, errors.New("data: URL is not valid base64")
}

// fetchImage downloads an image with the request's context, up to
// maxImageBytes.
func (b *builder) fetchImage(u string) (string, []byte, error) {
	req, err := http.NewRequestWithContext(b.ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", nil, unsupported("image_url", "invalid image URL")
	}
	req.Header.Set("Accept", "image/*")
	resp, err := b.c.fetch.Do(req)
	if err != nil {
		if b.ctx.Err() != nil {
			return "", nil, provider.ClassifyTransportError(b.ctx, err)
		}
		return "", nil, unsupported("image_url", "the gateway could not fetch the image: "+err.Error())
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", nil, unsupported("image_url", fmt.Sprintf("fetching the image answered HTTP %d", resp.StatusCode))
	}
	data, err := readBody(resp.Body, maxImageBytes)
	if err != nil {
		if b.ctx.Err() != nil {
			return "", nil, provider.ClassifyTransportError(b.ctx, err)
		}
		return "", nil, unsupported("image_url", "the gateway could not read the image: "+err.Error())
	}
	if len(data) > maxImageBytes {
		return "", nil, unsupported("image_url", fmt.Sprintf("the image is larger than %d MB", maxImageBytes>>20))
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return strings.ToLower(mt), data, nil
}

// documentFormats maps MIME types to Bedrock's document formats.
var documentFormats = map[string]string{
	"application/pdf":    "pdf",
	"text/csv":           "csv",
	"application/msword": "doc",
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
	"application/vnd.ms-excel": "xls",
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
	"text/html":     "html",
	"text/plain":    "txt",
	"text/markdown": "md",
}

// document maps a file part with inline file_data (a data: URL, or bare
// base64 with a filename) to a document block. Bedrock has no files API,
// so file_id cannot be resolved.
func (b *builder) document(param string, f *llm.FilePart) (*documentBlock, error) {
	if f == nil || f.FileData == "" {
		return nil, unsupported(param, "Bedrock needs the file inline as file_data; file_id is not supported")
	}
	var mt string
	var data []byte
	if strings.HasPrefix(f.FileData, "data:") {
		var err error
		if mt, data, err = decodeDataURL(f.FileData); err != nil {
			return nil, unsupported(param+".file_data", err.Error())
		}
	} else {
		var err error
		if data, err = base64.StdEncoding.DecodeString(strings.TrimSpace(f.FileData)); err != nil {
			return nil, unsupported(param+".file_data", "file_data must be a data: URL or base64")
		}
	}
	format := documentFormats[mt]
	ext := strings.TrimPrefix(strings.ToLower(path.Ext(f.Filename)), ".")
	if format == "" {
		switch ext {
		case "pdf", "csv", "doc", "docx", "xls", "xlsx", "html", "txt", "md":
			format = ext
		case "htm":
			format = "html"
		case "markdown":
			format = "md"
		}
	}
	if format == "" {
		return nil, unsupported(param, "Bedrock takes pdf, csv, doc, docx, xls, xlsx, html, txt or md documents")
	}
	return &documentBlock{Format: format, Name: b.documentName(f.Filename), Source: bytesSource{Bytes: base64.StdEncoding.EncodeToString(data)}}, nil
}

// documentName sanitises a file name to what Bedrock accepts (letters,
// digits, single spaces, hyphens, parentheses and square brackets), without
// its extension, unique within the request.
func (b *builder) documentName(filename string) string {
	base := strings.TrimSuffix(filename, path.Ext(filename))
	var sb strings.Builder
	space := false
	for _, r := range base {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '(' || r == ')' || r == '[' || r == ']'
		switch {
		case ok:
			sb.WriteRune(r)
			space = false
		case !space && sb.Len() > 0:
			sb.WriteByte(' ')
			space = true
		}
	}
	name := strings.TrimSpace(sb.String())
	if name == "" {
		name = "document"
	}
	if b.docNames == nil {
		b.docNames = map[string]bool{}
	}
	unique := name
	for n := 2; b.docNames[unique]; n++ {
		unique = fmt.Sprintf("%s-%d", name, n)
	}
	b.docNames[unique] = true
	return unique
}
