package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/sse"
)

// Translator is this adapter's translation without its transport, for a
// host that serves Claude behind its own endpoint and credentials but
// speaks the Messages API otherwise, such as Claude on Vertex AI
// (PROVIDERS.md §3 "Hosted variants": rawPredict and streamRawPredict). The
// host builds the URL, authenticates, sends the body and turns a non-2xx
// answer into a *provider.UpstreamError; Translator builds the body and
// reads the 2xx answer, plain or streamed, exactly as Chat and ChatStream
// do. The zero value names "anthropic" in its errors.
type Translator struct {
	// Provider is the slug named in the errors Translator returns
	// (unsupported parameters, in-stream errors); "" means Name.
	Provider string
}

func (t Translator) name() string {
	if t.Provider == "" {
		return Name
	}
	return t.Provider
}

// BuildBody translates call into a Messages request body, with stream set
// for a streamed answer. With version "" the body is the one POST
// /v1/messages takes; with a version (Vertex AI: "vertex-2023-10-16") the
// body carries it as anthropic_version and omits model, which the host's
// URL names. Fields Anthropic cannot honour fail as in Chat, with a
// *provider.UnsupportedParameterError naming t's provider.
func (t Translator) BuildBody(call *provider.ChatCall, stream bool, version string) ([]byte, error) {
	body, err := buildVersionedRequest(call, stream, version)
	var ue *provider.UnsupportedParameterError
	if errors.As(err, &ue) {
		ue.Provider = t.name()
	}
	return body, err
}

// ReadResponse translates a 2xx answer to a non-streamed Messages request
// into an OpenAI chat.completion. It reads resp.Body but leaves closing it
// to the caller.
func (t Translator) ReadResponse(ctx context.Context, resp *http.Response, call *provider.ChatCall) (*provider.Response, error) {
	raw, err := provider.ReadBody(resp)
	if err != nil {
		return nil, provider.ClassifyTransportError(ctx, err)
	}
	return answer(resp.Header, raw, call.StrictOpenAI)
}

// NewStream reads a 2xx answer to a streamed Messages request (Anthropic's
// typed SSE events) as OpenAI chunks; the stream owns resp.Body and closes
// it on Close. A body that is not an event stream is closed and refused
// with provider.ErrBadResponse.
func (t Translator) NewStream(ctx context.Context, resp *http.Response, call *provider.ChatCall) (provider.Stream, error) {
	ct := resp.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "text/event-stream") {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s answered a stream request with Content-Type %q", provider.ErrBadResponse, t.name(), ct)
	}
	s := newStream(ctx, resp, sse.NewReader(resp.Body), call.StrictOpenAI)
	s.provider = t.name()
	return s, nil
}
