package cohere

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/tidwall/gjson"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
)

// chatRequest is the body of POST /v2/chat. Field names follow Cohere's
// published v2 API; fields the gateway never sets (documents,
// citation_options, safety_mode, priority) are left out.
type chatRequest struct {
	Model            string          `json:"model"`
	Messages         []message       `json:"messages"`
	Stream           bool            `json:"stream,omitempty"`
	Tools            []tool          `json:"tools,omitempty"`
	StrictTools      *bool           `json:"strict_tools,omitempty"`
	ResponseFormat   *responseFormat `json:"response_format,omitempty"`
	MaxTokens        *int            `json:"max_tokens,omitempty"`
	StopSequences    []string        `json:"stop_sequences,omitempty"`
	Temperature      *float64        `json:"temperature,omitempty"`
	Seed             *int64          `json:"seed,omitempty"`
	FrequencyPenalty *float64        `json:"frequency_penalty,omitempty"`
	PresencePenalty  *float64        `json:"presence_penalty,omitempty"`
	K                *int64          `json:"k,omitempty"`
	P                *float64        `json:"p,omitempty"`
	Logprobs         *bool           `json:"logprobs,omitempty"`
	ToolChoice       string          `json:"tool_choice,omitempty"`
	Thinking         *thinking       `json:"thinking,omitempty"`
}

// message is one v2 chat message. Content is a string or []contentItem;
// nil leaves it out.
type message struct {
	Role       string     `json:"role"`
	Content    any        `json:"content,omitempty"`
	ToolPlan   string     `json:"tool_plan,omitempty"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// contentItem is a text, image_url or thinking content item.
type contentItem struct {
	Type     string    `json:"type"`
	Text     *string   `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
	Thinking *string   `json:"thinking,omitempty"`
}

type imageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// toolCall has OpenAI's shape in Cohere v2, in requests and responses.
type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type tool struct {
	Type     string      `json:"type"`
	Function functionDef `json:"function"`
}

type functionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// responseFormat is {type:"text"|"json_object", json_schema?}: the schema
// is given bare, without OpenAI's name/strict wrapper.
type responseFormat struct {
	Type       string          `json:"type"`
	JSONSchema json.RawMessage `json:"json_schema,omitempty"`
}

type thinking struct {
	Type        string `json:"type"`
	TokenBudget *int   `json:"token_budget,omitempty"`
}

// emptyParameters is sent for a tool without parameters: Cohere wants an
// object schema.
var emptyParameters = json.RawMessage(`{"type":"object","properties":{}}`)

// effortBudgets maps reasoning_effort to a thinking token budget. This is
// gateway policy (PROVIDERS.md §7 only says reasoning_effort maps to
// thinking); "max" and unknown efforts enable thinking with Cohere's
// default budget.
var effortBudgets = map[string]int{
	"minimal": 512,
	"low":     1024,
	"medium":  4096,
	"high":    16384,
	"xhigh":   32768,
}

// P bounds (Cohere: "min value of 0.01, max value of 0.99").
const (
	minP = 0.01
	maxP = 0.99
)

func unsupported(param, reason string) error {
	return &provider.UnsupportedParameterError{Provider: Name, Param: param, Reason: reason}
}

// buildChatRequest translates the client's OpenAI request (PROVIDERS.md §7
// table; §0.2 for what is rejected and what is dropped).
func buildChatRequest(call *provider.ChatCall, stream bool) (*chatRequest, error) {
	r := call.Request
	out := &chatRequest{Model: r.Model, Stream: stream}

	// Rejected: ignoring these would change what the client receives.
	if r.N != nil && *r.N > 1 {
		return nil, unsupported("n", "Cohere returns one choice per request")
	}
	if r.TopLogprobs != nil && *r.TopLogprobs > 0 {
		return nil, unsupported("top_logprobs", "Cohere returns the log probability of the generated tokens only, without alternatives")
	}
	if len(r.Audio) > 0 && string(r.Audio) != "null" {
		return nil, unsupported("audio", "Cohere has no audio output")
	}
	for _, m := range r.Modalities {
		if m == "audio" {
			return nil, unsupported("modalities", "Cohere has no audio output")
		}
	}
	if len(r.Prediction) > 0 && string(r.Prediction) != "null" {
		return nil, unsupported("prediction", "Cohere has no predicted outputs")
	}
	if len(r.Functions) > 0 {
		return nil, unsupported("functions", "the deprecated functions parameter is not translated; use tools")
	}
	if r.FunctionCall != nil {
		return nil, unsupported("function_call", "the deprecated function_call parameter is not translated; use tool_choice")
	}

	// Dropped: hints Cohere has no field for.
	if len(r.LogitBias) > 0 {
		call.Drop("logit_bias")
	}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"user", r.User != ""},
		{"safety_identifier", r.SafetyIdentifier != ""},
		{"metadata", len(r.Metadata) > 0},
		{"store", r.Store != nil},
		{"service_tier", r.ServiceTier != ""},
		{"prompt_cache_key", r.PromptCacheKey != ""},
		{"prompt_cache_retention", r.PromptCacheRetention != ""},
		{"prompt_cache_options", len(r.PromptCacheOptions) > 0},
		{"verbosity", r.Verbosity != ""},
		{"moderation", len(r.Moderation) > 0},
		{"web_search_options", len(r.WebSearchOptions) > 0},
	} {
		if f.set {
			call.Drop(f.name)
		}
	}
	if r.ParallelToolCalls != nil && !*r.ParallelToolCalls {
		// Cohere has no switch for one call per turn; it is a hint the
		// model may not have followed anyway (PROVIDERS.md §12.2).
		call.Drop("parallel_tool_calls")
	}

	msgs, err := buildMessages(call)
	if err != nil {
		return nil, err
	}
	out.Messages = msgs

	if err := buildTools(r, out); err != nil {
		return nil, err
	}

	if n, ok := r.MaxOutputTokens(); ok {
		out.MaxTokens = &n
	}
	out.Temperature = r.Temperature
	if r.TopP != nil {
		p := min(max(*r.TopP, minP), maxP)
		out.P = &p
	}
	if k := gjson.GetBytes(call.Body, "top_k"); k.Type == gjson.Number {
		v := k.Int()
		out.K = &v
	}
	if len(r.Stop) > 0 {
		out.StopSequences = r.Stop
	}
	out.Seed = r.Seed
	out.FrequencyPenalty = penalty(call, "frequency_penalty", r.FrequencyPenalty)
	out.PresencePenalty = penalty(call, "presence_penalty", r.PresencePenalty)
	if r.Logprobs != nil && *r.Logprobs {
		t := true
		out.Logprobs = &t
	}
	if rf := r.ResponseFormat; rf != nil {
		switch rf.Type {
		case "json_object":
			out.ResponseFormat = &responseFormat{Type: "json_object"}
		case "json_schema":
			f := &responseFormat{Type: "json_object"}
			if rf.JSONSchema != nil && len(rf.JSONSchema.Schema) > 0 {
				// Cohere constrains the output to the schema (structured
				// outputs), so strict: true is honoured.
				f.JSONSchema = rf.JSONSchema.Schema
			}
			out.ResponseFormat = f
		}
	}
	out.Thinking = buildThinking(r)
	return out, nil
}

// penalty maps an OpenAI penalty (-2..2) to Cohere's 0..1: values above 1
// are clamped (a strong penalty stays strong); negative values, which ask
// for more repetition, have no Cohere equivalent and are dropped.
func penalty(call *provider.ChatCall, name string, v *float64) *float64 {
	if v == nil {
		return nil
	}
	if *v < 0 {
		call.Drop(name)
		return nil
	}
	p := min(*v, 1)
	return &p
}

// buildThinking maps the gateway's thinking object, or else
// reasoning_effort, to Cohere's thinking.
func buildThinking(r *llm.ChatRequest) *thinking {
	if t := r.Thinking; t != nil {
		if t.Type == "disabled" {
			return &thinking{Type: "disabled"}
		}
		return &thinking{Type: "enabled", TokenBudget: t.BudgetTokens}
	}
	switch e := r.ReasoningEffort; e {
	case "":
		return nil
	case "none":
		return &thinking{Type: "disabled"}
	default:
		th := &thinking{Type: "enabled"}
		if b, ok := effortBudgets[e]; ok {
			th.TokenBudget = &b
		}
		return th
	}
}

// buildTools maps tools and tool_choice. Cohere's tool_choice has only
// REQUIRED and NONE; a named function (or allowed_tools) is honoured by
// sending only the allowed tools, with REQUIRED where the client demands a
// call, which constrains the model exactly as OpenAI would.
func buildTools(r *llm.ChatRequest, out *chatRequest) error {
	tools := r.Tools
	mode := ""
	if tc := r.ToolChoice; tc != nil {
		switch {
		case tc.Mode != "":
			mode = tc.Mode
		case tc.Type == "function" && tc.Function != nil:
			tools = filterTools(tools, map[string]bool{tc.Function.Name: true})
			mode = "required"
		case tc.Type == "allowed_tools":
			names, m, err := allowedTools(tc.AllowedTools)
			if err != nil {
				return err
			}
			tools = filterTools(tools, names)
			mode = m
		}
	}
	var strict bool
	for i := range tools {
		t := &tools[i]
		if t.Type != "" && t.Type != "function" {
			return unsupported("tools["+strconv.Itoa(i)+"].type", fmt.Sprintf("only function tools are supported, got %q", t.Type))
		}
		params := t.Function.Parameters
		if len(params) == 0 || string(params) == "null" {
			params = emptyParameters
		}
		out.Tools = append(out.Tools, tool{Type: "function", Function: functionDef{Name: t.Function.Name, Description: t.Function.Description, Parameters: params}})
		if t.Function.Strict != nil && *t.Function.Strict {
			strict = true
		}
	}
	// Cohere's strict_tools applies to every tool; one strict tool turns it
	// on, which only tightens the others.
	if strict {
		out.StrictTools = &strict
	}
	switch mode {
	case "required":
		out.ToolChoice = "REQUIRED"
	case "none":
		out.ToolChoice = "NONE"
	}
	return nil
}

func filterTools(tools []llm.Tool, names map[string]bool) []llm.Tool {
	var out []llm.Tool
	for _, t := range tools {
		if names[t.Function.Name] {
			out = append(out, t)
		}
	}
	return out
}

// allowedTools reads {"mode":"auto"|"required","tools":[{"type":"function","function":{"name"}}]}.
func allowedTools(raw json.RawMessage) (map[string]bool, string, error) {
	v := gjson.ParseBytes(raw)
	names := map[string]bool{}
	for _, t := range v.Get("tools").Array() {
		name := t.Get("function.name").String()
		if name == "" {
			name = t.Get("name").String()
		}
		if name == "" {
			return nil, "", unsupported("tool_choice.allowed_tools.tools", "only function tools named by function.name are supported")
		}
		names[name] = true
	}
	if len(names) == 0 {
		return nil, "", unsupported("tool_choice.allowed_tools.tools", "must name at least one function")
	}
	mode := v.Get("mode").String()
	if mode == "" {
		mode = "auto"
	}
	return names, mode, nil
}

// buildMessages maps the conversation. System and developer messages stay
// inline as role system (Cohere accepts them anywhere).
func buildMessages(call *provider.ChatCall) ([]message, error) {
	r := call.Request
	out := make([]message, 0, len(r.Messages))
	droppedName := false
	for i := range r.Messages {
		m := &r.Messages[i]
		if m.Name != "" && !droppedName {
			call.Drop("messages[].name")
			droppedName = true
		}
		switch m.Role {
		case llm.RoleSystem, llm.RoleDeveloper:
			c, err := textContent(m.Content, i)
			if err != nil {
				return nil, err
			}
			out = append(out, message{Role: "system", Content: c})
		case llm.RoleUser:
			c, err := userContent(m.Content, i)
			if err != nil {
				return nil, err
			}
			out = append(out, message{Role: "user", Content: c})
		case llm.RoleAssistant:
			am, err := assistantMessage(call, m, i)
			if err != nil {
				return nil, err
			}
			out = append(out, am)
		case llm.RoleTool:
			c, err := textContent(m.Content, i)
			if err != nil {
				return nil, err
			}
			if c == nil {
				c = ""
			}
			out = append(out, message{Role: "tool", ToolCallID: m.ToolCallID, Content: c})
		default:
			return nil, unsupported(msgParam(i, ".role"), fmt.Sprintf("role %q is not supported; use tool messages", m.Role))
		}
	}
	return out, nil
}

func msgParam(i int, suffix string) string {
	return "messages[" + strconv.Itoa(i) + "]" + suffix
}

func partParam(i, j int) string {
	return msgParam(i, ".content["+strconv.Itoa(j)+"]")
}

func strPtr(s string) *string { return &s }

// textContent maps system and tool content: a string stays a string, text
// parts become text items, and other parts are refused.
func textContent(c llm.MessageContent, i int) (any, error) {
	switch c.Kind {
	case llm.ContentNull:
		return nil, nil
	case llm.ContentString:
		return c.Text, nil
	}
	items := make([]contentItem, 0, len(c.Parts))
	for j := range c.Parts {
		p := &c.Parts[j]
		if p.Type != llm.PartText {
			return nil, unsupported(partParam(i, j), fmt.Sprintf("%s parts are not supported in this message", p.Type))
		}
		items = append(items, contentItem{Type: "text", Text: strPtr(p.Text)})
	}
	return items, nil
}

// userContent maps user content: text and image_url parts (http(s) URL or
// data URI, PROVIDERS.md §0.5); audio and file parts have no Cohere
// equivalent.
func userContent(c llm.MessageContent, i int) (any, error) {
	switch c.Kind {
	case llm.ContentNull:
		return "", nil
	case llm.ContentString:
		return c.Text, nil
	}
	items := make([]contentItem, 0, len(c.Parts))
	for j := range c.Parts {
		p := &c.Parts[j]
		switch p.Type {
		case llm.PartText:
			items = append(items, contentItem{Type: "text", Text: strPtr(p.Text)})
		case llm.PartImageURL:
			if p.ImageURL == nil || p.ImageURL.URL == "" {
				return nil, unsupported(partParam(i, j)+".image_url.url", "an image part needs a URL")
			}
			items = append(items, contentItem{Type: "image_url", ImageURL: &imageURL{URL: p.ImageURL.URL, Detail: p.ImageURL.Detail}})
		default:
			return nil, unsupported(partParam(i, j), fmt.Sprintf("%s parts are not supported by Cohere chat", p.Type))
		}
	}
	return items, nil
}

// assistantMessage maps a replayed assistant turn. Replayed reasoning is
// read, in order of preference, from content_blocks (what this adapter
// returns with strict OpenAI compliance off: thinking items and the
// tool_plan), from a Cohere-style tool_plan field, or from
// reasoning_content on a message with tool calls, which becomes its
// tool_plan.
func assistantMessage(call *provider.ChatCall, m *llm.Message, i int) (message, error) {
	out := message{Role: "assistant"}
	if m.FunctionCall != nil {
		return out, unsupported(msgParam(i, ".function_call"), "the deprecated function_call is not translated; use tool_calls")
	}
	var items []contentItem
	haveBlocks := false
	if blocks := gjson.GetBytes(call.Body, "messages."+strconv.Itoa(i)+".content_blocks"); blocks.IsArray() {
		haveBlocks = true
		for _, b := range blocks.Array() {
			switch b.Get("type").String() {
			case "thinking":
				items = append(items, contentItem{Type: "thinking", Thinking: strPtr(b.Get("thinking").String())})
			case "tool_plan":
				out.ToolPlan = b.Get("tool_plan").String()
			}
		}
	}
	if !haveBlocks {
		if tp := gjson.GetBytes(call.Body, "messages."+strconv.Itoa(i)+".tool_plan"); tp.Type == gjson.String {
			out.ToolPlan = tp.String()
		} else if rt := m.ReasoningText(); rt != "" {
			if len(m.ToolCalls) > 0 {
				out.ToolPlan = rt
			} else {
				call.Drop(msgParam(i, ".reasoning_content"))
			}
		}
	}
	switch m.Content.Kind {
	case llm.ContentString:
		if m.Content.Text != "" || len(m.ToolCalls) == 0 {
			items = append(items, contentItem{Type: "text", Text: strPtr(m.Content.Text)})
		}
	case llm.ContentParts:
		for j := range m.Content.Parts {
			p := &m.Content.Parts[j]
			switch p.Type {
			case llm.PartText:
				items = append(items, contentItem{Type: "text", Text: strPtr(p.Text)})
			case llm.PartRefusal:
				items = append(items, contentItem{Type: "text", Text: strPtr(p.Refusal)})
			default:
				return out, unsupported(partParam(i, j), fmt.Sprintf("%s parts are not supported in assistant messages", p.Type))
			}
		}
	}
	if m.Refusal != "" && m.Content.IsNull() {
		items = append(items, contentItem{Type: "text", Text: strPtr(m.Refusal)})
	}
	switch {
	case len(items) == 1 && items[0].Type == "text":
		out.Content = *items[0].Text
	case len(items) > 0:
		out.Content = items
	}
	for _, tc := range m.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, toolCall{ID: tc.ID, Type: "function", Function: functionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
	}
	return out, nil
}
