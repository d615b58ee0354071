// Package google is the adapter for Google's Gemini models, reached two
// ways (PROVIDERS.md §4, §5): the Gemini API of Google AI Studio (slug
// "google", generativelanguage.googleapis.com/v1beta, key in x-goog-api-key)
// and Vertex AI (slug "vertex-ai", {region}-aiplatform.googleapis.com/v1,
// an OAuth access token minted from a service-account key). Both speak the
// same GenerateContent wire format, so one Client translates for both:
// OpenAI chat requests become GenerateContentRequest bodies, answers and
// SSE streams become OpenAI chat.completion objects and chunks, and
// embeddings go to batchEmbedContents (Gemini API) or predict (Vertex).
//
// It owns the translation both ways, Gemini 3 thought-signature round trips
// (signatures.go), Vertex service-account tokens and their cache
// (vertexauth.go), and fetching remote images to inline them (media.go).
// Vertex also serves Anthropic's Claude models (claude.go): this package
// sends them to rawPredict and streamRawPredict with the same token, and a
// ClaudeTranslator given by the app (WithClaude) does the Messages API
// translation.
//
// google imports only provider, llm and sse, plus golang-jwt for the
// service-account assertion and gjson for reading the client's raw body.
package google

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ai-gateway/gateway/internal/provider"
)

// Provider slugs served by this package.
const (
	NameGoogle = "google"
	NameVertex = "vertex-ai"
)

// DefaultGeminiBaseURL is the Gemini API base, version segment included
// (API.md §3: a custom host replaces all of it).
const DefaultGeminiBaseURL = "https://generativelanguage.googleapis.com/v1beta"

// now and newID are replaced by golden tests for stable output.
var (
	now   = time.Now
	newID = randomID
)

// Client is the Gemini API or the Vertex AI adapter.
type Client struct {
	name   string
	vertex bool
	http   *http.Client
	// fetch downloads remote images: the adapter's transport, but
	// following redirects, which image hosts use and the API client
	// deliberately does not.
	fetch  *http.Client
	tokens *tokenCache
	sigs   *signatureStore
	// claude translates Claude models on Vertex (claude.go); nil when
	// the app wired none.
	claude ClaudeTranslator
}

var (
	_ provider.Provider = (*Client)(nil)
	_ provider.Embedder = (*Client)(nil)
	_ provider.Native   = (*Client)(nil)
)

// New returns the Gemini API adapter (slug "google"), sending requests
// with hc.
func New(hc *http.Client) *Client { return newClient(NameGoogle, false, hc) }

// NewVertex returns the Vertex AI adapter (slug "vertex-ai"), sending
// requests with hc. WithClaude lets it serve Claude models too.
func NewVertex(hc *http.Client, opts ...Option) *Client {
	c := newClient(NameVertex, true, hc)
	for _, o := range opts {
		o(c)
	}
	return c
}

func newClient(name string, vertex bool, hc *http.Client) *Client {
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{
		name:   name,
		vertex: vertex,
		http:   hc,
		fetch:  &http.Client{Transport: hc.Transport, Jar: hc.Jar},
		tokens: newTokenCache(),
		sigs:   newSignatureStore(defaultSignatureEntries),
	}
}

// Name returns the provider slug.
func (c *Client) Name() string { return c.name }

// Native reports that this adapter translates to a native API, so the
// gateway answers /v1/completions itself rather than forwarding it.
func (c *Client) Native() bool { return true }

// base returns the URL every API path hangs from: the Gemini API's
// …/v1beta, or Vertex's …/v1/projects/{p}/locations/{r}. A custom host
// replaces https://generativelanguage.googleapis.com/v1beta for the Gemini
// API and https://{region}-aiplatform.googleapis.com for Vertex.
func (c *Client) base(t *provider.Target) (string, error) {
	if !c.vertex {
		if t.CustomHost != "" {
			return strings.TrimSuffix(t.CustomHost, "/"), nil
		}
		return DefaultGeminiBaseURL, nil
	}
	project := t.Option("vertex_project_id")
	if project == "" {
		return "", &provider.ConfigError{Provider: c.name, Param: "x-gateway-vertex-project-id",
			Msg: "vertex-ai needs a Google Cloud project: set x-gateway-vertex-project-id (or vertex_project_id)"}
	}
	region := t.Option("vertex_region")
	if region == "" {
		return "", &provider.ConfigError{Provider: c.name, Param: "x-gateway-vertex-region",
			Msg: "vertex-ai needs a region such as us-central1 or global: set x-gateway-vertex-region (or vertex_region)"}
	}
	if !pathSafe(project) {
		return "", &provider.ConfigError{Provider: c.name, Param: "x-gateway-vertex-project-id", Msg: "vertex project id must be a bare id, not a path or URL"}
	}
	if !pathSafe(region) {
		return "", &provider.ConfigError{Provider: c.name, Param: "x-gateway-vertex-region", Msg: "vertex region must be a bare name such as us-central1"}
	}
	host := t.CustomHost
	switch {
	case host != "":
		host = strings.TrimSuffix(host, "/")
	case region == "global":
		host = "https://aiplatform.googleapis.com"
	default:
		host = "https://" + region + "-aiplatform.googleapis.com"
	}
	return host + "/v1/projects/" + project + "/locations/" + region, nil
}

// pathSafe reports whether s can be put in a URL path segment as is.
func pathSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return s != "" && s != "." && s != ".."
}

// modelURL is the URL of a model method (generateContent, predict, ...).
func (c *Client) modelURL(t *provider.Target, model, method, rawQuery string) (string, error) {
	base, err := c.base(t)
	if err != nil {
		return "", err
	}
	if model == "" {
		return "", &provider.ConfigError{Provider: c.name, Param: "model", Msg: "model is required"}
	}
	var u string
	if c.vertex {
		u = base + "/publishers/google/models/" + url.PathEscape(model) + ":" + method
	} else {
		// The Gemini API names models "models/…"; accept the prefix.
		u = base + "/models/" + url.PathEscape(strings.TrimPrefix(model, "models/")) + ":" + method
	}
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	return u, nil
}

// checkModel refuses what this adapter cannot call: Anthropic's Claude
// models are published on Vertex under another publisher and speak the
// Messages API, not GenerateContent, so they need a ClaudeTranslator
// (WithClaude).
func (c *Client) checkModel(model string) error {
	if c.vertex && isClaude(model) {
		return &provider.ConfigError{Provider: c.name, Param: "model",
			Msg: "Claude models on Vertex AI are not supported yet by the vertex-ai provider; use the anthropic provider or a Gemini model"}
	}
	return nil
}

// setAuth adds the credential: x-goog-api-key for the Gemini API; for
// Vertex an OAuth access token from the service account, or Target.APIKey
// used as an access token when no service account is given.
func (c *Client) setAuth(ctx context.Context, h http.Header, t *provider.Target) error {
	if !c.vertex {
		if t.APIKey != "" {
			h.Set("x-goog-api-key", t.APIKey)
		}
		return nil
	}
	tok, err := c.accessToken(ctx, t)
	if err != nil {
		return err
	}
	h.Set("Authorization", "Bearer "+tok)
	return nil
}

// PrepareForward points out at the provider for a pass-through request:
// the Gemini API base (…/v1beta) or the Vertex project and location base
// (…/v1/projects/{p}/locations/{r}), plus path, with the native credential.
func (c *Client) PrepareForward(out *http.Request, t *provider.Target, path, rawQuery string) error {
	base, err := c.base(t)
	if err != nil {
		return err
	}
	u := base + path
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	pu, err := url.Parse(u)
	if err != nil {
		return &provider.ConfigError{Provider: c.name, Msg: fmt.Sprintf("invalid upstream URL %q", u)}
	}
	out.URL = pu
	out.Host = pu.Host
	return c.setAuth(out.Context(), out.Header, t)
}

// post sends body to u with the target's credential and the client's
// forwarded headers.
func (c *Client) post(ctx context.Context, t *provider.Target, fwd http.Header, u string, body []byte, stream bool) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, &provider.ConfigError{Provider: c.name, Msg: fmt.Sprintf("invalid upstream URL %q", u)}
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
	if err := c.setAuth(ctx, req.Header, t); err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, provider.ClassifyTransportError(ctx, err)
	}
	return resp, nil
}

// errorFromResponse reads a non-2xx answer into an UpstreamError.
func (c *Client) errorFromResponse(ctx context.Context, resp *http.Response) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return provider.ClassifyTransportError(ctx, err)
	}
	return c.upstreamError(resp.StatusCode, resp.Header, b)
}

// upstreamError builds the UpstreamError for a Google error answer
// ({"error":{code,message,status,details}}, PROVIDERS.md §4 "Errors"). Vertex
// sometimes wraps it in a one-element array; that is unwrapped so the
// gateway's parser reads it. Google sends no Retry-After on 429 but a
// google.rpc.RetryInfo detail; its retryDelay becomes Retry-After (whole
// seconds, rounded up) when the header is absent.
func (c *Client) upstreamError(status int, h http.Header, body []byte) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if first := gjson.GetBytes(trimmed, "0"); first.IsObject() && first.Get("error").Exists() {
			body = []byte(first.Raw)
		}
	}
	if h.Get("Retry-After") == "" {
		if d, ok := retryDelay(body); ok {
			h = h.Clone()
			if h == nil {
				h = make(http.Header)
			}
			h.Set("Retry-After", strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10))
		}
	}
	return &provider.UpstreamError{Provider: c.name, Status: status, Header: h, Body: body}
}

// retryDelay finds google.rpc.RetryInfo.retryDelay ("34.4s") in an error
// body's details.
func retryDelay(body []byte) (time.Duration, bool) {
	var found time.Duration
	ok := false
	gjson.GetBytes(body, "error.details").ForEach(func(_, d gjson.Result) bool {
		if !strings.HasSuffix(d.Get(`@type`).String(), "google.rpc.RetryInfo") {
			return true
		}
		v := d.Get("retryDelay")
		var dur time.Duration
		var err error
		if v.Type == gjson.String {
			dur, err = time.ParseDuration(v.String())
		} else if v.IsObject() { // proto Duration as {seconds, nanos}
			dur = time.Duration(v.Get("seconds").Int())*time.Second + time.Duration(v.Get("nanos").Int())
		}
		if err == nil && dur >= 0 {
			found, ok = dur, true
		}
		return false
	})
	return found, ok
}

// Chat sends a non-streamed completion (generateContent, or rawPredict
// for Claude on Vertex).
func (c *Client) Chat(ctx context.Context, call *provider.ChatCall) (*provider.Response, error) {
	if c.servesClaude(call.Request.Model) {
		return c.chatClaude(ctx, call)
	}
	if err := c.checkModel(call.Request.Model); err != nil {
		return nil, err
	}
	greq, err := c.buildRequest(ctx, call)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(greq)
	if err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", c.name, err)
	}
	u, err := c.modelURL(call.Target, call.Request.Model, "generateContent", "")
	if err != nil {
		return nil, err
	}
	resp, err := c.post(ctx, call.Target, call.Header, u, body, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, c.errorFromResponse(ctx, resp)
	}
	raw, err := provider.ReadBody(resp)
	if err != nil {
		return nil, provider.ClassifyTransportError(ctx, err)
	}
	var gr generateResponse
	if err := json.Unmarshal(raw, &gr); err != nil {
		return nil, fmt.Errorf("%w: %s answered a body that is not a GenerateContentResponse: %v", provider.ErrBadResponse, c.name, err)
	}
	out, usage := c.toChatResponse(&gr, call)
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("%s: encode response: %w", c.name, err)
	}
	return &provider.Response{Status: http.StatusOK, Header: resp.Header, Body: b, Usage: usage, Model: out.Model}, nil
}

// ChatStream starts a streamed completion (streamGenerateContent?alt=sse,
// or streamRawPredict for Claude on Vertex).
func (c *Client) ChatStream(ctx context.Context, call *provider.ChatCall) (provider.Stream, error) {
	if c.servesClaude(call.Request.Model) {
		return c.streamClaude(ctx, call)
	}
	if err := c.checkModel(call.Request.Model); err != nil {
		return nil, err
	}
	greq, err := c.buildRequest(ctx, call)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(greq)
	if err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", c.name, err)
	}
	u, err := c.modelURL(call.Target, call.Request.Model, "streamGenerateContent", "alt=sse")
	if err != nil {
		return nil, err
	}
	resp, err := c.post(ctx, call.Target, call.Header, u, body, true)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, c.errorFromResponse(ctx, resp)
	}
	ct := resp.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "text/event-stream") {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s answered a stream request with Content-Type %q", provider.ErrBadResponse, c.name, ct)
	}
	return c.newStream(ctx, call, resp.Body, resp.Header), nil
}

// randomID returns prefix followed by 24 random alphanumerics.
func randomID(prefix string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	var b [24]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return prefix + string(b[:])
}
