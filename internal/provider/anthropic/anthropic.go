// Package anthropic is the adapter for Anthropic's Messages API
// (PROVIDERS.md §3): it translates OpenAI chat requests into POST
// {base}/v1/messages bodies, and Anthropic's answers, plain and streamed,
// back into OpenAI chat completions and chunks, so that a client cannot tell
// which provider answered except by the content.
//
// It owns the request mapping (request.go), the response mapping
// (response.go) and the stream state machine (stream.go). Thinking blocks
// and their signatures travel to the client as content_blocks when strict
// OpenAI compliance is off, and come back verbatim from an assistant
// message's content_blocks on the next turn, so multi-turn tool use with
// thinking works. Translator (translator.go) offers the same translation
// without the transport, for hosts that serve Claude under their own URL
// and credentials (Claude on Vertex AI, which the app wires into the
// google package's vertex-ai adapter).
//
// anthropic imports only provider, llm and sse (plus gjson and sjson).
package anthropic

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/ai-gateway/gateway/internal/provider"
)

// Name is the provider slug (x-gateway-provider: anthropic).
const Name = "anthropic"

// DefaultBaseURL is Anthropic's API base including its version segment; a
// custom host replaces it (API.md §3).
const DefaultBaseURL = "https://api.anthropic.com/v1"

// DefaultVersion is the anthropic-version header sent when neither the
// target (anthropic_version) nor a forwarded client header names one. It is
// still the only version string (PROVIDERS.md §3).
const DefaultVersion = "2023-06-01"

// maxErrorBytes bounds an error body read from a failed stream request.
const maxErrorBytes = 1 << 20

// now is the clock for the created field; golden tests replace it.
var now = time.Now

// Client is the Anthropic adapter.
type Client struct {
	http *http.Client
}

var (
	_ provider.Provider = (*Client)(nil)
	_ provider.Native   = (*Client)(nil)
)

// New returns the adapter, sending requests with hc.
func New(hc *http.Client) *Client { return &Client{http: hc} }

// Name returns the provider slug.
func (c *Client) Name() string { return Name }

// Native reports that Anthropic has no OpenAI-style /completions or
// /embeddings, so the gateway answers those routes itself (400).
func (c *Client) Native() bool { return true }

// endpoint joins the base URL (or the target's custom host) with path and
// rawQuery.
func endpoint(t *provider.Target, path, rawQuery string) string {
	return provider.JoinURL(t.BaseURL(DefaultBaseURL), path, rawQuery)
}

// setAuth sets the credential and version headers on h: x-api-key from the
// target; anthropic-version from the target's anthropic_version, else the
// client's own header already in h (forwarded), else DefaultVersion;
// anthropic-beta from the target's anthropic_beta when set.
func setAuth(h http.Header, t *provider.Target) {
	if t.APIKey != "" {
		h.Set("x-api-key", t.APIKey)
	}
	if v := t.Option("anthropic_version"); v != "" {
		h.Set("anthropic-version", v)
	} else if h.Get("anthropic-version") == "" {
		h.Set("anthropic-version", DefaultVersion)
	}
	if b := t.Option("anthropic_beta"); b != "" {
		h.Set("anthropic-beta", b)
	}
}

// PrepareForward points out at Anthropic for a pass-through request (for
// example GET /v1/models) with Anthropic's authentication headers.
func (c *Client) PrepareForward(out *http.Request, t *provider.Target, path, rawQuery string) error {
	u := endpoint(t, path, rawQuery)
	pu, err := url.Parse(u)
	if err != nil {
		return &provider.ConfigError{Provider: Name, Msg: fmt.Sprintf("invalid upstream URL %q", u)}
	}
	out.URL = pu
	out.Host = pu.Host
	setAuth(out.Header, t)
	return nil
}

func (c *Client) newRequest(ctx context.Context, call *provider.ChatCall, body []byte, stream bool) (*http.Request, error) {
	u := endpoint(call.Target, "/messages", "")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, &provider.ConfigError{Provider: Name, Msg: fmt.Sprintf("invalid upstream URL %q", u)}
	}
	for k, vs := range call.Header {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	setAuth(req.Header, call.Target)
	return req, nil
}

// Chat sends a non-streamed completion and translates the answer.
func (c *Client) Chat(ctx context.Context, call *provider.ChatCall) (*provider.Response, error) {
	body, err := buildRequest(call, false)
	if err != nil {
		return nil, err
	}
	req, err := c.newRequest(ctx, call, body, false)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, provider.ClassifyTransportError(ctx, err)
	}
	defer resp.Body.Close()
	raw, err := provider.ReadBody(resp)
	if err != nil {
		return nil, provider.ClassifyTransportError(ctx, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &provider.UpstreamError{Provider: Name, Status: resp.StatusCode, Header: resp.Header, Body: raw}
	}
	return answer(resp.Header, raw, call.StrictOpenAI)
}

// answer translates a 2xx Messages answer already read into raw.
func answer(h http.Header, raw []byte, strict bool) (*provider.Response, error) {
	out, usage, model, err := translateResponse(raw, strict)
	if err != nil {
		return nil, err
	}
	return &provider.Response{Status: http.StatusOK, Header: h, Body: out, Usage: usage, Model: model}, nil
}

// ChatStream starts a streamed completion. Usage always arrives (Anthropic
// sends it in message_start and message_delta), so the stream always ends
// with a usage-only chunk that the gateway hides from clients that did not
// ask for it.
func (c *Client) ChatStream(ctx context.Context, call *provider.ChatCall) (provider.Stream, error) {
	body, err := buildRequest(call, true)
	if err != nil {
		return nil, err
	}
	req, err := c.newRequest(ctx, call, body, true)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, provider.ClassifyTransportError(ctx, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
		if err != nil {
			return nil, provider.ClassifyTransportError(ctx, err)
		}
		return nil, &provider.UpstreamError{Provider: Name, Status: resp.StatusCode, Header: resp.Header, Body: b}
	}
	return Translator{}.NewStream(ctx, resp, call)
}
