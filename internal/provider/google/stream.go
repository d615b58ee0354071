package google

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"

	"github.com/tidwall/gjson"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/sse"
)

// stream translates streamGenerateContent?alt=sse (PROVIDERS.md §4
// "Streaming"): every event is a GenerateContentResponse holding only the
// new parts, with running usage totals; there is no end marker, so a clean
// end of the body after every candidate has its finishReason is the end,
// and an end before that is a broken stream.
type stream struct {
	c      *Client
	ctx    context.Context
	body   io.ReadCloser
	header http.Header
	r      *sse.Reader

	strict       bool
	wantLogprobs bool

	id      string
	created int64
	model   string

	choices map[int]*choiceState
	usage   *llm.Usage
	blocked bool

	queue []provider.Chunk
	// err is returned once the queue is empty: io.EOF after a complete
	// stream, anything else after a broken one.
	err error
}

// choiceState tracks one candidate across events.
type choiceState struct {
	finished   bool
	calledTool bool
	nTools     int
}

func (c *Client) newStream(ctx context.Context, call *provider.ChatCall, body io.ReadCloser, header http.Header) *stream {
	return &stream{
		c:            c,
		ctx:          ctx,
		body:         body,
		header:       header,
		r:            sse.NewReader(body),
		strict:       call.StrictOpenAI,
		wantLogprobs: call.Request.Logprobs != nil && *call.Request.Logprobs,
		created:      now().Unix(),
		model:        call.Request.Model,
		choices:      map[int]*choiceState{},
	}
}

// Header returns the provider's response headers.
func (s *stream) Header() http.Header { return s.header }

// Close releases the upstream body.
func (s *stream) Close() error { return s.body.Close() }

// Next returns the next OpenAI chunk.
func (s *stream) Next() (provider.Chunk, error) {
	for {
		if len(s.queue) > 0 {
			ch := s.queue[0]
			s.queue[0] = provider.Chunk{}
			s.queue = s.queue[1:]
			return ch, nil
		}
		if s.err != nil {
			return provider.Chunk{}, s.err
		}
		ev, err := s.r.Next()
		if err != nil {
			s.err = s.readError(err)
			continue
		}
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		if err := s.event(data); err != nil {
			s.err = err
		}
	}
}

// readError decides what the end of the SSE body means.
func (s *stream) readError(err error) error {
	switch {
	case errors.Is(err, io.EOF):
		if !s.complete() {
			return fmt.Errorf("%w: %s closed the stream before every candidate had a finishReason", provider.ErrStreamBroken, s.c.name)
		}
		if s.usage != nil {
			s.queue = append(s.queue, s.usageChunk())
		}
		return io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: %s cut the stream inside an event", provider.ErrStreamBroken, s.c.name)
	}
	if cerr := provider.ClassifyTransportError(s.ctx, err); !errors.Is(cerr, provider.ErrUnreachable) {
		return cerr
	}
	return fmt.Errorf("%w: %w", provider.ErrStreamBroken, err)
}

func (s *stream) complete() bool {
	if s.blocked {
		return true
	}
	if len(s.choices) == 0 {
		return false
	}
	for _, st := range s.choices {
		if !st.finished {
			return false
		}
	}
	return true
}

// event translates one upstream event into queued chunks.
func (s *stream) event(data []byte) error {
	if e := gjson.GetBytes(data, "error"); e.Exists() {
		return &provider.StreamError{Provider: s.c.name, Data: bytes.Clone(data)}
	}
	var gr generateResponse
	if err := json.Unmarshal(data, &gr); err != nil {
		return fmt.Errorf("%w: %s streamed an event that is not a GenerateContentResponse: %v", provider.ErrBadResponse, s.c.name, err)
	}
	if s.id == "" {
		s.id = gr.ResponseID
		if s.id == "" {
			s.id = newID("chatcmpl-")
		}
	}
	if gr.ModelVersion != "" {
		s.model = gr.ModelVersion
	}
	if gr.UsageMetadata != nil {
		u := gr.UsageMetadata.usage()
		s.usage = &u
	}
	if len(gr.Candidates) == 0 && gr.PromptFeedback != nil && gr.PromptFeedback.BlockReason != "" {
		s.state(0)
		s.blocked = true
		s.finish(0, llm.FinishContentFilter)
		return nil
	}
	cands := gr.Candidates
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].Index < cands[j].Index })
	for i := range cands {
		s.candidate(&cands[i])
	}
	return nil
}

// state returns the candidate's state, queueing its role chunk the first
// time.
func (s *stream) state(index int) *choiceState {
	st := s.choices[index]
	if st == nil {
		st = &choiceState{}
		s.choices[index] = st
		empty := ""
		s.push(index, llm.Delta{Role: "assistant", Content: &empty}, nil, nil)
	}
	return st
}

func (s *stream) candidate(cand *candidate) {
	st := s.state(cand.Index)
	if st.finished {
		return
	}
	var logprobs json.RawMessage
	if s.wantLogprobs && cand.LogprobsResult != nil && len(cand.LogprobsResult.ChosenCandidates) > 0 {
		logprobs = cand.LogprobsResult.openAI()
	}
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			var blocks []json.RawMessage
			switch {
			case p.FunctionCall != nil:
				id := p.FunctionCall.ID
				if id == "" {
					id = newID("call_")
				}
				s.c.sigs.put(id, p.ThoughtSignature)
				if !s.strict && p.ThoughtSignature != "" {
					blocks = []json.RawMessage{contentBlock{Type: blockFunctionCall, ID: id, Name: p.FunctionCall.Name, Signature: p.ThoughtSignature}.raw()}
				}
				k := st.nTools
				st.nTools++
				st.calledTool = true
				s.push(cand.Index, llm.Delta{ToolCalls: []llm.ToolCallDelta{{Index: k, ID: id, Type: "function", Function: llm.FunctionDelta{Name: p.FunctionCall.Name}}}, ContentBlocks: blocks}, nil, nil)
				s.push(cand.Index, llm.Delta{ToolCalls: []llm.ToolCallDelta{{Index: k, Function: llm.FunctionDelta{Arguments: argsString(p.FunctionCall.Args)}}}}, nil, nil)
			case p.Thought:
				if s.strict {
					continue
				}
				t := deref(p.Text)
				d := llm.Delta{}
				if t != "" {
					d.ReasoningContent = &t
				}
				if p.ThoughtSignature != "" {
					d.ContentBlocks = []json.RawMessage{contentBlock{Type: blockThinking, Thinking: t, Signature: p.ThoughtSignature}.raw()}
				}
				if d.ReasoningContent != nil || d.ContentBlocks != nil {
					s.push(cand.Index, d, nil, nil)
				}
			case p.Text != nil:
				d := llm.Delta{}
				if *p.Text != "" {
					d.Content = p.Text
				}
				if !s.strict && p.ThoughtSignature != "" {
					d.ContentBlocks = []json.RawMessage{contentBlock{Type: blockText, Text: *p.Text, Signature: p.ThoughtSignature}.raw()}
				}
				if d.Content != nil || d.ContentBlocks != nil {
					s.push(cand.Index, d, logprobs, nil)
					if d.Content != nil {
						logprobs = nil
					}
				}
			}
		}
	}
	if logprobs != nil {
		s.push(cand.Index, llm.Delta{}, logprobs, nil)
	}
	if cand.FinishReason != "" {
		st.finished = true
		s.finish(cand.Index, finishReason(cand.FinishReason, st.calledTool))
	}
}

func (s *stream) finish(index int, reason string) {
	if st := s.choices[index]; st != nil {
		st.finished = true
	}
	s.push(index, llm.Delta{}, nil, &reason)
}

// push queues one chunk with one choice. Every content chunk carries
// "usage": null; the usage comes once, last.
func (s *stream) push(index int, d llm.Delta, logprobs json.RawMessage, finish *string) {
	ch := llm.ChatChunk{
		ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model,
		Choices: []llm.ChunkChoice{{Index: index, Delta: d, Logprobs: logprobs, FinishReason: finish}},
	}
	b, _ := json.Marshal(ch)
	s.queue = append(s.queue, provider.Chunk{Data: b, Model: s.model})
}

func (s *stream) usageChunk() provider.Chunk {
	u := *s.usage
	ch := llm.ChatChunk{
		ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model,
		Choices: []llm.ChunkChoice{}, Usage: u.OpenAI(),
	}
	b, _ := json.Marshal(ch)
	return provider.Chunk{Data: b, Usage: &u, UsageOnly: true, Model: s.model}
}
