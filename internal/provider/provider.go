// Package provider defines the contract every model-provider adapter
// satisfies, the registry of adapters by slug, the resolved upstream Target,
// and the upstream error kinds the gateway maps to HTTP statuses.
//
// Adapters live in subpackages and import only provider, llm and sse (plus
// their own signing or codec libraries); provider itself imports only llm.
package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/ai-gateway/gateway/internal/llm"
)

// Target is one resolved upstream: a provider with its credentials and
// where to reach it. Credentials are never logged.
type Target struct {
	Provider   string
	APIKey     string
	CustomHost string
	// Options holds provider settings beyond the API key, keyed by the
	// snake_case names of API.md §3 (azure_resource_name, aws_region, ...).
	Options map[string]string
	// VirtualKey is the slug of the virtual key the credentials came from,
	// for the log record only.
	VirtualKey string
	// ForwardHeaders names client headers to pass upstream.
	ForwardHeaders []string
}

// Option returns the named provider option or "".
func (t *Target) Option(name string) string { return t.Options[name] }

// ChatCall is one chat completion to send upstream.
type ChatCall struct {
	Target  *Target
	Request *llm.ChatRequest
	// Body is the client's request body (OpenAI shape), already patched by
	// the gateway (overrides applied). OpenAI-compatible adapters forward it.
	Body []byte
	// Header holds client headers to forward, already filtered.
	Header http.Header
	// StrictOpenAI is true unless the client or config turned strict
	// OpenAI compliance off (x-gateway-strict-openai-compliance: false);
	// only then may adapters add reasoning_content and content_blocks.
	StrictOpenAI bool
	// Dropped collects the request fields an adapter ignored because the
	// provider cannot honour them and they are only hints (PROVIDERS.md
	// §0.2); the gateway logs them.
	Dropped []string
}

// Drop records that the adapter ignored param.
func (c *ChatCall) Drop(param string) { c.Dropped = append(c.Dropped, param) }

// EmbedCall is one POST /v1/embeddings to translate.
type EmbedCall struct {
	Target  *Target
	Request *llm.EmbeddingRequest
	Body    []byte
	Header  http.Header
	Dropped []string
}

// Drop records that the adapter ignored param.
func (c *EmbedCall) Drop(param string) { c.Dropped = append(c.Dropped, param) }

// Embedder is implemented by adapters that translate embeddings. For
// adapters without it, /v1/embeddings is forwarded as a pass-through (the
// OpenAI-compatible providers speak it natively).
type Embedder interface {
	Embed(ctx context.Context, call *EmbedCall) (*Response, error)
}

// Native is implemented by adapters that translate chat to a native API;
// their providers have no OpenAI-style /completions or /embeddings to
// forward to, so the gateway answers those routes itself.
type Native interface {
	Native() bool
}

// Response is a complete (non-streamed) answer, already in OpenAI shape.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	Usage  llm.Usage
	// Model is the model the provider says served the request.
	Model string
}

// Chunk is one OpenAI chat.completion.chunk, as JSON.
type Chunk struct {
	Data []byte
	// Usage is set when the chunk carried a usage object.
	Usage *llm.Usage
	// UsageOnly is set for the include_usage chunk (choices empty, usage
	// set); the gateway hides it from a client that did not ask for it.
	UsageOnly bool
	// Model is the chunk's model field, when present.
	Model string
}

// Stream yields the chunks of a streamed answer. Next returns io.EOF after
// the provider's end marker; any other error means the stream broke.
type Stream interface {
	Next() (Chunk, error)
	// Header returns the provider's response headers.
	Header() http.Header
	Close() error
}

// ChatProvider answers chat completions.
type ChatProvider interface {
	Chat(ctx context.Context, call *ChatCall) (*Response, error)
	// ChatStream starts a streamed completion. The returned stream has
	// already received a 2xx from the provider.
	ChatStream(ctx context.Context, call *ChatCall) (Stream, error)
}

// Forwarder prepares pass-through requests (any other /v1 path, files): it
// sets out.URL from the target and the path after /v1, and the provider's
// authentication headers.
type Forwarder interface {
	PrepareForward(out *http.Request, t *Target, path, rawQuery string) error
}

// Provider is what the registry holds.
type Provider interface {
	Name() string
	ChatProvider
	Forwarder
}

// Registry maps provider slugs to adapters. It is built once at start and
// read concurrently.
type Registry struct {
	byName map[string]Provider
	names  []string
}

// NewRegistry builds a registry of ps.
func NewRegistry(ps ...Provider) *Registry {
	r := &Registry{byName: make(map[string]Provider, len(ps))}
	for _, p := range ps {
		r.byName[p.Name()] = p
		r.names = append(r.names, p.Name())
	}
	slices.Sort(r.names)
	return r
}

// Lookup returns the adapter for slug.
func (r *Registry) Lookup(slug string) (Provider, bool) {
	p, ok := r.byName[slug]
	return p, ok
}

// Names lists the supported slugs, sorted.
func (r *Registry) Names() []string { return r.names }

// ErrUnknownProvider is returned for a slug the registry does not hold.
var ErrUnknownProvider = errors.New("unknown provider")

// UnknownProviderError names the slug and the supported ones.
func (r *Registry) UnknownProviderError(slug string) error {
	return fmt.Errorf("%w %q: supported providers are %s", ErrUnknownProvider, slug, strings.Join(r.names, ", "))
}

// UpstreamError is a provider's own non-2xx answer.
type UpstreamError struct {
	Provider string
	Status   int
	Header   http.Header
	Body     []byte
}

func (e *UpstreamError) Error() string {
	return fmt.Sprintf("%s answered %d", e.Provider, e.Status)
}

// Upstream failure kinds, wrapped with the cause: ErrUnreachable (dial,
// TLS, connection reset before an answer: 502, safe to retry), ErrTimeout
// (no answer within the deadline: 504), ErrBadResponse (an answer the
// adapter cannot read: 502), ErrStreamBroken (the stream ended without its
// end marker or with an in-stream error).
var (
	ErrUnreachable  = errors.New("provider unreachable")
	ErrTimeout      = errors.New("provider timed out")
	ErrBadResponse  = errors.New("provider answered garbage")
	ErrStreamBroken = errors.New("provider stream broke")
)

// StreamError is an error event received inside a stream.
type StreamError struct {
	Provider string
	// Data is the error event's JSON, as the provider sent it.
	Data []byte
}

func (e *StreamError) Error() string {
	return fmt.Sprintf("%s sent an in-stream error: %s", e.Provider, e.Data)
}

func (e *StreamError) Unwrap() error { return ErrStreamBroken }

// UnsupportedParameterError is a request field the provider cannot honour
// where ignoring it would change the answer (PROVIDERS.md §0.2): 400
// unsupported_parameter naming the field.
type UnsupportedParameterError struct {
	Provider string
	Param    string
	Reason   string
}

func (e *UnsupportedParameterError) Error() string {
	msg := e.Param + ": not supported by " + e.Provider
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// ConfigError means the target cannot be called as configured (a missing
// resource name, no host for a self-hosted provider). It is the client's to
// fix: 400.
type ConfigError struct {
	Provider string
	Param    string
	Msg      string
}

func (e *ConfigError) Error() string { return e.Msg }
