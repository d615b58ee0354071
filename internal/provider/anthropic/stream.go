package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/sse"
)

// stream translates Anthropic's typed SSE events into OpenAI chunks
// (PROVIDERS.md §3 "Streaming"):
//
//	message_start        the role chunk; input usage remembered
//	content_block_start  tool_use: the tool call's first fragment, with the
//	                     next OpenAI tool index; text, thinking: nothing
//	text_delta           delta.content
//	input_json_delta     delta.tool_calls[k].function.arguments
//	thinking_delta       delta.reasoning_content (strict compliance off)
//	signature_delta      kept for the thinking block
//	content_block_stop   tool_use that streamed no arguments: "{}" (as the
//	                     non-streamed answer has); thinking and
//	                     redacted_thinking (strict off): the whole block as
//	                     delta.content_blocks, ready to send back
//	message_delta        the finish chunk (finish_reason mapped); output usage
//	message_stop         the usage-only chunk, then io.EOF
//	error                *provider.StreamError
//	ping, unknown        ignored
//
// Every chunk carries "usage": null; the one usage chunk at the end has
// empty choices and combines message_start's input usage with
// message_delta's output usage.
type stream struct {
	ctx    context.Context
	resp   *http.Response
	r      *sse.Reader
	strict bool
	// provider is the slug named in errors: Name, or the host's slug
	// when a Translator reads the stream (vertex-ai).
	provider string

	id       string
	model    string
	created  int64
	started  bool // the role chunk was queued
	finished bool // the finish chunk was queued
	done     bool // message_stop was seen: drain the queue, then io.EOF

	usage   nativeUsage
	stop    string
	refusal string
	blocks  map[int64]*blockState
	tools   int // OpenAI tool-call indexes handed out so far

	queue []provider.Chunk
}

// blockState follows one open content block by its Anthropic index.
type blockState struct {
	typ       string
	tool      int    // OpenAI index of a tool_use block
	argsSent  bool   // a non-empty arguments fragment was sent
	input     string // tool_use input given whole in content_block_start
	thinking  strings.Builder
	signature strings.Builder
	raw       []byte // a redacted_thinking block, verbatim
}

func newStream(ctx context.Context, resp *http.Response, r *sse.Reader, strict bool) *stream {
	return &stream{ctx: ctx, resp: resp, r: r, strict: strict, provider: Name, created: now().Unix(), blocks: make(map[int64]*blockState)}
}

// Header returns Anthropic's response headers.
func (s *stream) Header() http.Header {
	if s.resp == nil {
		return nil
	}
	return s.resp.Header
}

// Close releases the connection.
func (s *stream) Close() error {
	if s.resp == nil || s.resp.Body == nil {
		return nil
	}
	return s.resp.Body.Close()
}

// Next returns the next OpenAI chunk; io.EOF after message_stop.
func (s *stream) Next() (provider.Chunk, error) {
	for {
		if len(s.queue) > 0 {
			ch := s.queue[0]
			s.queue[0] = provider.Chunk{}
			s.queue = s.queue[1:]
			return ch, nil
		}
		if s.done {
			return provider.Chunk{}, io.EOF
		}
		ev, err := s.r.Next()
		if err != nil {
			return provider.Chunk{}, s.readError(err)
		}
		// Anthropic pads data with trailing spaces (PROVIDERS.md §0.10).
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		if err := s.handle(ev.Name, data); err != nil {
			return provider.Chunk{}, err
		}
	}
}

func (s *stream) readError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %s closed the stream before message_stop", provider.ErrStreamBroken, s.provider)
	}
	if s.ctx != nil {
		if cerr := provider.ClassifyTransportError(s.ctx, err); !errors.Is(cerr, provider.ErrUnreachable) {
			return cerr
		}
	}
	return fmt.Errorf("%w: %w", provider.ErrStreamBroken, err)
}

// handle translates one event. The event's type is its data's "type",
// falling back to the SSE event name.
func (s *stream) handle(name string, data []byte) error {
	if !json.Valid(data) {
		return fmt.Errorf("%w: %s sent an event that is not JSON: %.200s", provider.ErrBadResponse, s.provider, data)
	}
	ev := gjson.ParseBytes(data)
	typ := ev.Get("type").String()
	if typ == "" {
		typ = name
	}
	if s.finished && strings.HasPrefix(typ, "content_block_") {
		// Nothing may follow the finish chunk; Anthropic sends no blocks
		// after message_delta.
		return nil
	}
	switch typ {
	case "message_start":
		msg := ev.Get("message")
		if !s.started {
			s.id = msg.Get("id").String()
			s.model = msg.Get("model").String()
		}
		s.readUsage(msg.Get("usage"))
		s.start()
	case "content_block_start":
		s.start()
		s.blockStart(ev.Get("index").Int(), ev.Get("content_block"))
	case "content_block_delta":
		s.start()
		s.blockDelta(ev.Get("index").Int(), ev.Get("delta"))
	case "content_block_stop":
		s.start()
		s.blockStop(ev.Get("index").Int())
	case "message_delta":
		s.start()
		d := ev.Get("delta")
		if r := d.Get("stop_reason").String(); r != "" {
			s.stop = r
		}
		if e := d.Get("stop_details.explanation").String(); e != "" {
			s.refusal = e
		}
		s.readUsage(ev.Get("usage"))
		s.finish()
	case "message_stop":
		s.start()
		s.finish()
		u := s.usage.usage()
		s.push(llm.ChatChunk{Choices: []llm.ChunkChoice{}, Usage: u.OpenAI()}, &u)
		s.done = true
	case "error":
		return &provider.StreamError{Provider: s.provider, Data: bytes.Clone(data)}
	}
	return nil
}

// readUsage takes every usage field present: message_start has the input
// side, message_delta the cumulative output (and, in newer answers, the
// input side again).
func (s *stream) readUsage(u gjson.Result) {
	if !u.IsObject() {
		return
	}
	for _, f := range []struct {
		path string
		dst  *int
	}{
		{"input_tokens", &s.usage.InputTokens},
		{"cache_creation_input_tokens", &s.usage.CacheCreationInputTokens},
		{"cache_read_input_tokens", &s.usage.CacheReadInputTokens},
		{"output_tokens", &s.usage.OutputTokens},
	} {
		if v := u.Get(f.path); v.Type == gjson.Number {
			*f.dst = int(v.Int())
		}
	}
	if v := u.Get("output_tokens_details.thinking_tokens"); v.Type == gjson.Number {
		if s.usage.OutputTokensDetails == nil {
			s.usage.OutputTokensDetails = &outputDetails{}
		}
		s.usage.OutputTokensDetails.ThinkingTokens = int(v.Int())
	}
}

// start queues the role chunk once.
func (s *stream) start() {
	if s.started {
		return
	}
	s.started = true
	s.id = completionID(s.id)
	empty := ""
	s.delta(llm.Delta{Role: "assistant", Content: &empty})
}

func (s *stream) blockStart(idx int64, cb gjson.Result) {
	bs := &blockState{typ: cb.Get("type").String()}
	s.blocks[idx] = bs
	switch bs.typ {
	case "text":
		if t := cb.Get("text").String(); t != "" {
			s.delta(llm.Delta{Content: &t})
		}
	case "tool_use":
		bs.tool = s.tools
		s.tools++
		if in := cb.Get("input"); in.IsObject() && strings.TrimSpace(in.Raw) != "{}" {
			bs.input = in.Raw
		}
		id := cb.Get("id").String()
		if id == "" {
			// OpenAI clients match results to calls by id.
			id = "toolu_" + randomID()
		}
		s.delta(llm.Delta{ToolCalls: []llm.ToolCallDelta{{
			Index: bs.tool, ID: id, Type: "function",
			Function: llm.FunctionDelta{Name: cb.Get("name").String()},
		}}})
	case "thinking":
		if t := cb.Get("thinking").String(); t != "" {
			bs.thinking.WriteString(t)
			if !s.strict {
				s.delta(llm.Delta{ReasoningContent: &t})
			}
		}
		bs.signature.WriteString(cb.Get("signature").String())
	case "redacted_thinking":
		bs.raw = []byte(cb.Raw)
	}
}

func (s *stream) blockDelta(idx int64, d gjson.Result) {
	bs := s.blocks[idx]
	switch d.Get("type").String() {
	case "text_delta":
		if t := d.Get("text").String(); t != "" {
			s.delta(llm.Delta{Content: &t})
		}
	case "input_json_delta":
		if bs == nil || bs.typ != "tool_use" {
			return // a server tool's input, not the client's
		}
		if pj := d.Get("partial_json").String(); pj != "" {
			bs.argsSent = true
			s.delta(llm.Delta{ToolCalls: []llm.ToolCallDelta{{Index: bs.tool, Function: llm.FunctionDelta{Arguments: pj}}}})
		}
	case "thinking_delta":
		t := d.Get("thinking").String()
		if t == "" {
			return
		}
		if bs != nil {
			bs.thinking.WriteString(t)
		}
		if !s.strict {
			s.delta(llm.Delta{ReasoningContent: &t})
		}
	case "signature_delta":
		if bs != nil {
			bs.signature.WriteString(d.Get("signature").String())
		}
	}
}

func (s *stream) blockStop(idx int64) {
	bs := s.blocks[idx]
	if bs == nil {
		return
	}
	delete(s.blocks, idx)
	switch bs.typ {
	case "tool_use":
		if !bs.argsSent {
			args := "{}"
			if bs.input != "" {
				args = bs.input
			}
			s.delta(llm.Delta{ToolCalls: []llm.ToolCallDelta{{Index: bs.tool, Function: llm.FunctionDelta{Arguments: args}}}})
		}
	case "thinking":
		if !s.strict {
			b, _ := marshal(struct {
				Type      string `json:"type"`
				Thinking  string `json:"thinking"`
				Signature string `json:"signature"`
			}{"thinking", bs.thinking.String(), bs.signature.String()})
			s.delta(llm.Delta{ContentBlocks: []json.RawMessage{b}})
		}
	case "redacted_thinking":
		if !s.strict {
			s.delta(llm.Delta{ContentBlocks: []json.RawMessage{bs.raw}})
		}
	}
}

// finish queues the finish chunk once.
func (s *stream) finish() {
	if s.finished {
		return
	}
	s.finished = true
	var d llm.Delta
	if s.stop == "refusal" && s.refusal != "" {
		r := s.refusal
		d.Refusal = &r
	}
	fr := finishReason(s.stop, s.tools > 0)
	s.push(llm.ChatChunk{Choices: []llm.ChunkChoice{{Delta: d, FinishReason: &fr}}}, nil)
}

func (s *stream) delta(d llm.Delta) {
	s.push(llm.ChatChunk{Choices: []llm.ChunkChoice{{Delta: d}}}, nil)
}

// push completes c with the stream's id, model and time and queues it.
func (s *stream) push(c llm.ChatChunk, u *llm.Usage) {
	c.ID, c.Object, c.Created, c.Model = s.id, "chat.completion.chunk", s.created, s.model
	data, err := marshal(c)
	if err != nil {
		// Unreachable: every raw value inside c came from a validated
		// event.
		return
	}
	s.queue = append(s.queue, provider.Chunk{Data: data, Usage: u, UsageOnly: u != nil, Model: s.model})
}
