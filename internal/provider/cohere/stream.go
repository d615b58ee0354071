package cohere

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/tidwall/gjson"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/sse"
)

// newStream reads resp's body as Cohere's event stream.
func newStream(ctx context.Context, resp *http.Response, model string, strict bool) *stream {
	return &stream{ctx: ctx, resp: resp, dec: newDecoder(model, strict), r: sse.NewReader(resp.Body)}
}

// stream reads Cohere's SSE events and yields OpenAI chunks.
type stream struct {
	ctx     context.Context
	resp    *http.Response
	dec     *decoder
	r       *sse.Reader
	pending []provider.Chunk
}

// Next returns the next OpenAI chunk. Cohere sends no [DONE]: the stream is
// complete after message-end (PROVIDERS.md §0.10), and an end of the body
// before it is a broken stream.
func (s *stream) Next() (provider.Chunk, error) {
	for len(s.pending) == 0 {
		if s.dec.done {
			return provider.Chunk{}, io.EOF
		}
		ev, err := s.r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return provider.Chunk{}, fmt.Errorf("%w: cohere closed the stream before message-end", provider.ErrStreamBroken)
			}
			if cerr := provider.ClassifyTransportError(s.ctx, err); !errors.Is(cerr, provider.ErrUnreachable) {
				return provider.Chunk{}, cerr
			}
			return provider.Chunk{}, fmt.Errorf("%w: %w", provider.ErrStreamBroken, err)
		}
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		chunks, err := s.dec.feed(ev.Name, data)
		if err != nil {
			return provider.Chunk{}, err
		}
		s.pending = chunks
	}
	ch := s.pending[0]
	s.pending = s.pending[1:]
	return ch, nil
}

func (s *stream) Header() http.Header { return s.resp.Header }

func (s *stream) Close() error { return s.resp.Body.Close() }

// decoder turns Cohere v2 stream events into OpenAI chunks. It holds the
// state of one stream and does no I/O, so tests and fuzzers drive it with
// recorded event payloads.
type decoder struct {
	model   string
	strict  bool
	id      string
	created int64
	started bool
	// nextTool is the OpenAI index of the next tool call; openTool the one
	// receiving argument fragments (-1 when none). Cohere's tool-call-end
	// index does not always match its start (PROVIDERS.md §7), so the open
	// call is tracked rather than looked up by index.
	nextTool int
	openTool int
	sawTools bool
	done     bool
}

func newDecoder(model string, strict bool) *decoder {
	return &decoder{model: model, strict: strict, openTool: -1}
}

// feed processes one event's data; name is the SSE event name, used when
// the payload has no type field.
func (d *decoder) feed(name string, data []byte) ([]provider.Chunk, error) {
	if d.done {
		return nil, nil
	}
	if !json.Valid(data) {
		return nil, fmt.Errorf("%w: cohere sent a stream event that is not JSON", provider.ErrBadResponse)
	}
	ev := gjson.ParseBytes(data)
	if !ev.IsObject() {
		return nil, fmt.Errorf("%w: cohere sent a stream event that is not a JSON object", provider.ErrBadResponse)
	}
	typ := ev.Get("type").String()
	if typ == "" {
		typ = name
	}
	var out []provider.Chunk
	start := func() {
		if d.started {
			return
		}
		d.started = true
		if d.id == "" {
			d.id = newID()
		}
		d.created = now().Unix()
		empty := ""
		out = append(out, d.chunk(llm.Delta{Role: "assistant", Content: &empty}, nil, nil))
	}
	switch typ {
	case "message-start":
		if id := ev.Get("id").String(); id != "" && !d.started {
			d.id = id
		}
		start()
	case "content-delta":
		start()
		c := ev.Get("delta.message.content")
		lp := streamLogprobs(ev.Get("logprobs"))
		if th := c.Get("thinking"); th.Exists() {
			if !d.strict && th.String() != "" {
				s := th.String()
				out = append(out, d.chunk(llm.Delta{ReasoningContent: &s}, nil, lp))
			}
			break
		}
		if t := c.Get("text").String(); t != "" || lp != nil {
			out = append(out, d.chunk(llm.Delta{Content: &t}, nil, lp))
		}
	case "tool-plan-delta":
		start()
		if tp := ev.Get("delta.message.tool_plan").String(); tp != "" && !d.strict {
			out = append(out, d.chunk(llm.Delta{ReasoningContent: &tp}, nil, nil))
		}
	case "tool-call-start":
		start()
		tc := ev.Get("delta.message.tool_calls")
		if tc.IsArray() {
			tc = tc.Get("0")
		}
		id := tc.Get("id").String()
		if id == "" {
			id = "call_" + newID()
		}
		k := d.nextTool
		d.nextTool++
		d.openTool = k
		d.sawTools = true
		out = append(out, d.chunk(llm.Delta{ToolCalls: []llm.ToolCallDelta{{
			Index: k, ID: id, Type: "function",
			Function: llm.FunctionDelta{Name: tc.Get("function.name").String(), Arguments: tc.Get("function.arguments").String()},
		}}}, nil, nil))
	case "tool-call-delta":
		start()
		k := d.openTool
		if k < 0 {
			// A fragment after its call was closed: it can only belong to
			// the last call.
			if d.nextTool == 0 {
				return nil, fmt.Errorf("%w: cohere sent tool-call arguments before any tool-call-start", provider.ErrBadResponse)
			}
			k = d.nextTool - 1
		}
		tc := ev.Get("delta.message.tool_calls")
		if tc.IsArray() {
			tc = tc.Get("0")
		}
		if args := tc.Get("function.arguments").String(); args != "" {
			out = append(out, d.chunk(llm.Delta{ToolCalls: []llm.ToolCallDelta{{Index: k, Function: llm.FunctionDelta{Arguments: args}}}}, nil, nil))
		}
	case "tool-call-end":
		d.openTool = -1
	case "message-end":
		start()
		delta := ev.Get("delta")
		native := delta.Get("finish_reason").String()
		fr, ok := finishReason(native, d.sawTools)
		if e := delta.Get("error").String(); e != "" || !ok {
			return nil, streamError(native, e)
		}
		d.done = true
		out = append(out, d.chunk(llm.Delta{}, &fr, nil))
		var cu usage
		if u := delta.Get("usage"); u.IsObject() {
			if err := json.Unmarshal([]byte(u.Raw), &cu); err != nil {
				return nil, fmt.Errorf("%w: cohere sent unreadable usage: %v", provider.ErrBadResponse, err)
			}
		}
		u := normalizeUsage(&cu)
		out = append(out, d.usageChunk(u))
	case "error":
		return nil, &provider.StreamError{Provider: Name, Data: bytes.Clone(data)}
	default:
		// content-start, content-end (the delta says whether it is text
		// or thinking), citation-start/-end and debug carry nothing an
		// OpenAI chunk has.
	}
	return out, nil
}

// streamError reports a generation that ended with ERROR or TIMEOUT, or
// with message-end's error field, after the 200 was sent.
func streamError(reason, detail string) error {
	msg := "cohere ended the generation"
	if reason != "" {
		msg += " with finish_reason " + reason
	}
	if detail != "" {
		msg += ": " + detail
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "server_error", "param": nil, "code": nil}})
	return &provider.StreamError{Provider: Name, Data: b}
}

// streamLogprobs converts a content-delta's logprobs (one item, or a list)
// to OpenAI's shape.
func streamLogprobs(v gjson.Result) json.RawMessage {
	if !v.Exists() || v.Type == gjson.Null {
		return nil
	}
	var items []logprobItem
	raw := v.Raw
	if v.IsObject() {
		raw = "[" + raw + "]"
	}
	if err := json.Unmarshal([]byte(raw), &items); err != nil {
		return nil
	}
	return convertLogprobs(items)
}

func (d *decoder) chunk(delta llm.Delta, finish *string, logprobs json.RawMessage) provider.Chunk {
	c := llm.ChatChunk{
		ID: "chatcmpl-" + d.id, Object: "chat.completion.chunk", Created: d.created, Model: d.model,
		Choices: []llm.ChunkChoice{{Index: 0, Delta: delta, Logprobs: logprobs, FinishReason: finish}},
	}
	b, _ := marshal(c)
	return provider.Chunk{Data: b, Model: d.model}
}

func (d *decoder) usageChunk(u llm.Usage) provider.Chunk {
	c := llm.ChatChunk{
		ID: "chatcmpl-" + d.id, Object: "chat.completion.chunk", Created: d.created, Model: d.model,
		Choices: []llm.ChunkChoice{}, Usage: u.OpenAI(),
	}
	b, _ := marshal(c)
	return provider.Chunk{Data: b, Model: d.model, Usage: &u, UsageOnly: true}
}
