// Package openai is the adapter for OpenAI and every provider that speaks
// OpenAI's chat wire format (PROVIDERS.md §1, §2, §8–§11): the request body
// is forwarded as the client sent it, patched only where needed, and stream
// events are copied through without re-encoding; usage is read on the way
// past.
//
// openai imports only provider, llm and sse.
package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/sse"
)

// Spec describes one OpenAI-compatible provider.
type Spec struct {
	// Name is the provider slug (x-gateway-provider).
	Name string
	// BaseURL includes the API version segment, e.g. https://api.openai.com/v1.
	// Empty means the provider has no public endpoint and needs a custom host.
	BaseURL string
	// Azure selects Azure OpenAI URLs and the api-key header.
	Azure bool
	// --- Azure AI Foundry and Entra ID (issue #3); see azure_entra.go. ---
	// AzureAI selects Azure AI Foundry model inference URLs
	// (https://{resource}.services.ai.azure.com/models); Azure must be set
	// too, for its authentication.
	AzureAI bool
	// --- end Azure AI Foundry. ---
}

// Specs lists the OpenAI-compatible providers the gateway ships with
// (PROVIDERS.md §12.1).
var Specs = []Spec{
	{Name: "openai", BaseURL: "https://api.openai.com/v1"},
	{Name: "azure-openai", Azure: true},
	{Name: "azure-ai", Azure: true, AzureAI: true}, // Azure AI Foundry model inference (issue #3)
	{Name: "groq", BaseURL: "https://api.groq.com/openai/v1"},
	{Name: "mistral-ai", BaseURL: "https://api.mistral.ai/v1"},
	{Name: "together-ai", BaseURL: "https://api.together.xyz/v1"},
	{Name: "fireworks-ai", BaseURL: "https://api.fireworks.ai/inference/v1"},
	{Name: "deepseek", BaseURL: "https://api.deepseek.com"},
	{Name: "x-ai", BaseURL: "https://api.x.ai/v1"},
	{Name: "perplexity-ai", BaseURL: "https://api.perplexity.ai"},
	{Name: "openrouter", BaseURL: "https://openrouter.ai/api/v1"},
	{Name: "cerebras", BaseURL: "https://api.cerebras.ai/v1"},
	{Name: "deepinfra", BaseURL: "https://api.deepinfra.com/v1/openai"},
	{Name: "ollama", BaseURL: "http://localhost:11434/v1"},
	// Self-hosted OpenAI-compatible servers (vLLM, llama.cpp, LM Studio,
	// SGLang, TGI) have no default host: x-gateway-custom-host names it.
	{Name: "openai-compatible"},
	{Name: "vllm"},
	{Name: "llama-cpp"},
	{Name: "lm-studio"},
}

// DefaultAzureAPIVersion is the last dated GA version (PROVIDERS.md §2),
// used for deployment URLs when the caller names none.
const DefaultAzureAPIVersion = "2024-10-21"

// Client is one OpenAI-compatible provider.
type Client struct {
	spec Spec
	http *http.Client
}

var _ provider.Provider = (*Client)(nil)

// New returns the adapter for spec, sending requests with hc.
func New(spec Spec, hc *http.Client) *Client { return &Client{spec: spec, http: hc} }

// All returns adapters for every entry of Specs.
func All(hc *http.Client) []provider.Provider {
	out := make([]provider.Provider, 0, len(Specs))
	for _, s := range Specs {
		out = append(out, New(s, hc))
	}
	return out
}

// Name returns the provider slug.
func (c *Client) Name() string { return c.spec.Name }

// endpoint builds the upstream URL for path (which starts with "/", the
// part after /v1) and rawQuery.
func (c *Client) endpoint(t *provider.Target, path, rawQuery string) (string, error) {
	if c.spec.Azure {
		return c.azureEndpoint(t, path, rawQuery)
	}
	base := c.spec.BaseURL
	if t.CustomHost != "" {
		base = t.CustomHost
	}
	if base == "" {
		return "", &provider.ConfigError{Provider: c.spec.Name, Msg: "this provider has no default host: set x-gateway-custom-host (or custom_host) to the server's base URL, e.g. http://localhost:8000/v1"}
	}
	return provider.JoinURL(base, path, rawQuery), nil
}

// azureEndpoint: with a deployment id, the dated deployment URL
// (/openai/deployments/{id}{path}?api-version=); without one, the v1 API
// (/openai/v1{path}) where the body's model names the deployment. A custom
// host replaces https://{resource}.openai.azure.com.
func (c *Client) azureEndpoint(t *provider.Target, path, rawQuery string) (string, error) {
	// --- Azure AI Foundry (issue #3). ---
	if c.spec.AzureAI {
		return c.azureAIEndpoint(t, path, rawQuery)
	}
	// --- end Azure AI Foundry. ---
	host := t.CustomHost
	if host == "" {
		res := t.Option("azure_resource_name")
		if res == "" {
			return "", &provider.ConfigError{Provider: c.spec.Name, Param: "x-gateway-azure-resource-name", Msg: "azure-openai needs a resource name (x-gateway-azure-resource-name or azure_resource_name) or a custom host"}
		}
		if strings.ContainsAny(res, "/:?#@") {
			return "", &provider.ConfigError{Provider: c.spec.Name, Param: "x-gateway-azure-resource-name", Msg: "azure resource name must be a bare name, not a URL"}
		}
		host = "https://" + res + ".openai.azure.com"
	}
	host = strings.TrimSuffix(host, "/")
	q, _ := url.ParseQuery(rawQuery)
	if dep := t.Option("azure_deployment_id"); dep != "" {
		if q.Get("api-version") == "" {
			v := t.Option("azure_api_version")
			if v == "" {
				v = DefaultAzureAPIVersion
			}
			q.Set("api-version", v)
		}
		return provider.JoinURL(host+"/openai/deployments/"+url.PathEscape(dep), path, q.Encode()), nil
	}
	if v := t.Option("azure_api_version"); v != "" && q.Get("api-version") == "" {
		q.Set("api-version", v)
	}
	return provider.JoinURL(host+"/openai/v1", path, q.Encode()), nil
}

// --- Azure AI Foundry (issue #3). ---

// DefaultAzureAIAPIVersion is the api-version of Azure AI Foundry model
// inference when the caller names none.
const DefaultAzureAIAPIVersion = "2024-05-01-preview"

// azureAIEndpoint: Azure AI Foundry model inference,
// https://{resource}.services.ai.azure.com/models{path}?api-version=, with
// the deployment named by the body's model. A custom host replaces
// https://{resource}.services.ai.azure.com.
func (c *Client) azureAIEndpoint(t *provider.Target, path, rawQuery string) (string, error) {
	host := t.CustomHost
	if host == "" {
		res := t.Option("azure_resource_name")
		if res == "" {
			return "", &provider.ConfigError{Provider: c.spec.Name, Param: "x-gateway-azure-resource-name", Msg: c.spec.Name + " needs a resource name (x-gateway-azure-resource-name or azure_resource_name) or a custom host"}
		}
		if strings.ContainsAny(res, "/:?#@") {
			return "", &provider.ConfigError{Provider: c.spec.Name, Param: "x-gateway-azure-resource-name", Msg: "azure resource name must be a bare name, not a URL"}
		}
		host = "https://" + res + ".services.ai.azure.com"
	}
	q, _ := url.ParseQuery(rawQuery)
	if q.Get("api-version") == "" {
		v := t.Option("azure_api_version")
		if v == "" {
			v = DefaultAzureAIAPIVersion
		}
		q.Set("api-version", v)
	}
	return provider.JoinURL(strings.TrimSuffix(host, "/")+"/models", path, q.Encode()), nil
}

// --- end Azure AI Foundry. ---

// setAuth sets the provider's credentials on h. Azure's (api-key, a
// Bearer access token, or one obtained from Microsoft Entra ID) are set by
// azureAuth in azure_entra.go, which may fetch a token and so needs ctx
// and can fail.
func (c *Client) setAuth(ctx context.Context, h http.Header, t *provider.Target) error {
	if c.spec.Azure {
		return c.azureAuth(ctx, h, t)
	}
	if t.APIKey == "" {
		return nil
	}
	h.Set("Authorization", "Bearer "+t.APIKey)
	return nil
}

// PrepareForward points out at the provider for a pass-through request.
func (c *Client) PrepareForward(out *http.Request, t *provider.Target, path, rawQuery string) error {
	u, err := c.endpoint(t, path, rawQuery)
	if err != nil {
		return err
	}
	pu, err := url.Parse(u)
	if err != nil {
		return &provider.ConfigError{Provider: c.spec.Name, Msg: fmt.Sprintf("invalid upstream URL %q", u)}
	}
	out.URL = pu
	out.Host = pu.Host
	return c.setAuth(out.Context(), out.Header, t)
}

func (c *Client) newRequest(ctx context.Context, call *provider.ChatCall, body []byte, stream bool) (*http.Request, error) {
	u, err := c.endpoint(call.Target, "/chat/completions", "")
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, &provider.ConfigError{Provider: c.spec.Name, Msg: fmt.Sprintf("invalid upstream URL %q", u)}
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
	if err := c.setAuth(ctx, req.Header, call.Target); err != nil {
		return nil, err
	}
	return req, nil
}

// Chat sends a non-streamed completion.
func (c *Client) Chat(ctx context.Context, call *provider.ChatCall) (*provider.Response, error) {
	req, err := c.newRequest(ctx, call, call.Body, false)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, provider.ClassifyTransportError(ctx, err)
	}
	defer resp.Body.Close()
	body, err := provider.ReadBody(resp)
	if err != nil {
		return nil, provider.ClassifyTransportError(ctx, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &provider.UpstreamError{Provider: c.spec.Name, Status: resp.StatusCode, Header: resp.Header, Body: body}
	}
	// DeepSeek may precede the JSON with keep-alive blank lines while a
	// request is queued (PROVIDERS.md §9.4).
	body = bytes.TrimLeft(body, " \t\r\n")
	// A full validity scan would cost as much as the usage lookup below; an
	// answer that does not even start like an object is caught here, and
	// the client's own decoder judges the rest of the provider's bytes.
	if len(body) == 0 || body[0] != '{' {
		return nil, fmt.Errorf("%w: %s answered a body that is not a JSON object", provider.ErrBadResponse, c.spec.Name)
	}
	res := gjson.GetManyBytes(body, "usage", "model")
	u, _ := llm.UsageFromJSON(res[0])
	return &provider.Response{Status: resp.StatusCode, Header: resp.Header, Body: body, Usage: u, Model: res[1].String()}, nil
}

// ChatStream starts a streamed completion. Usage is always requested
// upstream (stream_options.include_usage) so the log has it even when the
// client did not ask; the gateway hides the extra chunk from such a client.
func (c *Client) ChatStream(ctx context.Context, call *provider.ChatCall) (provider.Stream, error) {
	body := call.Body
	if !gjson.GetBytes(body, "stream_options.include_usage").Bool() {
		var err error
		body, err = sjson.SetBytes(body, "stream_options.include_usage", true)
		if err != nil {
			return nil, fmt.Errorf("openai: patch include_usage: %w", err)
		}
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
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return nil, provider.ClassifyTransportError(ctx, err)
		}
		return nil, &provider.UpstreamError{Provider: c.spec.Name, Status: resp.StatusCode, Header: resp.Header, Body: b}
	}
	ct := resp.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "text/event-stream") {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s answered a stream request with Content-Type %q", provider.ErrBadResponse, c.spec.Name, ct)
	}
	return &stream{ctx: ctx, name: c.spec.Name, resp: resp, r: sse.NewReader(resp.Body)}, nil
}

type stream struct {
	ctx  context.Context
	name string
	resp *http.Response
	r    *sse.Reader
	done bool
}

// Next returns the next chunk. Its Data is valid until the following call.
func (s *stream) Next() (provider.Chunk, error) {
	if s.done {
		return provider.Chunk{}, io.EOF
	}
	for {
		ev, err := s.r.Next()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return provider.Chunk{}, fmt.Errorf("%w: %s closed the stream without [DONE]", provider.ErrStreamBroken, s.name)
			}
			if cerr := provider.ClassifyTransportError(s.ctx, err); !errors.Is(cerr, provider.ErrUnreachable) {
				return provider.Chunk{}, cerr
			}
			return provider.Chunk{}, fmt.Errorf("%w: %w", provider.ErrStreamBroken, err)
		}
		data := bytes.TrimSpace(ev.Data)
		if len(data) == 0 {
			continue
		}
		if ev.IsDone() {
			s.done = true
			return provider.Chunk{}, io.EOF
		}
		if ev.Name == "error" || bytes.HasPrefix(data, []byte(`{"error"`)) || (!bytes.HasPrefix(data, []byte(`{"id"`)) && gjson.GetBytes(data, "error").Exists()) {
			return provider.Chunk{}, &provider.StreamError{Provider: s.name, Data: bytes.Clone(data)}
		}
		ch := provider.Chunk{Data: data}
		res := gjson.GetManyBytes(data, "usage", "choices.#", "model")
		if u, ok := llm.UsageFromJSON(res[0]); ok {
			ch.Usage = &u
			ch.UsageOnly = res[1].Int() == 0
		}
		ch.Model = res[2].String()
		return ch, nil
	}
}

func (s *stream) Header() http.Header { return s.resp.Header }

func (s *stream) Close() error { return s.resp.Body.Close() }
