// Package cohere is the adapter for Cohere's v2 API (PROVIDERS.md §7): it
// translates OpenAI chat completions to POST /v2/chat and back, both plain
// and streamed (typed SSE events without a [DONE] marker), and OpenAI
// embeddings to POST /v2/embed. Pass-through requests go to the v2 base URL
// with the Bearer key.
//
// cohere imports only provider, llm and sse (plus gjson to read fields the
// typed request lacks).
package cohere

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/ai-gateway/gateway/internal/provider"
)

// Name is the provider slug (x-gateway-provider).
const Name = "cohere"

// DefaultBaseURL is Cohere's v2 API. A custom host replaces it whole,
// version segment included (API.md §3).
const DefaultBaseURL = "https://api.cohere.com/v2"

// maxErrorBytes bounds an error body read into memory.
const maxErrorBytes = 1 << 20

// now and newID are replaced by golden tests for stable output.
var (
	now   = time.Now
	newID = randomID
)

// Client is the Cohere adapter.
type Client struct {
	http *http.Client
}

var (
	_ provider.Provider = (*Client)(nil)
	_ provider.Embedder = (*Client)(nil)
	_ provider.Native   = (*Client)(nil)
)

// New returns the adapter, sending requests with hc.
func New(hc *http.Client) *Client { return &Client{http: hc} }

// Name returns the provider slug.
func (c *Client) Name() string { return Name }

// Native reports that Cohere has no OpenAI-style /completions route: the
// gateway answers that route itself instead of forwarding it.
func (c *Client) Native() bool { return true }

// endpoint builds the upstream URL for path (starting with "/") and
// rawQuery.
func endpoint(t *provider.Target, path, rawQuery string) string {
	return provider.JoinURL(t.BaseURL(DefaultBaseURL), path, rawQuery)
}

func setAuth(h http.Header, t *provider.Target) {
	if t.APIKey != "" {
		h.Set("Authorization", "Bearer "+t.APIKey)
	}
}

// PrepareForward points out at Cohere's v2 API for a pass-through request
// (rerank, tokenize, models, ...).
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

// post sends body to path and returns the response when it is a 2xx. A
// non-2xx answer is returned as a *provider.UpstreamError carrying Cohere's
// body; transport failures are classified for the gateway.
func (c *Client) post(ctx context.Context, t *provider.Target, fwd http.Header, path string, body []byte, stream bool) (*http.Response, error) {
	u := endpoint(t, path, "")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, &provider.ConfigError{Provider: Name, Msg: fmt.Sprintf("invalid upstream URL %q", u)}
	}
	for k, vs := range fwd {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	setAuth(req.Header, t)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, provider.ClassifyTransportError(ctx, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
	if err != nil {
		return nil, provider.ClassifyTransportError(ctx, err)
	}
	return nil, &provider.UpstreamError{Provider: Name, Status: mapStatus(resp.StatusCode), Header: resp.Header, Body: b}
}

// mapStatus maps Cohere's non-standard statuses (PROVIDERS.md §7): 498
// "invalid token" is an authentication failure (401); 499 "request
// cancelled" was cancelled upstream, not by our client, so it surfaces as
// 408, which clients and fallbacks treat as retryable.
func mapStatus(s int) int {
	switch s {
	case 498:
		return http.StatusUnauthorized
	case 499:
		return http.StatusRequestTimeout
	}
	return s
}

// marshal encodes v without HTML escaping, so prompt text reaches Cohere
// byte for byte.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// generationError is what a Cohere generation that ended with
// finish_reason ERROR or TIMEOUT becomes (PROVIDERS.md §0.6): the answer is
// incomplete, so the client gets a 502 with Cohere's reason rather than a
// truncated 200.
func generationError(reason, detail string) error {
	msg := "cohere ended the generation with finish_reason " + reason
	if detail != "" {
		msg += ": " + detail
	}
	body, _ := json.Marshal(map[string]string{"message": msg})
	return &provider.UpstreamError{Provider: Name, Status: http.StatusBadGateway, Body: body}
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// randomID returns 24 random alphanumerics.
func randomID() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return string(b[:])
}
