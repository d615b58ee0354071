package llm

import (
	"bytes"
	"encoding/json"
)

// ChatRequest is the body of POST /chat/completions (SPEC.md "Chat
// completion request", PROVIDERS.md §0.1), decoded once into typed fields so
// provider translators never re-parse the client's bytes.
//
// Nullable fields are pointers (nil means absent or null); opaque
// sub-objects the gateway only forwards are json.RawMessage. Fields this
// type does not model are ignored when decoding; the gateway forwards the
// original body to OpenAI-compatible providers, so they still reach them.
//
// DecodeChatRequest reports errors in field order, except that functions
// is checked before function_call, which refers to it.
type ChatRequest struct {
	// Model names the model; required and non-empty.
	Model string `json:"model"`
	// Messages is the conversation so far; at least one item.
	Messages []Message `json:"messages"`

	// FrequencyPenalty is between -2 and 2.
	FrequencyPenalty *float64 `json:"frequency_penalty,omitempty"`
	// PresencePenalty is between -2 and 2.
	PresencePenalty *float64 `json:"presence_penalty,omitempty"`
	// LogitBias maps token ids (strings of digits) to a bias between -100
	// and 100.
	LogitBias map[string]int `json:"logit_bias,omitempty"`
	// Logprobs asks for the log-probabilities of the output tokens.
	Logprobs *bool `json:"logprobs,omitempty"`
	// TopLogprobs is between 0 and 20 and is only allowed with Logprobs true.
	TopLogprobs *int `json:"top_logprobs,omitempty"`
	// MaxTokens is the deprecated output-token cap (at least 1); reasoning
	// models want MaxCompletionTokens instead (PROVIDERS.md §1).
	MaxTokens *int `json:"max_tokens,omitempty"`
	// MaxCompletionTokens caps generated tokens, reasoning included; at
	// least 1.
	MaxCompletionTokens *int `json:"max_completion_tokens,omitempty"`
	// N is the number of choices, 1 to 128.
	N *int `json:"n,omitempty"`
	// ResponseFormat selects text, JSON mode or a JSON schema.
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
	// Seed asks for best-effort determinism. It is an int64 so values past
	// 2^53 are kept exactly rather than rounded through a float64.
	Seed *int64 `json:"seed,omitempty"`
	// Stop holds up to 4 stop sequences; a single string arrives as one item.
	Stop Stop `json:"stop,omitempty"`
	// Stream asks for server-sent events; null and absent mean false.
	Stream bool `json:"stream,omitempty"`
	// StreamOptions is only meaningful when Stream is true.
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
	// Thinking asks for reasoning output where the provider supports it.
	Thinking *Thinking `json:"thinking,omitempty"`
	// Temperature is between 0 and 2.
	Temperature *float64 `json:"temperature,omitempty"`
	// TopP is between 0 and 1.
	TopP *float64 `json:"top_p,omitempty"`
	// Tools lists at most 128 function tools.
	Tools []Tool `json:"tools,omitempty"`
	// ToolChoice is "none", "auto", "required", a named function or an
	// allowed_tools object.
	ToolChoice *ToolChoice `json:"tool_choice,omitempty"`
	// ParallelToolCalls defaults to true when nil.
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitempty"`
	// User identifies the end user (deprecated in favour of
	// SafetyIdentifier and PromptCacheKey, still accepted).
	User string `json:"user,omitempty"`
	// FunctionCall is the deprecated predecessor of ToolChoice.
	FunctionCall *FunctionCallChoice `json:"function_call,omitempty"`
	// Functions is the deprecated predecessor of Tools; 1 to 128 items.
	Functions []FunctionDef `json:"functions,omitempty"`

	// ReasoningEffort is none|minimal|low|medium|high|xhigh|max today; the
	// value is not checked so new efforts pass through without a release.
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	// Metadata is a set of string key-value pairs stored with the request.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Store asks OpenAI to keep the completion.
	Store *bool `json:"store,omitempty"`
	// ServiceTier selects a processing tier ("auto", "default", "flex", ...).
	ServiceTier string `json:"service_tier,omitempty"`
	// Modalities lists the output types ("text", "audio").
	Modalities []string `json:"modalities,omitempty"`
	// Audio holds the audio output parameters, forwarded unchanged.
	Audio json.RawMessage `json:"audio,omitempty"`
	// Prediction holds predicted output, forwarded unchanged.
	Prediction json.RawMessage `json:"prediction,omitempty"`
	// PromptCacheKey groups requests for prompt caching.
	PromptCacheKey string `json:"prompt_cache_key,omitempty"`
	// PromptCacheRetention is the cache retention policy ("in-memory", "24h").
	PromptCacheRetention string `json:"prompt_cache_retention,omitempty"`
	// PromptCacheOptions holds further caching options, forwarded unchanged.
	PromptCacheOptions json.RawMessage `json:"prompt_cache_options,omitempty"`
	// SafetyIdentifier is a stable, hashed end-user id for abuse detection.
	SafetyIdentifier string `json:"safety_identifier,omitempty"`
	// Verbosity is "low", "medium" or "high".
	Verbosity string `json:"verbosity,omitempty"`
	// WebSearchOptions configures the web search tool, forwarded unchanged.
	WebSearchOptions json.RawMessage `json:"web_search_options,omitempty"`
	// Moderation holds moderation options, forwarded unchanged.
	Moderation json.RawMessage `json:"moderation,omitempty"`
}

// IncludeUsage reports whether the client asked for the final usage chunk of
// a stream; the gateway forces usage on upstream and hides that chunk from
// clients that did not ask (SPEC.md "stream_options").
func (r *ChatRequest) IncludeUsage() bool {
	return r.Stream && r.StreamOptions != nil && r.StreamOptions.IncludeUsage
}

// MaxOutputTokens returns the output-token cap the client set, preferring
// max_completion_tokens over the deprecated max_tokens; ok is false when
// neither is set. Providers such as Anthropic require a cap, so translators
// need one answer rather than two fields.
func (r *ChatRequest) MaxOutputTokens() (n int, ok bool) {
	if r.MaxCompletionTokens != nil {
		return *r.MaxCompletionTokens, true
	}
	if r.MaxTokens != nil {
		return *r.MaxTokens, true
	}
	return 0, false
}

// StreamOptions is the stream_options object.
type StreamOptions struct {
	// IncludeUsage asks for one extra chunk with the whole request's usage.
	IncludeUsage bool `json:"include_usage,omitempty"`
	// IncludeObfuscation controls OpenAI's random padding field on chunks.
	IncludeObfuscation *bool `json:"include_obfuscation,omitempty"`
}

// Thinking is the gateway's thinking object (SPEC.md): Type is "enabled" or
// "disabled" and BudgetTokens, when set, is at least 1.
type Thinking struct {
	Type         string `json:"type"`
	BudgetTokens *int   `json:"budget_tokens,omitempty"`
}

// Role values of a request message.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
	RoleFunction  = "function"
)

// Message is one request message. Which fields matter depends on Role:
// tool messages carry ToolCallID, function messages carry Name, assistant
// messages may carry ToolCalls, FunctionCall, Refusal and replayed reasoning.
type Message struct {
	Role    string         `json:"role"`
	Content MessageContent `json:"content,omitzero"`
	// Name is the participant name, or the function name of a function
	// message.
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// FunctionCall is the deprecated single call of an assistant message.
	FunctionCall *FunctionCall `json:"function_call,omitempty"`
	Refusal      string        `json:"refusal,omitempty"`
	// ReasoningContent and Reasoning both carry replayed reasoning text:
	// DeepSeek, xAI and Azure use the first, Groq and newer vLLM the second
	// (PROVIDERS.md §0.3). Use ReasoningText to read either.
	ReasoningContent string `json:"reasoning_content,omitempty"`
	Reasoning        string `json:"reasoning,omitempty"`
	// Audio references an earlier audio answer ({"id": ...}) by the model.
	Audio json.RawMessage `json:"audio,omitempty"`
}

// ReasoningText returns the replayed reasoning of an assistant message under
// whichever of its two names the client used.
func (m *Message) ReasoningText() string {
	if m.ReasoningContent != "" {
		return m.ReasoningContent
	}
	return m.Reasoning
}

// ToolCall is one tool call of an assistant message.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names a function and its arguments. Arguments is the JSON
// text the model produced; it may be invalid JSON and is kept as a string.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is one entry of tools. Type "function" is the only kind supported
// (SPEC.md).
type Tool struct {
	Type     string      `json:"type"`
	Function FunctionDef `json:"function"`
}

// FunctionDef defines a function a model may call, in tools[].function and
// in the deprecated functions list.
type FunctionDef struct {
	// Name matches ^[a-zA-Z0-9_-]{1,64}$.
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema object of the arguments, kept raw
	// because translators forward schemas rather than interpret them.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Strict asks for schema-exact arguments (structured outputs).
	Strict *bool `json:"strict,omitempty"`
}

// ResponseFormat is response_format. Type is "text", "json_object" or
// "json_schema"; JSONSchema is set for the last.
type ResponseFormat struct {
	Type       string            `json:"type"`
	JSONSchema *JSONSchemaFormat `json:"json_schema,omitempty"`
}

// JSONSchemaFormat is response_format.json_schema.
type JSONSchemaFormat struct {
	// Name matches ^[a-zA-Z0-9_-]{1,64}$.
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Schema is the JSON Schema object, kept raw.
	Schema json.RawMessage `json:"schema,omitempty"`
	// Strict, when true, makes the output follow the schema exactly.
	Strict *bool `json:"strict,omitempty"`
}

// ToolChoice is tool_choice: either a string mode or an object.
//
// Mode is set ("none", "auto", "required") when the client sent a string.
// Otherwise Type says which object: "function" with Function naming the tool
// to force, or "allowed_tools" with the object kept raw in AllowedTools.
type ToolChoice struct {
	Mode         string
	Type         string
	Function     *FunctionName
	AllowedTools json.RawMessage
}

// FunctionName is the {"name": ...} object of a named tool choice.
type FunctionName struct {
	Name string `json:"name"`
}

// toolChoiceObject is the wire form of the object variants of ToolChoice.
type toolChoiceObject struct {
	Type         string          `json:"type"`
	Function     *FunctionName   `json:"function,omitempty"`
	AllowedTools json.RawMessage `json:"allowed_tools,omitempty"`
}

// UnmarshalJSON accepts a string or an object; any other JSON type is an
// *Error of code invalid_type with Param "tool_choice".
func (c *ToolChoice) UnmarshalJSON(data []byte) error {
	e, valid := decodeValue(data, func(d *decoder) *Error { return d.toolChoice(c, at(nil, "tool_choice")) })
	if !valid {
		*c = ToolChoice{}
		return invalidValueJSON("tool_choice")
	}
	return asError(e)
}

// MarshalJSON writes the string form when Mode is set and the object form
// otherwise.
func (c ToolChoice) MarshalJSON() ([]byte, error) {
	if c.Mode != "" || c.Type == "" {
		return json.Marshal(c.Mode)
	}
	return json.Marshal(toolChoiceObject{Type: c.Type, Function: c.Function, AllowedTools: c.AllowedTools})
}

// FunctionCallChoice is the deprecated function_call parameter: Mode is
// "none" or "auto" for the string form, Name is set for {"name": ...}.
type FunctionCallChoice struct {
	Mode string
	Name string
}

// UnmarshalJSON accepts a string or an object with a name; any other JSON
// type is an *Error of code invalid_type with Param "function_call".
func (c *FunctionCallChoice) UnmarshalJSON(data []byte) error {
	e, valid := decodeValue(data, func(d *decoder) *Error { return d.functionCallChoice(c, at(nil, "function_call")) })
	if !valid {
		*c = FunctionCallChoice{}
		return invalidValueJSON("function_call")
	}
	return asError(e)
}

// MarshalJSON writes the string form when Mode is set and {"name": ...}
// otherwise.
func (c FunctionCallChoice) MarshalJSON() ([]byte, error) {
	if c.Mode != "" {
		return json.Marshal(c.Mode)
	}
	return json.Marshal(FunctionName{Name: c.Name})
}

// Stop holds the stop sequences. The client may send one string or an array
// of 1 to 4 strings; both decode to a slice so translators see one shape.
// A nil Stop means absent or null; a non-nil empty one is the (invalid)
// empty array, kept distinct so validation can reject it.
type Stop []string

// UnmarshalJSON accepts null, a string or an array of strings; any other
// JSON type is an *Error of code invalid_type with Param "stop".
func (s *Stop) UnmarshalJSON(data []byte) error {
	v := *s
	e, valid := decodeValue(data, func(d *decoder) *Error { return d.stop(&v, at(nil, "stop")) })
	if !valid {
		return invalidValueJSON("stop")
	}
	if e == nil {
		*s = v
	}
	return asError(e)
}

// ContentKind says how a message's content was sent, because providers
// treat a string, an array of parts and null differently.
type ContentKind uint8

// The kinds of MessageContent.
const (
	// ContentNull is absent or null content (assistant messages with tool
	// calls).
	ContentNull ContentKind = iota
	// ContentString is content sent as a JSON string, held in Text.
	ContentString
	// ContentParts is content sent as an array of parts, held in Parts.
	ContentParts
)

// MessageContent is a message's content: a string, an array of content
// parts, or null. Kind says which; Text holds the string form and Parts the
// array form.
type MessageContent struct {
	Kind  ContentKind
	Text  string
	Parts []ContentPart
}

// TextContent returns string content, for translators that build messages.
func TextContent(s string) MessageContent {
	return MessageContent{Kind: ContentString, Text: s}
}

// PartsContent returns array content made of parts.
func PartsContent(parts ...ContentPart) MessageContent {
	if parts == nil {
		parts = []ContentPart{}
	}
	return MessageContent{Kind: ContentParts, Parts: parts}
}

// IsNull reports whether the content was absent or null.
func (c MessageContent) IsNull() bool { return c.Kind == ContentNull }

// JoinText returns the string content, or the text of every text part
// joined by sep; other parts are skipped. Providers whose system prompt or
// tool result is a plain string need this.
func (c MessageContent) JoinText(sep string) string {
	if c.Kind != ContentParts {
		return c.Text
	}
	var b []byte
	first := true
	for i := range c.Parts {
		if c.Parts[i].Type != PartText {
			continue
		}
		if !first {
			b = append(b, sep...)
		}
		first = false
		b = append(b, c.Parts[i].Text...)
	}
	return string(b)
}

// UnmarshalJSON accepts null, a string or an array of parts. Parts of a type
// this package does not model keep their verbatim JSON in Raw. A wrong JSON
// type is an *Error of code invalid_type with Param "content" (or
// "content[i]..." for a part).
func (c *MessageContent) UnmarshalJSON(data []byte) error {
	e, valid := decodeValue(data, func(d *decoder) *Error { return d.content(c, at(nil, "content")) })
	if !valid {
		*c = MessageContent{}
		return invalidValueJSON("content")
	}
	if e != nil {
		*c = MessageContent{}
	}
	return asError(e)
}

// MarshalJSON writes a string, an array of parts or null according to Kind.
func (c MessageContent) MarshalJSON() ([]byte, error) {
	switch c.Kind {
	case ContentString:
		return json.Marshal(c.Text)
	case ContentParts:
		if c.Parts == nil {
			return []byte("[]"), nil
		}
		return json.Marshal(c.Parts)
	}
	return []byte("null"), nil
}

// Content part types of PROVIDERS.md §0.1; refusal parts appear in replayed
// assistant messages.
const (
	PartText       = "text"
	PartImageURL   = "image_url"
	PartInputAudio = "input_audio"
	PartFile       = "file"
	PartRefusal    = "refusal"
)

func knownPartType(t string) bool {
	switch t {
	case PartText, PartImageURL, PartInputAudio, PartFile, PartRefusal:
		return true
	}
	return false
}

// ContentPart is one element of array content. Type selects which field is
// meaningful. A part of a type not listed above keeps its verbatim JSON in
// Raw, and MarshalJSON writes Raw back unchanged, so new part types survive
// a decode and encode.
type ContentPart struct {
	Type       string      `json:"type"`
	Text       string      `json:"text,omitempty"`
	Refusal    string      `json:"refusal,omitempty"`
	ImageURL   *ImageURL   `json:"image_url,omitempty"`
	InputAudio *InputAudio `json:"input_audio,omitempty"`
	File       *FilePart   `json:"file,omitempty"`
	// CacheControl is the Anthropic-style prompt-caching marker
	// ({"type":"ephemeral"}) that OpenAI-shaped clients put on parts; the
	// Anthropic translator maps it to a cache breakpoint (PROVIDERS.md §3).
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
	// Raw is the verbatim part when Type is not one modelled here.
	Raw json.RawMessage `json:"-"`
}

// MarshalJSON writes Raw for parts of an unmodelled type and the typed
// fields otherwise; a text part always carries "text", even when empty.
func (p ContentPart) MarshalJSON() ([]byte, error) {
	if len(p.Raw) > 0 && !knownPartType(p.Type) {
		return p.Raw, nil
	}
	type plain ContentPart
	if p.Type == PartText {
		return json.Marshal(struct {
			Type         string          `json:"type"`
			Text         string          `json:"text"`
			CacheControl json.RawMessage `json:"cache_control,omitempty"`
		}{p.Type, p.Text, p.CacheControl})
	}
	return json.Marshal(plain(p))
}

// ImageURL is the image_url of an image part: an http(s) or data: URL and
// an optional detail ("auto", "low", "high").
type ImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

// InputAudio is base64 audio data with its format ("wav", "mp3").
type InputAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

// FilePart is the file of a file part: an uploaded file id, or inline
// base64 data with a filename.
type FilePart struct {
	FileID   string `json:"file_id,omitempty"`
	FileData string `json:"file_data,omitempty"`
	Filename string `json:"filename,omitempty"`
}

// jsonKind classifies a JSON value by its first byte: 'n' null, 's' string,
// 'o' object, 'a' array, 'b' boolean, 'd' number, 0 empty or invalid.
func jsonKind(data []byte) byte {
	data = bytes.TrimLeft(data, " \t\r\n")
	if len(data) == 0 {
		return 0
	}
	switch c := data[0]; {
	case c == 'n':
		return 'n'
	case c == '"':
		return 's'
	case c == '{':
		return 'o'
	case c == '[':
		return 'a'
	case c == 't' || c == 'f':
		return 'b'
	case c == '-' || (c >= '0' && c <= '9'):
		return 'd'
	}
	return 0
}
