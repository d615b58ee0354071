package bedrock

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
)

// eventStreamType is ConverseStream's Content-Type.
const eventStreamType = "application/vnd.amazon.eventstream"

const (
	// preludeLen is a frame's total length, headers length and prelude CRC.
	preludeLen = 12
	// minFrameLen is a frame with no headers and no payload.
	minFrameLen = 16
	// maxFrameLen bounds one frame (the event-stream format allows 16 MiB
	// of payload); a length beyond it is garbage, not a reason to allocate.
	maxFrameLen = 16<<20 + 64<<10
	// maxHeadersLen bounds a frame's headers. Bedrock sends three short
	// ones; the decoder's header set is quadratic in their number.
	maxHeadersLen = 16 << 10
)

// errBadFrame is a frame that is not valid AWS event-stream encoding.
var errBadFrame = errors.New("invalid event-stream frame")

// frameReader reads the frames of an AWS event stream (PROVIDERS.md §6):
// each is length-checked before it is read whole, then decoded, CRCs
// verified, by aws-sdk-go-v2's eventstream decoder.
type frameReader struct {
	r       io.Reader
	dec     *eventstream.Decoder
	frame   []byte
	payload []byte
}

func newFrameReader(r io.Reader) *frameReader {
	return &frameReader{r: r, dec: eventstream.NewDecoder()}
}

// next returns the next frame: io.EOF at a clean end between frames,
// io.ErrUnexpectedEOF when the body ends inside one, errBadFrame for
// garbage, or the reader's own error. The message's payload is valid until
// the next call.
func (f *frameReader) next() (eventstream.Message, error) {
	var prelude [preludeLen]byte
	if _, err := io.ReadFull(f.r, prelude[:]); err != nil {
		return eventstream.Message{}, err
	}
	total := binary.BigEndian.Uint32(prelude[0:4])
	headers := binary.BigEndian.Uint32(prelude[4:8])
	if total < minFrameLen || total > maxFrameLen || headers > maxHeadersLen || headers > total-minFrameLen {
		return eventstream.Message{}, fmt.Errorf("%w: total length %d, headers length %d", errBadFrame, total, headers)
	}
	// The frame is read into a buffer that grows with the bytes that
	// actually arrive, so a lying length costs no large allocation.
	fb := bytes.NewBuffer(f.frame[:0])
	fb.Write(prelude[:])
	if _, err := io.CopyN(fb, f.r, int64(total)-preludeLen); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return eventstream.Message{}, err
	}
	buf := fb.Bytes()
	f.frame = buf[:0]
	msg, err := f.dec.Decode(bytes.NewReader(buf), f.payload[:0])
	if err != nil {
		return eventstream.Message{}, fmt.Errorf("%w: %v", errBadFrame, err)
	}
	if cap(msg.Payload) > cap(f.payload) {
		f.payload = msg.Payload[:0]
	}
	return msg, nil
}

// headerString returns a string header of msg, or "".
func headerString(msg eventstream.Message, name string) string {
	if v, ok := msg.Headers.Get(name).(eventstream.StringValue); ok {
		return string(v)
	}
	return ""
}

// stream translates ConverseStream events to OpenAI chunks (PROVIDERS.md
// §0.8): a role chunk first, content, reasoning (extended only) and tool
// call fragments, the finish reason at messageStop, and the usage chunk
// once the metadata event (which Bedrock sends after messageStop, though a
// recorded stream has it before) and messageStop have both arrived.
type stream struct {
	ctx      context.Context
	resp     *http.Response
	fr       *frameReader
	id       string
	model    string
	created  int64
	extended bool

	queue     []provider.Chunk
	err       error
	started   bool
	stopped   bool
	usage     *llm.Usage
	usageSent bool
	// tools maps a contentBlockIndex to its tool_calls index.
	tools map[int]int
	// reasoning accumulates reasoning blocks (extended only) to hand them
	// back whole, signature included, as content_blocks at their end.
	reasoning map[int]*reasoningAcc
}

type reasoningAcc struct {
	text      bytes.Buffer
	signature string
	redacted  bytes.Buffer
}

var _ provider.Stream = (*stream)(nil)

func newStream(ctx context.Context, resp *http.Response, model, id string, extended bool) *stream {
	return &stream{ctx: ctx, resp: resp, fr: newFrameReader(resp.Body), id: id, model: model, created: now().Unix(), extended: extended}
}

// Header returns Bedrock's response headers.
func (s *stream) Header() http.Header { return s.resp.Header }

// Close releases the connection.
func (s *stream) Close() error { return s.resp.Body.Close() }

// Next returns the next chunk, io.EOF after a complete stream.
func (s *stream) Next() (provider.Chunk, error) {
	for {
		if len(s.queue) > 0 {
			ch := s.queue[0]
			s.queue = s.queue[1:]
			return ch, nil
		}
		if s.err != nil {
			return provider.Chunk{}, s.err
		}
		msg, err := s.fr.next()
		if err != nil {
			s.err = s.end(err)
			continue
		}
		if err := s.handle(msg); err != nil {
			s.err = err
		}
	}
}

// end decides what the end of the body means.
func (s *stream) end(err error) error {
	complete := s.stopped && s.usage != nil
	switch {
	case errors.Is(err, io.EOF) && s.stopped:
		return io.EOF
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		if complete {
			return io.EOF
		}
		return fmt.Errorf("%w: bedrock closed the stream before messageStop", provider.ErrStreamBroken)
	case errors.Is(err, errBadFrame):
		if complete {
			return io.EOF
		}
		return fmt.Errorf("%w: %w", provider.ErrStreamBroken, err)
	}
	if complete {
		return io.EOF
	}
	if cerr := provider.ClassifyTransportError(s.ctx, err); !errors.Is(cerr, provider.ErrUnreachable) {
		return cerr
	}
	return fmt.Errorf("%w: %w", provider.ErrStreamBroken, err)
}

// streamEvent is the union of the ConverseStream event payloads the
// gateway reads; each event fills its own fields.
type streamEvent struct {
	ContentBlockIndex int `json:"contentBlockIndex"`
	Start             *struct {
		ToolUse *struct {
			ToolUseID string `json:"toolUseId"`
			Name      string `json:"name"`
		} `json:"toolUse"`
	} `json:"start"`
	Delta *struct {
		Text    *string `json:"text"`
		ToolUse *struct {
			Input string `json:"input"`
		} `json:"toolUse"`
		ReasoningContent *struct {
			Text            string `json:"text"`
			Signature       string `json:"signature"`
			RedactedContent string `json:"redactedContent"`
		} `json:"reasoningContent"`
	} `json:"delta"`
	StopReason string      `json:"stopReason"`
	Usage      *tokenUsage `json:"usage"`
}

func (s *stream) handle(msg eventstream.Message) error {
	switch mt := headerString(msg, ":message-type"); mt {
	case "exception":
		return &provider.StreamError{Provider: Name, Data: exceptionData(msg.Payload, headerString(msg, ":exception-type"))}
	case "error":
		data, _ := json.Marshal(map[string]string{"message": headerString(msg, ":error-message"), "code": headerString(msg, ":error-code")})
		return &provider.StreamError{Provider: Name, Data: data}
	case "event", "":
	default:
		return nil
	}
	et := headerString(msg, ":event-type")
	switch et {
	case "messageStart", "contentBlockStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata":
	default:
		return nil // unknown events are skipped, as the SDKs do
	}
	var ev streamEvent
	if err := json.Unmarshal(msg.Payload, &ev); err != nil {
		return fmt.Errorf("%w: bedrock sent a %s event that is not JSON: %v", provider.ErrStreamBroken, et, err)
	}
	switch et {
	case "messageStart":
		s.start()
	case "contentBlockStart":
		if ev.Start != nil && ev.Start.ToolUse != nil {
			s.toolStart(ev.ContentBlockIndex, ev.Start.ToolUse.ToolUseID, ev.Start.ToolUse.Name)
		}
	case "contentBlockDelta":
		s.delta(&ev)
	case "contentBlockStop":
		if acc, ok := s.reasoning[ev.ContentBlockIndex]; ok {
			delete(s.reasoning, ev.ContentBlockIndex)
			s.start()
			s.push(llm.Delta{ContentBlocks: []json.RawMessage{acc.block()}}, nil)
		}
	case "messageStop":
		if s.stopped {
			return nil
		}
		s.start()
		s.stopped = true
		fin := finishReason(ev.StopReason)
		s.push(llm.Delta{}, &fin)
		s.pushUsage()
	case "metadata":
		if ev.Usage != nil && s.usage == nil {
			u := ev.Usage.usage()
			s.usage = &u
			s.pushUsage()
		}
	}
	return nil
}

func (s *stream) delta(ev *streamEvent) {
	d := ev.Delta
	if d == nil {
		return
	}
	switch {
	case d.Text != nil:
		if *d.Text != "" {
			s.start()
			t := *d.Text
			s.push(llm.Delta{Content: &t}, nil)
		}
	case d.ToolUse != nil:
		idx, ok := s.tools[ev.ContentBlockIndex]
		if !ok {
			// A fragment without its start event: open the call anyway.
			idx = s.toolStart(ev.ContentBlockIndex, toolUseID(fmt.Sprintf("%s-%d", s.id, ev.ContentBlockIndex)), "")
		}
		if d.ToolUse.Input != "" {
			s.push(llm.Delta{ToolCalls: []llm.ToolCallDelta{{Index: idx, Function: llm.FunctionDelta{Arguments: d.ToolUse.Input}}}}, nil)
		}
	case d.ReasoningContent != nil && s.extended:
		rc := d.ReasoningContent
		if s.reasoning == nil {
			s.reasoning = map[int]*reasoningAcc{}
		}
		acc := s.reasoning[ev.ContentBlockIndex]
		if acc == nil {
			acc = &reasoningAcc{}
			s.reasoning[ev.ContentBlockIndex] = acc
		}
		acc.text.WriteString(rc.Text)
		acc.redacted.WriteString(rc.RedactedContent)
		if rc.Signature != "" {
			acc.signature = rc.Signature
		}
		if rc.Text != "" {
			s.start()
			t := rc.Text
			s.push(llm.Delta{ReasoningContent: &t}, nil)
		}
	}
}

// block is the finished reasoning block in its native shape, as
// translateResponse returns it in content_blocks.
func (a *reasoningAcc) block() json.RawMessage {
	rc := &reasoningContent{}
	if a.redacted.Len() > 0 && a.text.Len() == 0 {
		rc.RedactedContent = a.redacted.String()
	} else {
		rc.ReasoningText = &struct {
			Text      string `json:"text"`
			Signature string `json:"signature,omitempty"`
		}{a.text.String(), a.signature}
	}
	return reasoningBlock(rc)
}

func (s *stream) toolStart(block int, id, name string) int {
	if s.tools == nil {
		s.tools = map[int]int{}
	}
	if idx, ok := s.tools[block]; ok {
		return idx
	}
	idx := len(s.tools)
	s.tools[block] = idx
	s.start()
	s.push(llm.Delta{ToolCalls: []llm.ToolCallDelta{{Index: idx, ID: id, Type: "function", Function: llm.FunctionDelta{Name: name}}}}, nil)
	return idx
}

// start queues the first chunk, {role: assistant, content: ""}, once.
func (s *stream) start() {
	if s.started {
		return
	}
	s.started = true
	empty := ""
	s.push(llm.Delta{Role: "assistant", Content: &empty}, nil)
}

func (s *stream) push(d llm.Delta, finish *string) {
	c := llm.ChatChunk{
		ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model,
		Choices: []llm.ChunkChoice{{Index: 0, Delta: d, FinishReason: finish}},
	}
	data, err := marshal(c)
	if err != nil {
		return
	}
	s.queue = append(s.queue, provider.Chunk{Data: data, Model: s.model})
}

// pushUsage queues the usage-only chunk once both messageStop and the
// usage have arrived.
func (s *stream) pushUsage() {
	if !s.stopped || s.usage == nil || s.usageSent {
		return
	}
	s.usageSent = true
	u := *s.usage
	c := llm.ChatChunk{
		ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model,
		Choices: []llm.ChunkChoice{}, Usage: u.OpenAI(),
	}
	data, err := marshal(c)
	if err != nil {
		return
	}
	s.queue = append(s.queue, provider.Chunk{Data: data, Usage: &u, UsageOnly: true, Model: s.model})
}

// exceptionData is the StreamError body of an exception frame: its JSON
// payload ({"message": ...}) with the exception type added as "code".
func exceptionData(payload []byte, typ string) []byte {
	if !json.Valid(payload) || !gjson.ParseBytes(payload).IsObject() {
		data, _ := json.Marshal(map[string]string{"message": string(payload), "code": typ})
		return data
	}
	data := bytes.Clone(payload)
	if m := gjson.GetBytes(data, "Message"); m.Exists() && !gjson.GetBytes(data, "message").Exists() {
		data, _ = sjson.SetBytes(data, "message", m.String())
	}
	if typ != "" && !gjson.GetBytes(data, "code").Exists() {
		if d, err := sjson.SetBytes(data, "code", typ); err == nil {
			data = d
		}
	}
	return data
}
