package cohere

import (
	"context"
	"fmt"
	"mime"

	"github.com/ai-gateway/gateway/internal/provider"
)

// Chat sends a non-streamed completion to POST /chat.
func (c *Client) Chat(ctx context.Context, call *provider.ChatCall) (*provider.Response, error) {
	cr, err := buildChatRequest(call, false)
	if err != nil {
		return nil, err
	}
	body, err := marshal(cr)
	if err != nil {
		return nil, fmt.Errorf("cohere: encode request: %w", err)
	}
	resp, err := c.post(ctx, call.Target, call.Header, "/chat", body, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := provider.ReadBody(resp)
	if err != nil {
		return nil, provider.ClassifyTransportError(ctx, err)
	}
	out, u, err := translateResponse(raw, call.Request.Model, call.StrictOpenAI)
	if err != nil {
		return nil, err
	}
	b, err := marshal(out)
	if err != nil {
		return nil, fmt.Errorf("cohere: encode response: %w", err)
	}
	return &provider.Response{Status: resp.StatusCode, Header: resp.Header, Body: b, Usage: u, Model: out.Model}, nil
}

// ChatStream starts a streamed completion. Cohere always reports usage in
// its message-end event, so the stream ends with a usage chunk that the
// gateway hides from clients that did not ask for it.
func (c *Client) ChatStream(ctx context.Context, call *provider.ChatCall) (provider.Stream, error) {
	cr, err := buildChatRequest(call, true)
	if err != nil {
		return nil, err
	}
	body, err := marshal(cr)
	if err != nil {
		return nil, fmt.Errorf("cohere: encode request: %w", err)
	}
	resp, err := c.post(ctx, call.Target, call.Header, "/chat", body, true)
	if err != nil {
		return nil, err
	}
	// A JSON answer to a stream request is not a stream; anything else is
	// parsed as SSE (Cohere's documented format).
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: cohere answered a stream request with Content-Type %q", provider.ErrBadResponse, resp.Header.Get("Content-Type"))
	}
	return newStream(ctx, resp, call.Request.Model, call.StrictOpenAI), nil
}
