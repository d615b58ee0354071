package google

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/ai-gateway/gateway/internal/provider"
)

// Claude on Vertex AI (PROVIDERS.md §3 "Hosted variants"): Anthropic's
// models are published on Vertex under publishers/anthropic and called
// with the Messages API body (no model, anthropic_version
// "vertex-2023-10-16" in the body instead of a header) at
// …/publishers/anthropic/models/{model}:rawPredict, or :streamRawPredict
// for Anthropic's event stream; answers and model errors are Anthropic's.
// This package keeps the Vertex side (URL, OAuth token, transport, error
// answers) and leaves the Messages translation to a ClaudeTranslator,
// which the app supplies (the anthropic package's Translator): adapters do
// not import one another.

// VertexAnthropicVersion is the anthropic_version Vertex AI takes in the
// body of a Claude request.
const VertexAnthropicVersion = "vertex-2023-10-16"

// ClaudeTranslator translates between OpenAI chat and Anthropic's Messages
// API without sending anything; the anthropic package's Translator
// implements it.
type ClaudeTranslator interface {
	// BuildBody returns the Messages request body for call, streamed when
	// stream is set, with version as anthropic_version and no model.
	BuildBody(call *provider.ChatCall, stream bool, version string) ([]byte, error)
	// ReadResponse translates a 2xx Messages answer; the caller closes
	// resp.Body.
	ReadResponse(ctx context.Context, resp *http.Response, call *provider.ChatCall) (*provider.Response, error)
	// NewStream translates a 2xx Messages event stream; the stream owns
	// resp.Body.
	NewStream(ctx context.Context, resp *http.Response, call *provider.ChatCall) (provider.Stream, error)
}

// Option configures a Client.
type Option func(*Client)

// WithClaude makes the Vertex AI adapter serve Anthropic's Claude models
// (model names starting with "claude") through t. Without it such models
// are refused with a *provider.ConfigError. It has no effect on the Gemini
// API adapter.
func WithClaude(t ClaudeTranslator) Option {
	return func(c *Client) { c.claude = t }
}

// isClaude reports whether model is one of Anthropic's, published on
// Vertex as claude-… (for example claude-sonnet-4@20250514).
func isClaude(model string) bool {
	return strings.HasPrefix(strings.ToLower(model), "claude")
}

// servesClaude reports whether the call goes to Anthropic's publisher
// through the wired translator.
func (c *Client) servesClaude(model string) bool {
	return c.vertex && c.claude != nil && isClaude(model)
}

// claudeVersion is the body's anthropic_version: the target's
// anthropic_version when it is a Vertex version string ("vertex-…"), else
// VertexAnthropicVersion. A version meant for Anthropic's own API
// (2023-06-01) means nothing to Vertex and is ignored.
func claudeVersion(t *provider.Target) string {
	if v := t.Option("anthropic_version"); strings.HasPrefix(v, "vertex-") {
		return v
	}
	return VertexAnthropicVersion
}

// claudeURL is …/publishers/anthropic/models/{model}:{method}.
func (c *Client) claudeURL(t *provider.Target, model, method string) (string, error) {
	base, err := c.base(t)
	if err != nil {
		return "", err
	}
	return base + "/publishers/anthropic/models/" + url.PathEscape(model) + ":" + method, nil
}

// postClaude builds the body and sends it to method with the Vertex
// credential; betas named by the target's anthropic_beta go in the
// anthropic-beta header, as on Anthropic's API.
func (c *Client) postClaude(ctx context.Context, call *provider.ChatCall, method string, stream bool) (*http.Response, error) {
	u, err := c.claudeURL(call.Target, call.Request.Model, method)
	if err != nil {
		return nil, err
	}
	body, err := c.claude.BuildBody(call, stream, claudeVersion(call.Target))
	if err != nil {
		return nil, err
	}
	fwd := call.Header
	if b := call.Target.Option("anthropic_beta"); b != "" {
		fwd = fwd.Clone()
		if fwd == nil {
			fwd = http.Header{}
		}
		fwd.Set("anthropic-beta", b)
	}
	return c.post(ctx, call.Target, fwd, u, body, stream)
}

// chatClaude sends a non-streamed Claude completion (rawPredict).
func (c *Client) chatClaude(ctx context.Context, call *provider.ChatCall) (*provider.Response, error) {
	resp, err := c.postClaude(ctx, call, "rawPredict", false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// Anthropic's error shape from the model, Google's from Vertex
		// itself (auth, quota): the gateway reads both.
		return nil, c.errorFromResponse(ctx, resp)
	}
	return c.claude.ReadResponse(ctx, resp, call)
}

// streamClaude starts a streamed Claude completion (streamRawPredict).
func (c *Client) streamClaude(ctx context.Context, call *provider.ChatCall) (provider.Stream, error) {
	resp, err := c.postClaude(ctx, call, "streamRawPredict", true)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, c.errorFromResponse(ctx, resp)
	}
	return c.claude.NewStream(ctx, resp, call)
}
