package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
)

// messagesRequest is the body of POST /v1/messages, restricted to the fields
// the gateway maps (PROVIDERS.md §3 "Request mapping").
type messagesRequest struct {
	Model         string        `json:"model,omitempty"` // "" when the host's URL names it (Vertex)
	MaxTokens     int           `json:"max_tokens"`
	System        []block       `json:"system,omitempty"`
	Messages      []turn        `json:"messages"`
	Metadata      *metadata     `json:"metadata,omitempty"`
	StopSequences []string      `json:"stop_sequences,omitempty"`
	Stream        bool          `json:"stream,omitempty"`
	Temperature   *float64      `json:"temperature,omitempty"`
	TopP          *float64      `json:"top_p,omitempty"`
	TopK          *int64        `json:"top_k,omitempty"`
	Tools         []tool        `json:"tools,omitempty"`
	ToolChoice    *toolChoice   `json:"tool_choice,omitempty"`
	Thinking      *thinking     `json:"thinking,omitempty"`
	OutputConfig  *outputConfig `json:"output_config,omitempty"`
	ServiceTier   string        `json:"service_tier,omitempty"`

	// AnthropicVersion is the body's anthropic_version, sent only to hosts
	// that take the API version in the body rather than in a header and
	// the model in their URL (Claude on Vertex AI).
	AnthropicVersion string `json:"anthropic_version,omitempty"`
}

// turn is one entry of messages: Anthropic has only user and assistant
// turns, and they must alternate.
type turn struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

// block is one content block. Only the fields of its Type are set; raw, when
// set, is a block the client sent in Anthropic's own shape, written
// verbatim (replayed thinking blocks with their signatures).
type block struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text,omitempty"`
	Source       *source         `json:"source,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      any             `json:"content,omitempty"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`

	raw json.RawMessage
}

// MarshalJSON writes raw when set and the typed fields otherwise.
func (b block) MarshalJSON() ([]byte, error) {
	if b.raw != nil {
		return b.raw, nil
	}
	type plain block
	return json.Marshal(plain(b))
}

func textBlock(s string, cacheControl json.RawMessage) block {
	return block{Type: "text", Text: &s, CacheControl: cacheControl}
}

// source is an image or document source: base64 data with its media type,
// or a URL.
type source struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type metadata struct {
	UserID string `json:"user_id"`
}

type tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
	Strict      *bool           `json:"strict,omitempty"`
}

type toolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse *bool  `json:"disable_parallel_tool_use,omitempty"`
}

type thinking struct {
	Type         string `json:"type"`
	BudgetTokens int    `json:"budget_tokens"`
}

type outputConfig struct {
	Format *outputFormat `json:"format,omitempty"`
}

type outputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

// Thinking budgets. Anthropic requires budget_tokens >= minBudget and below
// max_tokens.
const (
	minBudget = 1024
	// defaultBudget is used for thinking {type:"enabled"} without
	// budget_tokens or reasoning_effort: the "medium" effort.
	defaultBudget = 4096
	// answerRoom is what a defaulted max_tokens keeps above the thinking
	// budget for the visible answer.
	answerRoom = 4096
)

// effortBudgets maps reasoning_effort to budget_tokens when the request has
// no thinking object; gateway policy (PROVIDERS.md §3). "none" means no
// thinking.
var effortBudgets = map[string]int{
	"minimal": 1024,
	"low":     1024,
	"medium":  4096,
	"high":    16384,
	"xhigh":   24576,
	"max":     32000,
}

// defaultMaxTokens is max_tokens for a request that sets no output cap:
// Anthropic requires one. The values stay within each family's output
// limit:
//
//	claude-3-7-*                           16384 (limit 64000)
//	claude-3-5-*                            8192 (limit 8192)
//	claude-3-{haiku,sonnet,opus}-*, claude-2  4096 (limit 4096)
//	claude-{opus,sonnet,haiku}-4 and later  32000 (smallest limit: Opus 4 and 4.1, 32000)
//	anything else                           4096
func defaultMaxTokens(model string) int {
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "claude-3-7"):
		return 16384
	case strings.Contains(m, "claude-3-5"):
		return 8192
	case strings.Contains(m, "claude-3"), strings.Contains(m, "claude-2"), strings.Contains(m, "claude-instant"):
		return 4096
	}
	if generation(m) >= 4 {
		return 32000
	}
	return 4096
}

// generation returns N of claude-{opus,sonnet,haiku}-N in m, or 0.
func generation(m string) int {
	for _, fam := range []string{"claude-opus-", "claude-sonnet-", "claude-haiku-"} {
		i := strings.Index(m, fam)
		if i < 0 {
			continue
		}
		rest := m[i+len(fam):]
		n := 0
		for n < len(rest) && n < 3 && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if v, err := strconv.Atoi(rest[:n]); err == nil {
			return v
		}
	}
	return 0
}

// thinkingCapable is false for the model families known to predate
// extended thinking (before Claude 3.7); unknown names are assumed capable.
func thinkingCapable(model string) bool {
	m := strings.ToLower(model)
	if strings.Contains(m, "claude-3-7") {
		return true
	}
	return !strings.Contains(m, "claude-3") && !strings.Contains(m, "claude-2") && !strings.Contains(m, "claude-instant")
}

func unsupported(param, reason string) error {
	return &provider.UnsupportedParameterError{Provider: Name, Param: param, Reason: reason}
}

// translator builds one Anthropic request from a ChatCall.
type translator struct {
	call *provider.ChatCall
	req  *llm.ChatRequest
	seen map[string]bool // dropped params already recorded

	// State of the last assistant message, for the thinking check in
	// maxTokensAndThinking: whether it called tools, whether it carried thinking
	// blocks, and whether tool results followed it.
	lastCalledTools bool
	lastHadThinking bool
	resultsAfter    bool
}

func (t *translator) drop(param string) {
	if t.seen[param] {
		return
	}
	if t.seen == nil {
		t.seen = make(map[string]bool)
	}
	t.seen[param] = true
	t.call.Drop(param)
}

// buildRequest translates call into the JSON body of POST /v1/messages.
func buildRequest(call *provider.ChatCall, stream bool) ([]byte, error) {
	return buildVersionedRequest(call, stream, "")
}

// buildVersionedRequest is buildRequest for a host that takes the model in
// its URL and the API version in the body: with version set, the body has
// anthropic_version and no model.
func buildVersionedRequest(call *provider.ChatCall, stream bool, version string) ([]byte, error) {
	t := &translator{call: call, req: call.Request}
	out, err := t.translate(stream)
	if err != nil {
		return nil, err
	}
	if version != "" {
		out.Model = ""
		out.AnthropicVersion = version
	}
	return marshal(out)
}

func (t *translator) translate(stream bool) (*messagesRequest, error) {
	r := t.req
	// PROVIDERS.md §0.2: fields whose absence would change the answer.
	if r.N != nil && *r.N > 1 {
		return nil, unsupported("n", "Anthropic returns one choice per request")
	}
	if r.Logprobs != nil && *r.Logprobs {
		return nil, unsupported("logprobs", "Anthropic returns no log probabilities")
	}
	if len(r.Audio) > 0 {
		return nil, unsupported("audio", "Anthropic has no audio output")
	}
	if slices.Contains(r.Modalities, "audio") {
		return nil, unsupported("modalities", "Anthropic has no audio output")
	}
	if len(r.Prediction) > 0 {
		return nil, unsupported("prediction", "Anthropic has no predicted outputs")
	}

	out := &messagesRequest{Model: r.Model, Stream: stream}
	var err error
	if out.System, out.Messages, err = t.messages(); err != nil {
		return nil, err
	}
	if len(r.Stop) > 0 {
		out.StopSequences = []string(r.Stop)
	}
	if r.Temperature != nil {
		// Anthropic's range is 0 to 1; above 1 is clamped (API.md §3).
		v := min(*r.Temperature, 1)
		out.Temperature = &v
	}
	out.TopP = r.TopP
	if k := gjson.GetBytes(t.call.Body, "top_k"); k.Exists() && k.Type != gjson.Null {
		if k.Type != gjson.Number || k.Num < 0 || k.Num != float64(int64(k.Num)) {
			return nil, unsupported("top_k", "must be a non-negative integer")
		}
		v := k.Int()
		out.TopK = &v
	}
	if err := t.tools(out); err != nil {
		return nil, err
	}
	if err := t.responseFormat(out); err != nil {
		return nil, err
	}
	t.userID(out)
	t.hints(out)
	t.maxTokensAndThinking(out)
	return out, nil
}

// hints drops what Anthropic cannot honour but only steers the answer, and
// maps service_tier.
func (t *translator) hints(out *messagesRequest) {
	r := t.req
	if r.Seed != nil {
		t.drop("seed")
	}
	if r.FrequencyPenalty != nil && *r.FrequencyPenalty != 0 {
		t.drop("frequency_penalty")
	}
	if r.PresencePenalty != nil && *r.PresencePenalty != 0 {
		t.drop("presence_penalty")
	}
	if len(r.LogitBias) > 0 {
		t.drop("logit_bias")
	}
	if len(r.Metadata) > 0 {
		t.drop("metadata")
	}
	if r.Store != nil && *r.Store {
		t.drop("store")
	}
	if r.PromptCacheKey != "" {
		t.drop("prompt_cache_key")
	}
	if r.PromptCacheRetention != "" {
		t.drop("prompt_cache_retention")
	}
	if len(r.PromptCacheOptions) > 0 {
		t.drop("prompt_cache_options")
	}
	if r.Verbosity != "" {
		t.drop("verbosity")
	}
	if len(r.Moderation) > 0 {
		t.drop("moderation")
	}
	if len(r.WebSearchOptions) > 0 {
		// Anthropic's web_search server tool changes billing; not mapped.
		t.drop("web_search_options")
	}
	switch r.ServiceTier {
	case "":
	case "auto":
		out.ServiceTier = "auto"
	case "default":
		out.ServiceTier = "standard_only"
	default:
		t.drop("service_tier")
	}
}

// userID maps user (or safety_identifier) to metadata.user_id.
func (t *translator) userID(out *messagesRequest) {
	r := t.req
	switch {
	case r.User != "":
		out.Metadata = &metadata{UserID: r.User}
		if r.SafetyIdentifier != "" {
			t.drop("safety_identifier")
		}
	case r.SafetyIdentifier != "":
		out.Metadata = &metadata{UserID: r.SafetyIdentifier}
	}
}

// maxTokensAndThinking sets max_tokens (required by Anthropic) and thinking.
//
// thinking {type:"enabled", budget_tokens} is sent as is; without
// budget_tokens the budget comes from reasoning_effort, else defaultBudget.
// Without a thinking object, reasoning_effort alone enables thinking with
// the budget of effortBudgets. Budgets below Anthropic's minimum of 1024 are
// raised to it. Anthropic wants max_tokens above the budget: a client cap at
// or below the budget is read as the room for the visible answer and the
// budget is added to it; a defaulted cap is raised to budget + 4096.
func (t *translator) maxTokensAndThinking(out *messagesRequest) {
	r := t.req
	maxTokens, clientCap := r.MaxOutputTokens()
	if !clientCap {
		maxTokens = defaultMaxTokens(r.Model)
	}
	budget := 0
	switch {
	case r.Thinking != nil && r.Thinking.Type == "enabled":
		switch {
		case r.Thinking.BudgetTokens != nil:
			budget = *r.Thinking.BudgetTokens
		case effortBudgets[r.ReasoningEffort] > 0:
			budget = effortBudgets[r.ReasoningEffort]
		default:
			budget = defaultBudget
		}
	case r.Thinking != nil:
		// "disabled" wins over reasoning_effort.
		if r.ReasoningEffort != "" && r.ReasoningEffort != "none" {
			t.drop("reasoning_effort")
		}
	case r.ReasoningEffort == "" || r.ReasoningEffort == "none":
	case !thinkingCapable(r.Model):
		t.drop("reasoning_effort")
	case effortBudgets[r.ReasoningEffort] > 0:
		budget = effortBudgets[r.ReasoningEffort]
	default:
		t.drop("reasoning_effort")
	}
	if budget > 0 && out.ToolChoice != nil && (out.ToolChoice.Type == "any" || out.ToolChoice.Type == "tool") {
		// Anthropic rejects thinking with a forced tool choice; the tool
		// choice decides the answer, thinking only how it is reached.
		t.drop("thinking")
		budget = 0
	}
	if budget > 0 && t.lastCalledTools && t.resultsAfter && !t.lastHadThinking {
		// Anthropic rejects a tool-use continuation with thinking on whose
		// assistant turn carries no thinking block; that happens when the
		// client could not replay the blocks (strict compliance on, or a
		// client that drops content_blocks). Thinking stays off for the
		// rest of the turn, which Anthropic accepts.
		t.drop("thinking")
		budget = 0
	}
	if budget > 0 {
		budget = max(budget, minBudget)
		if maxTokens <= budget {
			if clientCap {
				maxTokens += budget
			} else {
				maxTokens = budget + answerRoom
			}
		}
		out.Thinking = &thinking{Type: "enabled", BudgetTokens: budget}
	}
	out.MaxTokens = maxTokens
}

// responseFormat maps response_format to output_config.format: a JSON
// schema as is, JSON mode as the schema {"type":"object"}.
func (t *translator) responseFormat(out *messagesRequest) error {
	f := t.req.ResponseFormat
	if f == nil {
		return nil
	}
	switch f.Type {
	case "json_schema":
		if f.JSONSchema == nil || len(f.JSONSchema.Schema) == 0 {
			return unsupported("response_format.json_schema.schema", "Anthropic needs a schema for structured output")
		}
		out.OutputConfig = &outputConfig{Format: &outputFormat{Type: "json_schema", Schema: f.JSONSchema.Schema}}
	case "json_object":
		out.OutputConfig = &outputConfig{Format: &outputFormat{Type: "json_schema", Schema: json.RawMessage(`{"type":"object"}`)}}
	}
	return nil
}

// tools maps tools (or the deprecated functions) and tool_choice (or
// function_call), with parallel_tool_calls:false as
// disable_parallel_tool_use.
func (t *translator) tools(out *messagesRequest) error {
	r := t.req
	var defs []llm.FunctionDef
	if len(r.Tools) > 0 {
		for i := range r.Tools {
			defs = append(defs, r.Tools[i].Function)
		}
		if len(r.Functions) > 0 {
			t.drop("functions")
		}
	} else {
		defs = r.Functions
	}
	var choice *toolChoice
	switch {
	case r.ToolChoice != nil && r.ToolChoice.Mode != "":
		choice = modeChoice(r.ToolChoice.Mode)
	case r.ToolChoice != nil && r.ToolChoice.Type == "function" && r.ToolChoice.Function != nil:
		choice = &toolChoice{Type: "tool", Name: r.ToolChoice.Function.Name}
	case r.ToolChoice != nil && r.ToolChoice.Type == "allowed_tools":
		var err error
		if defs, choice, err = allowedTools(defs, r.ToolChoice.AllowedTools); err != nil {
			return err
		}
	case r.ToolChoice == nil && len(r.Tools) == 0 && r.FunctionCall != nil:
		if r.FunctionCall.Mode != "" {
			choice = modeChoice(r.FunctionCall.Mode)
		} else {
			choice = &toolChoice{Type: "tool", Name: r.FunctionCall.Name}
		}
	}
	if len(defs) == 0 {
		// Anthropic accepts no tool_choice without tools; with no tools
		// the model calls none, which is what any choice means then.
		return nil
	}
	for i := range defs {
		d := &defs[i]
		schema := d.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		} else if !gjson.GetBytes(schema, "type").Exists() {
			// OpenAI reads a schema without type as an object; Anthropic
			// requires input_schema.type.
			s, err := sjson.SetBytes(bytes.Clone(schema), "type", "object")
			if err != nil {
				return unsupported("tools["+strconv.Itoa(i)+"].function.parameters", "must be a JSON Schema object")
			}
			schema = s
		}
		tl := tool{Name: d.Name, Description: d.Description, InputSchema: schema}
		if d.Strict != nil && *d.Strict {
			tl.Strict = d.Strict
		}
		out.Tools = append(out.Tools, tl)
	}
	if r.ParallelToolCalls != nil && !*r.ParallelToolCalls {
		if choice == nil {
			choice = &toolChoice{Type: "auto"}
		}
		if choice.Type != "none" {
			yes := true
			choice.DisableParallelToolUse = &yes
		}
	}
	out.ToolChoice = choice
	return nil
}

func modeChoice(mode string) *toolChoice {
	switch mode {
	case "none":
		return &toolChoice{Type: "none"}
	case "required":
		return &toolChoice{Type: "any"}
	}
	return &toolChoice{Type: "auto"}
}

// allowedTools maps tool_choice {type:"allowed_tools", allowed_tools:{mode,
// tools}} by sending only the allowed tools, with mode auto → auto and
// required → any.
func allowedTools(defs []llm.FunctionDef, raw json.RawMessage) ([]llm.FunctionDef, *toolChoice, error) {
	at := gjson.ParseBytes(raw)
	allowed := map[string]bool{}
	for _, tl := range at.Get("tools").Array() {
		name := tl.Get("function.name")
		if !name.Exists() {
			name = tl.Get("name")
		}
		allowed[name.String()] = true
	}
	var kept []llm.FunctionDef
	for _, d := range defs {
		if allowed[d.Name] {
			kept = append(kept, d)
		}
	}
	if len(kept) == 0 {
		return nil, nil, unsupported("tool_choice.allowed_tools.tools", "names none of tools")
	}
	switch mode := at.Get("mode").String(); mode {
	case "", "auto":
		return kept, &toolChoice{Type: "auto"}, nil
	case "required":
		return kept, &toolChoice{Type: "any"}, nil
	default:
		return nil, nil, unsupported("tool_choice.allowed_tools.mode", `must be "auto" or "required", got "`+mode+`"`)
	}
}

// messages hoists system and developer messages into system and builds the
// alternating user/assistant turns: tool results become tool_result blocks
// of a user turn, and consecutive turns of one role are merged (Anthropic
// requires alternation; every tool result answering one assistant turn must
// be in the single user turn after it, before any text).
func (t *translator) messages() ([]block, []turn, error) {
	var system []block
	var turns []turn
	add := func(role string, bs []block) {
		if len(bs) == 0 {
			return
		}
		if n := len(turns); n > 0 && turns[n-1].Role == role {
			turns[n-1].Content = append(turns[n-1].Content, bs...)
			return
		}
		turns = append(turns, turn{Role: role, Content: bs})
	}
	pendingFn := "" // tool_use id given to the last legacy function_call
	for i := range t.req.Messages {
		m := &t.req.Messages[i]
		if m.Name != "" && m.Role != llm.RoleFunction {
			t.drop("messages[].name")
		}
		switch m.Role {
		case llm.RoleSystem, llm.RoleDeveloper:
			bs, err := t.systemBlocks(i, m)
			if err != nil {
				return nil, nil, err
			}
			system = append(system, bs...)
		case llm.RoleUser:
			bs, err := t.userBlocks(i, m)
			if err != nil {
				return nil, nil, err
			}
			add("user", bs)
		case llm.RoleAssistant:
			bs, fnID, err := t.assistantBlocks(i, m)
			if err != nil {
				return nil, nil, err
			}
			pendingFn = fnID
			add("assistant", bs)
		case llm.RoleTool:
			b, err := t.toolResult(i, m.ToolCallID, m.Content)
			if err != nil {
				return nil, nil, err
			}
			t.resultsAfter = true
			add("user", []block{b})
		case llm.RoleFunction:
			if pendingFn == "" {
				return nil, nil, unsupported(msgParam(i), "a function message must follow an assistant message with function_call")
			}
			b, err := t.toolResult(i, pendingFn, m.Content)
			if err != nil {
				return nil, nil, err
			}
			pendingFn = ""
			t.resultsAfter = true
			add("user", []block{b})
		default:
			return nil, nil, unsupported(msgParam(i)+".role", "unknown role "+strconv.Quote(m.Role))
		}
	}
	for i := range turns {
		if turns[i].Role == "user" {
			// tool_result blocks first, the rest in order.
			slices.SortStableFunc(turns[i].Content, func(a, b block) int {
				return boolInt(b.Type == "tool_result") - boolInt(a.Type == "tool_result")
			})
		}
	}
	if turns == nil {
		turns = []turn{}
	}
	return system, turns, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func msgParam(i int) string { return "messages[" + strconv.Itoa(i) + "]" }

func partParam(i, j int) string { return msgParam(i) + ".content[" + strconv.Itoa(j) + "]" }

// systemBlocks returns the text blocks of a system or developer message.
// Empty text is skipped: Anthropic rejects empty text blocks.
func (t *translator) systemBlocks(i int, m *llm.Message) ([]block, error) {
	switch m.Content.Kind {
	case llm.ContentString:
		if m.Content.Text == "" {
			return nil, nil
		}
		return []block{textBlock(m.Content.Text, nil)}, nil
	case llm.ContentParts:
		var out []block
		for j := range m.Content.Parts {
			p := &m.Content.Parts[j]
			if p.Type != llm.PartText {
				return nil, unsupported(partParam(i, j), "Anthropic's system prompt takes only text")
			}
			if p.Text != "" {
				out = append(out, textBlock(p.Text, p.CacheControl))
			}
		}
		return out, nil
	}
	return nil, nil
}

// userBlocks maps a user message's content: text, images (URL or base64
// data URL), PDF files as documents; parts of types the gateway does not
// model are sent verbatim, so Anthropic-native blocks pass.
func (t *translator) userBlocks(i int, m *llm.Message) ([]block, error) {
	switch m.Content.Kind {
	case llm.ContentString:
		if m.Content.Text == "" {
			return nil, nil
		}
		return []block{textBlock(m.Content.Text, nil)}, nil
	case llm.ContentParts:
		out := make([]block, 0, len(m.Content.Parts))
		for j := range m.Content.Parts {
			b, ok, err := t.part(i, j, &m.Content.Parts[j])
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, b)
			}
		}
		return out, nil
	}
	return nil, nil
}

// part maps one content part of a user or tool message; ok is false for a
// part that maps to nothing (empty text).
func (t *translator) part(i, j int, p *llm.ContentPart) (block, bool, error) {
	switch p.Type {
	case llm.PartText:
		if p.Text == "" {
			return block{}, false, nil
		}
		return textBlock(p.Text, p.CacheControl), true, nil
	case llm.PartImageURL:
		if p.ImageURL.Detail != "" && p.ImageURL.Detail != "auto" {
			t.drop("image_url.detail")
		}
		src, err := imageSource(p.ImageURL.URL)
		if err != nil {
			return block{}, false, unsupported(partParam(i, j)+".image_url.url", err.Error())
		}
		return block{Type: "image", Source: src, CacheControl: p.CacheControl}, true, nil
	case llm.PartInputAudio:
		return block{}, false, unsupported(partParam(i, j), "Anthropic takes no audio input")
	case llm.PartFile:
		if p.File.FileData == "" {
			return block{}, false, unsupported(partParam(i, j)+".file.file_id", "OpenAI file ids mean nothing to Anthropic; send file_data")
		}
		src, err := documentSource(p.File.FileData, p.File.Filename)
		if err != nil {
			return block{}, false, unsupported(partParam(i, j)+".file.file_data", err.Error())
		}
		return block{Type: "document", Source: src, CacheControl: p.CacheControl}, true, nil
	case llm.PartRefusal:
		if p.Refusal == "" {
			return block{}, false, nil
		}
		return textBlock(p.Refusal, p.CacheControl), true, nil
	}
	if len(p.Raw) == 0 {
		return block{}, false, unsupported(partParam(i, j), "unknown content part type "+strconv.Quote(p.Type))
	}
	return block{raw: p.Raw}, true, nil
}

// imageMediaTypes are the base64 image types Anthropic accepts.
var imageMediaTypes = map[string]string{
	"image/jpeg": "image/jpeg",
	"image/jpg":  "image/jpeg",
	"image/png":  "image/png",
	"image/gif":  "image/gif",
	"image/webp": "image/webp",
}

// imageSource maps an image_url: http(s) URLs by reference, data: URLs as
// base64 of a supported type (PROVIDERS.md §0.5).
func imageSource(u string) (*source, error) {
	if rest, ok := cutPrefixFold(u, "data:"); ok {
		mt, data, err := parseDataURL(rest)
		if err != nil {
			return nil, err
		}
		norm, ok := imageMediaTypes[mt]
		if !ok {
			return nil, fmt.Errorf("image media type %q is not one of image/jpeg, image/png, image/gif, image/webp", mt)
		}
		return &source{Type: "base64", MediaType: norm, Data: data}, nil
	}
	if _, ok := cutPrefixFold(u, "https://"); ok {
		return &source{Type: "url", URL: u}, nil
	}
	if _, ok := cutPrefixFold(u, "http://"); ok {
		return &source{Type: "url", URL: u}, nil
	}
	return nil, fmt.Errorf("must be an http(s) URL or a base64 data: URL")
}

// documentSource maps a file part's file_data (a base64 data: URL, or bare
// base64 with a .pdf file name) to a PDF document source.
func documentSource(fileData, filename string) (*source, error) {
	mt, data := "", fileData
	if rest, ok := cutPrefixFold(fileData, "data:"); ok {
		var err error
		if mt, data, err = parseDataURL(rest); err != nil {
			return nil, err
		}
	} else if strings.HasSuffix(strings.ToLower(filename), ".pdf") {
		mt = "application/pdf"
	}
	if mt != "application/pdf" {
		return nil, fmt.Errorf("only PDF files (application/pdf) are supported, got %q", mt)
	}
	return &source{Type: "base64", MediaType: mt, Data: data}, nil
}

// parseDataURL splits the part of a data: URL after "data:" into its media
// type (lower case, parameters removed) and base64 payload.
func parseDataURL(rest string) (mediaType, data string, err error) {
	meta, data, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", fmt.Errorf("malformed data: URL")
	}
	params := strings.Split(meta, ";")
	if !strings.EqualFold(params[len(params)-1], "base64") {
		return "", "", fmt.Errorf("data: URL must be base64-encoded")
	}
	return strings.ToLower(strings.TrimSpace(params[0])), data, nil
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

// assistantBlocks maps an assistant message. Its content_blocks (read from
// the raw body, since the OpenAI types have no such field) are sent first
// and verbatim: they carry thinking blocks with their signatures, which
// Anthropic needs back on tool-use continuations. Text and tool calls the
// blocks do not already hold follow, from content and tool_calls. fnID is
// the tool_use id given to a deprecated function_call, for the function
// message that answers it.
func (t *translator) assistantBlocks(i int, m *llm.Message) (out []block, fnID string, err error) {
	hasText, hasThinking := false, false
	var have map[string]bool // tool_use ids in content_blocks
	cb := gjson.GetBytes(t.call.Body, "messages."+strconv.Itoa(i)+".content_blocks")
	switch {
	case cb.IsArray():
		for k, b := range cb.Array() {
			typ := b.Get("type")
			if !b.IsObject() || typ.Type != gjson.String {
				return nil, "", unsupported(msgParam(i)+".content_blocks["+strconv.Itoa(k)+"]", "must be an Anthropic content block with a type")
			}
			switch typ.Str {
			case "text":
				hasText = true
			case "tool_use":
				if have == nil {
					have = make(map[string]bool)
				}
				have[b.Get("id").String()] = true
			case "thinking", "redacted_thinking":
				hasThinking = true
			}
			out = append(out, block{raw: json.RawMessage(b.Raw)})
		}
	case cb.Exists() && cb.Type != gjson.Null:
		return nil, "", unsupported(msgParam(i)+".content_blocks", "must be an array of Anthropic content blocks")
	case m.ReasoningText() != "":
		// Reasoning text without its signature cannot be replayed.
		t.drop("messages[].reasoning_content")
	}
	if !hasText {
		switch m.Content.Kind {
		case llm.ContentString:
			if m.Content.Text != "" {
				out = append(out, textBlock(m.Content.Text, nil))
			}
		case llm.ContentParts:
			for j := range m.Content.Parts {
				b, ok, err := t.part(i, j, &m.Content.Parts[j])
				if err != nil {
					return nil, "", err
				}
				if ok {
					if b.raw != nil {
						switch gjson.GetBytes(b.raw, "type").String() {
						case "thinking", "redacted_thinking":
							hasThinking = true
						}
					}
					out = append(out, b)
				}
			}
		case llm.ContentNull:
			if m.Refusal != "" {
				out = append(out, textBlock(m.Refusal, nil))
			}
		}
	}
	for k := range m.ToolCalls {
		tc := &m.ToolCalls[k]
		if have[tc.ID] {
			continue
		}
		input, err := toolInput(tc.Function.Arguments)
		if err != nil {
			return nil, "", unsupported(msgParam(i)+".tool_calls["+strconv.Itoa(k)+"].function.arguments", err.Error())
		}
		out = append(out, block{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: input})
	}
	if fc := m.FunctionCall; fc != nil {
		input, err := toolInput(fc.Arguments)
		if err != nil {
			return nil, "", unsupported(msgParam(i)+".function_call.arguments", err.Error())
		}
		fnID = "call_fn_" + strconv.Itoa(i)
		out = append(out, block{Type: "tool_use", ID: fnID, Name: fc.Name, Input: input})
	}
	t.lastCalledTools = len(m.ToolCalls) > 0 || m.FunctionCall != nil
	t.lastHadThinking = hasThinking
	t.resultsAfter = false
	return out, fnID, nil
}

// toolInput parses tool-call arguments into the JSON object Anthropic wants
// as input. Empty arguments mean no arguments.
func toolInput(args string) (json.RawMessage, error) {
	s := strings.TrimSpace(args)
	if s == "" {
		return json.RawMessage(`{}`), nil
	}
	if !json.Valid([]byte(s)) || s[0] != '{' {
		return nil, fmt.Errorf("must be a JSON object to send to Anthropic as tool_use input")
	}
	return json.RawMessage(s), nil
}

// toolResult maps a tool (or function) message to a tool_result block:
// string content as a string, parts as text (or verbatim) blocks.
func (t *translator) toolResult(i int, id string, c llm.MessageContent) (block, error) {
	b := block{Type: "tool_result", ToolUseID: id}
	switch c.Kind {
	case llm.ContentString:
		b.Content = c.Text
	case llm.ContentParts:
		bs := make([]block, 0, len(c.Parts))
		for j := range c.Parts {
			pb, ok, err := t.part(i, j, &c.Parts[j])
			if err != nil {
				return block{}, err
			}
			if ok {
				bs = append(bs, pb)
			}
		}
		b.Content = bs
	}
	return b, nil
}
