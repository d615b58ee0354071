package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/routing"
)

// forward serves pass-through paths and the files routes: the path after
// /v1 and the query go to the provider's base URL (or custom host), the body
// as bytes; the answer comes back unchanged: status, body bytes, content
// type and provider headers (API.md §3). A config's retries and fallbacks
// apply: an error answer is held back until no other attempt follows.
func (g *Gateway) forward(c *call) error {
	var body []byte
	if c.r.Method == http.MethodPost || c.r.Method == http.MethodPut || c.r.Method == http.MethodPatch {
		var err error
		if body, err = c.readBody(); err != nil {
			return err
		}
		if len(body) > 0 && body[0] == '{' {
			c.rec.Model = gjson.GetBytes(body, "model").String()
		}
	}
	if err := c.routePlan(); err != nil {
		return err
	}
	return c.dispatch(func(ctx context.Context, rt *route) routing.Outcome {
		return c.forwardTo(ctx, rt, body, false)
	})
}

// readBody reads the request body within the size limit and keeps it for
// the log when its type is loggable.
func (c *call) readBody() ([]byte, error) {
	body, err := httpx.ReadBody(c.w, c.r, c.g.opt.MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	c.body = body
	if c.g.opt.LogBodies && (isLoggable(c.r.Header.Get("Content-Type")) || (len(body) > 0 && body[0] == '{')) {
		c.rec.RequestBody = c.g.bodyForLog(body)
	}
	return body, nil
}

// maxHeldErrorBytes bounds an error answer held back for a possible retry
// or fallback; a longer one is relayed at once.
const maxHeldErrorBytes = 1 << 20

// forwardTo makes one pass-through attempt: the request goes to the target
// unchanged but for the URL and credentials (and, when patch is set, the
// target's override_params over a JSON body), and a success is relayed
// unchanged. An answer of 400 or more is held back as a failed attempt.
func (c *call) forwardTo(ctx context.Context, rt *route, body []byte, patch bool) routing.Outcome {
	g := c.g
	if patch && len(body) > 0 && body[0] == '{' {
		var err error
		if body, err = patchBody(body, rt); err != nil {
			return c.failure(err, nil)
		}
		if m := gjson.GetBytes(body, "model"); m.Exists() {
			c.rec.Model = m.String()
		}
	}
	path := strings.TrimPrefix(c.r.URL.EscapedPath(), "/v1")
	out, err := http.NewRequestWithContext(ctx, c.r.Method, "http://placeholder", nil)
	if err != nil {
		return c.failure(httpx.Internal(err), nil)
	}
	if body != nil {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.ContentLength = int64(len(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	out.Header = outboundHeaders(c.r.Header)
	if err := rt.provider.PrepareForward(out, rt.target, path, c.r.URL.RawQuery); err != nil {
		return c.failure(err, nil)
	}

	resp, err := g.http.Do(out)
	if err != nil {
		return c.failure(provider.ClassifyTransportError(ctx, err), nil)
	}
	defer resp.Body.Close()

	var held []byte
	if resp.StatusCode >= 400 {
		held, err = io.ReadAll(io.LimitReader(resp.Body, maxHeldErrorBytes+1))
		if err != nil {
			return c.failure(provider.ClassifyTransportError(ctx, err), nil)
		}
		if len(held) <= maxHeldErrorBytes {
			return c.failure(&passAnswer{status: resp.StatusCode, header: resp.Header, body: held}, nil)
		}
	}

	h := c.w.Header()
	for k, vs := range resp.Header {
		if !isGatewayHeader(k) {
			h[k] = vs
		}
	}
	provider.RemoveHopHeaders(h)
	c.w.WriteHeader(resp.StatusCode)
	c.ttft = c.g.now().Sub(c.start)

	capture := g.opt.LogBodies && isLoggable(resp.Header.Get("Content-Type")) && resp.Header.Get("Content-Encoding") == ""
	streaming := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	src := io.Reader(resp.Body)
	if held != nil {
		src = io.MultiReader(bytes.NewReader(held), resp.Body)
	}
	err = c.copyBody(src, capture, streaming)
	c.noteForwardedBody(resp.Header)
	if err != nil {
		if errors.Is(err, errClientGone) || c.r.Context().Err() != nil {
			return committed(resp.StatusCode, errClientGone)
		}
		// The status is out; a body cut short must not look complete.
		he := httpx.As(upstreamError(provider.ClassifyTransportError(ctx, err)))
		return committed(resp.StatusCode, &abortError{err: he})
	}
	if resp.StatusCode >= 400 && c.rec.ErrorMessage == "" {
		c.rec.ErrorMessage = truncate(provider.ParseErrorBody(c.respLog).Message, 512)
	}
	return committed(resp.StatusCode, nil)
}

// noteForwardedBody reads usage and model from a relayed JSON answer.
func (c *call) noteForwardedBody(h http.Header) {
	if h.Get("Content-Encoding") == "" && len(c.respLog) > 0 && c.respLog[0] == '{' {
		res := gjson.GetManyBytes(c.respLog, "usage", "model")
		if u, ok := llm.UsageFromJSON(res[0]); ok {
			c.rec.Usage = u
		}
		c.rec.ModelServed = res[1].String()
	}
}

// writePassAnswer relays a held-back pass-through error answer unchanged
// and returns its status.
func (c *call) writePassAnswer(a *passAnswer) int {
	h := c.w.Header()
	for k, vs := range a.header {
		if !isGatewayHeader(k) {
			h[k] = vs
		}
	}
	provider.RemoveHopHeaders(h)
	h.Del("Content-Length")
	c.w.WriteHeader(a.status)
	_, _ = c.w.Write(a.body)
	if isLoggable(a.header.Get("Content-Type")) && a.header.Get("Content-Encoding") == "" {
		c.respLog = a.body
		c.noteForwardedBody(a.header)
		c.rec.ErrorMessage = truncate(provider.ParseErrorBody(a.body).Message, 512)
	}
	return a.status
}

// copyBody streams the provider's body to the client, flushing after every
// read for event streams, and keeps up to the log limit of it.
func (c *call) copyBody(src io.Reader, capture, flushEach bool) error {
	buf := make([]byte, 32<<10)
	rc := http.NewResponseController(c.w)
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			if capture && len(c.respLog) <= c.g.opt.LogBodyMaxBytes {
				c.respLog = append(c.respLog, buf[:n]...)
			}
			if _, werr := c.w.Write(buf[:n]); werr != nil {
				return errClientGone
			}
			if flushEach {
				_ = rc.Flush()
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// outboundHeaders copies the client's headers for a pass-through request,
// without hop-by-hop headers, the gateway's own x-gateway-* headers, or the
// client's Authorization: the adapter sets the provider credential from
// the resolved target (which, for the provider + Authorization combination,
// is that same bearer token).
func outboundHeaders(in http.Header) http.Header {
	out := make(http.Header, len(in))
	for k, vs := range in {
		if isGatewayHeader(k) || k == "Authorization" || k == "Host" || k == "Content-Length" || k == "Cookie" {
			continue
		}
		out[k] = vs
	}
	provider.RemoveHopHeaders(out)
	if _, ok := out["User-Agent"]; !ok {
		out["User-Agent"] = []string{""} // do not add Go's default
	}
	return out
}

// isLoggable reports whether a body of this content type is kept in the
// log (text and JSON; not uploads or binary downloads).
func isLoggable(ct string) bool {
	if ct == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasPrefix(mt, "text/") || strings.HasSuffix(mt, "+json") || mt == "application/x-ndjson"
}
