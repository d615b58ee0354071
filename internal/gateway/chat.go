package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/routing"
	"github.com/ai-gateway/gateway/internal/sse"
)

// chat serves POST /v1/chat/completions: decode and validate the body once,
// resolve the routing, then answer plainly or as a stream from the first
// target that succeeds.
func (g *Gateway) chat(c *call) error {
	body, err := c.readBody()
	if err != nil {
		return err
	}
	req, err := llm.DecodeChatRequest(body)
	if err != nil {
		return requestError(err)
	}
	c.rec.Model, c.rec.Stream = req.Model, req.Stream
	if err := c.routePlan(); err != nil {
		return err
	}
	return c.dispatch(func(ctx context.Context, rt *route) routing.Outcome {
		b, r := body, req
		if len(rt.overrides) > 0 {
			var err error
			if b, r, err = applyOverrides(body, rt); err != nil {
				return c.failure(err, nil)
			}
		}
		c.rec.Model, c.rec.Stream = r.Model, r.Stream
		pc := &provider.ChatCall{Target: rt.target, Request: r, Body: b, Header: forwardedHeaders(c.r.Header, rt.target.ForwardHeaders), StrictOpenAI: rt.strict}
		defer func() { c.logDropped(pc.Dropped) }()
		if r.Stream {
			return c.chatStream(ctx, rt, pc)
		}
		resp, err := rt.provider.Chat(ctx, pc)
		if err != nil {
			return c.failure(err, nil)
		}
		return committed(resp.Status, c.writeResponse(resp))
	})
}

// requestError turns a body validation failure into a 400 naming the field.
func requestError(err error) error {
	var le *llm.Error
	if errors.As(err, &le) {
		return httpx.BadRequest(le.Code, le.Param, "%s", le.Message)
	}
	return err
}

// logDropped notes request fields an adapter ignored as mere hints.
func (c *call) logDropped(dropped []string) {
	if len(dropped) > 0 {
		c.g.log.Info("provider ignored request fields it cannot honour", "request_id", c.rec.ID, "provider", c.rec.Provider, "fields", dropped)
	}
}

// writeResponse relays a complete answer already in OpenAI shape.
func (c *call) writeResponse(resp *provider.Response) error {
	c.rec.Usage, c.rec.ModelServed = resp.Usage, resp.Model
	h := c.w.Header()
	copyResponseHeaders(h, resp.Header)
	h.Set("Content-Type", "application/json")
	c.w.WriteHeader(resp.Status)
	c.respLog = resp.Body
	if _, err := c.w.Write(resp.Body); err != nil {
		return errClientGone
	}
	return nil
}

// applyOverrides merges a target's override_params over the body and
// decodes the result again, so the provider and the log see the request
// that is actually sent.
func applyOverrides(body []byte, rt *route) ([]byte, *llm.ChatRequest, error) {
	body, err := patchBody(body, rt)
	if err != nil {
		return nil, nil, err
	}
	req, err := llm.DecodeChatRequest(body)
	if err != nil {
		var le *llm.Error
		if errors.As(err, &le) {
			return nil, nil, httpx.BadRequest(le.Code, rt.path+".override_params."+le.Param, "after applying override_params: %s", le.Message)
		}
		return nil, nil, err
	}
	return body, req, nil
}

// patchBody sets each of a target's overrides as a top-level field of
// body, as the raw JSON the config holds.
func patchBody(body []byte, rt *route) ([]byte, error) {
	if len(rt.overrides) == 0 {
		return body, nil
	}
	var err error
	// sjson edits in place when it can; the client's body is shared by
	// every attempt, so each patches a copy.
	body = bytes.Clone(body)
	for k, v := range rt.overrides {
		body, err = sjson.SetRawBytes(body, escapePath(k), v)
		if err != nil {
			return nil, httpx.BadRequest(routing.CodeInvalidValue, rt.path+".override_params."+k, "%s.override_params.%s: %v", rt.path, k, err)
		}
	}
	return body, nil
}

// escapePath makes a top-level key literal for sjson.
func escapePath(k string) string {
	var b bytes.Buffer
	for _, r := range k {
		switch r {
		case '.', '*', '?', '|', '#', '@', '\\', ':':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// chatStream relays a streamed answer. The first event is read before the
// 200 is committed, so an attempt that fails before it (an error status, a
// cut connection, an in-stream error event, no first event within
// first_token_timeout) is a failed attempt that a retry or fallback may
// still replace. After that, a broken upstream stream gets one error event
// and the connection is aborted.
func (c *call) chatStream(ctx context.Context, rt *route, pc *provider.ChatCall) routing.Outcome {
	ctx, guard := guardFirstToken(ctx, rt.firstToken)
	defer guard.release()
	st, err := rt.provider.ChatStream(ctx, pc)
	if err != nil {
		return c.failure(err, guard)
	}
	defer st.Close()
	first, err := st.Next()
	if err == nil && !guard.arrived() {
		err = context.Canceled // the first event came as the clock ran out
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: the stream ended before its first chunk", provider.ErrStreamBroken)
		}
		return c.failure(err, guard)
	}
	c.ttft = c.g.now().Sub(c.start)

	h := c.w.Header()
	copyResponseHeaders(h, st.Header())
	sse.SetHeaders(h)
	c.w.WriteHeader(http.StatusOK)
	sw := sse.NewWriter(c.w)

	r := relay{c: c, sw: sw, wantUsage: pc.Request.IncludeUsage()}
	r.noteFirst(first.Data)
	if err := r.emit(first); err != nil {
		return committed(http.StatusOK, err)
	}
	for {
		ch, err := st.Next()
		if err == nil {
			if err := r.emit(ch); err != nil {
				return committed(http.StatusOK, err)
			}
			continue
		}
		c.rec.Usage = r.usage
		if errors.Is(err, io.EOF) {
			return committed(http.StatusOK, r.end())
		}
		if c.r.Context().Err() != nil {
			return committed(http.StatusOK, errClientGone)
		}
		he := httpx.As(upstreamError(err))
		c.g.log.Warn("provider stream broke after the first byte", "request_id", c.rec.ID, "provider", c.rec.Provider, "err", err)
		_ = sw.WriteData(he.Body())
		return committed(http.StatusOK, &abortError{err: he})
	}
}

// relay copies chunks to the client, keeping the usage for the log.
type relay struct {
	c         *call
	sw        *sse.Writer
	wantUsage bool
	usage     llm.Usage
	gotUsage  bool
	sentUsage bool
	id        string
	created   int64
	model     string
}

func (r *relay) noteFirst(data []byte) {
	res := gjson.GetManyBytes(data, "id", "created")
	r.id, r.created = res[0].String(), res[1].Int()
}

var nullUsage = []byte(`"usage":null`)

func (r *relay) emit(ch provider.Chunk) error {
	if ch.Usage != nil {
		r.usage, r.gotUsage = *ch.Usage, true
	}
	if ch.Model != "" {
		r.model = ch.Model
		r.c.rec.ModelServed = ch.Model
	}
	data := ch.Data
	if r.wantUsage {
		r.sentUsage = r.sentUsage || ch.UsageOnly
	} else {
		// The gateway asked for usage on the client's behalf: hide the
		// extra chunk and the usage:null it adds to the others.
		if ch.UsageOnly {
			return nil
		}
		if bytes.Contains(data, nullUsage) {
			if d, err := sjson.DeleteBytes(data, "usage"); err == nil {
				data = d
			}
		}
	}
	r.c.logChunk(data)
	if err := r.sw.WriteData(data); err != nil {
		return errClientGone
	}
	return nil
}

// end finishes a complete stream: a client that asked for usage gets its
// usage chunk even from a provider that attached usage to the last content
// chunk instead (Mistral, Fireworks), then [DONE].
func (r *relay) end() error {
	if r.wantUsage && !r.sentUsage && r.gotUsage {
		chunk := []byte(`{"id":"","object":"chat.completion.chunk","created":0,"model":"","choices":[]}`)
		chunk, _ = sjson.SetBytes(chunk, "id", r.id)
		chunk, _ = sjson.SetRawBytes(chunk, "created", strconv.AppendInt(nil, r.created, 10))
		chunk, _ = sjson.SetBytes(chunk, "model", r.model)
		chunk, _ = sjson.SetBytes(chunk, "usage", map[string]int{
			"prompt_tokens": r.usage.PromptTokens, "completion_tokens": r.usage.CompletionTokens, "total_tokens": r.usage.TotalTokens,
		})
		r.c.logChunk(chunk)
		if err := r.sw.WriteData(chunk); err != nil {
			return errClientGone
		}
	}
	if err := r.sw.WriteDone(); err != nil {
		return errClientGone
	}
	return nil
}

// logChunk appends a streamed chunk to the response body kept for the log,
// up to the body limit.
func (c *call) logChunk(data []byte) {
	if !c.g.opt.LogBodies || len(c.respLog) >= c.g.opt.LogBodyMaxBytes+1 {
		return
	}
	c.respLog = append(c.respLog, data...)
	c.respLog = append(c.respLog, '\n')
}
