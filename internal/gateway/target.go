package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/routing"
)

// route is a resolved target and what the config added to it.
type route struct {
	target    *provider.Target
	provider  provider.Provider
	overrides map[string]any
	timeout   int64 // ms from the config, 0 for none
	// strict is the strict OpenAI compliance setting (default on).
	strict bool
}

const hdrStrictOpenAI = "x-gateway-strict-openai-compliance"

// providerHeaderFields maps x-gateway-<group>-<field> headers to the
// snake_case option names (API.md §3 "Provider specifics"); init replaces
// the keys with their canonical forms.
var providerHeaderFields = map[string]string{
	"x-gateway-aws-access-key-id":           "aws_access_key_id",
	"x-gateway-aws-secret-access-key":       "aws_secret_access_key",
	"x-gateway-aws-session-token":           "aws_session_token",
	"x-gateway-aws-region":                  "aws_region",
	"x-gateway-vertex-project-id":           "vertex_project_id",
	"x-gateway-vertex-region":               "vertex_region",
	"x-gateway-vertex-service-account-json": "vertex_service_account_json",
	"x-gateway-azure-resource-name":         "azure_resource_name",
	"x-gateway-azure-deployment-id":         "azure_deployment_id",
	"x-gateway-azure-api-version":           "azure_api_version",
	"x-gateway-anthropic-version":           "anthropic_version",
	"x-gateway-anthropic-beta":              "anthropic_beta",
}

func init() {
	canon := make(map[string]string, len(providerHeaderFields))
	for k, v := range providerHeaderFields {
		canon[http.CanonicalHeaderKey(k)] = v
	}
	providerHeaderFields = canon
}

// firstValue reads a header by its canonical key without canonicalising
// again (the request's header map is already canonical).
func firstValue(h http.Header, canonicalKey string) string {
	if vs := h[canonicalKey]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// resolve picks the target from SPEC.md's four header combinations:
// config; virtual key; provider + Authorization; provider + Authorization +
// custom host. A config wins over a virtual key, which wins over a provider
// header.
func (c *call) resolve() (*route, error) {
	h := c.r.Header
	rt := &route{target: &provider.Target{}, strict: true}
	t := rt.target
	switch {
	case h.Get(hdrConfig) != "":
		if err := c.resolveConfig(rt, h.Get(hdrConfig)); err != nil {
			return nil, err
		}
	case h.Get(hdrVirtualKey) != "":
		if err := c.useVirtualKey(t, h.Get(hdrVirtualKey)); err != nil {
			return nil, err
		}
	case h.Get(hdrProvider) != "":
		t.Provider = strings.TrimSpace(h.Get(hdrProvider))
		t.APIKey = bearer(h.Get("Authorization"))
	default:
		return nil, httpx.BadRequest("missing_provider", hdrProvider,
			"no provider routing: send x-gateway-virtual-key, x-gateway-provider with Authorization, or x-gateway-config")
	}
	if ch := h.Get(hdrCustomHost); ch != "" {
		if err := routing.ValidateCustomHost(ch); err != nil {
			return nil, httpx.BadRequest("invalid_custom_host", hdrCustomHost, "%s: %v", hdrCustomHost, err)
		}
		t.CustomHost = ch
	}
	for hdr, opt := range providerHeaderFields {
		if v := firstValue(h, hdr); v != "" {
			if t.Options == nil {
				t.Options = make(map[string]string)
			}
			t.Options[opt] = v
		}
	}
	if fh := h.Get(hdrForwardHeaders); fh != "" {
		for _, name := range strings.Split(fh, ",") {
			if name = strings.TrimSpace(name); name != "" {
				t.ForwardHeaders = append(t.ForwardHeaders, name)
			}
		}
	}
	if v := h.Get(hdrStrictOpenAI); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, httpx.BadRequest("invalid_header", hdrStrictOpenAI, "%s: must be true or false", hdrStrictOpenAI)
		}
		rt.strict = b
	}
	p, ok := c.g.providers.Lookup(t.Provider)
	if !ok {
		return nil, httpx.BadRequest("unknown_provider", hdrProvider, "%v", c.g.providers.UnknownProviderError(t.Provider))
	}
	rt.provider = p
	c.rec.Provider = t.Provider
	c.rec.VirtualKey = t.VirtualKey
	c.w.Header().Set(hdrProviderOut, t.Provider)
	return rt, nil
}

func (c *call) useVirtualKey(t *provider.Target, slug string) error {
	vk, err := c.g.virtualKeys.Resolve(c.r.Context(), c.p.OrganisationID, slug)
	if err != nil {
		return err
	}
	// A workspace key may use only its own workspace's virtual keys; it is
	// told the key does not exist, as for an unknown slug.
	if !c.p.IsOrganisationKey() && vk.WorkspaceID != c.p.WorkspaceID {
		return httpx.Unauthorized("invalid_virtual_key", fmt.Sprintf("virtual key %q not found", slug))
	}
	t.Provider, t.APIKey, t.CustomHost, t.VirtualKey = vk.Provider, vk.APIKey, vk.CustomHost, vk.Slug
	if len(vk.Options) > 0 {
		t.Options = make(map[string]string, len(vk.Options))
		for k, v := range vk.Options {
			t.Options[k] = v
		}
	}
	return nil
}

func (c *call) resolveConfig(rt *route, v string) error {
	v = strings.TrimSpace(v)
	if !strings.HasPrefix(v, "{") && !strings.HasPrefix(v, "[") && !strings.HasPrefix(v, `"`) {
		// Saved configs (slugs) arrive with the routing engine.
		return httpx.BadRequest("AB01_CONFIG_NOT_FOUND", hdrConfig, "%s: saved config %q not found", hdrConfig, truncate(v, 64))
	}
	cfg, err := routing.Parse([]byte(v))
	if err != nil {
		return err
	}
	leaf, path, err := routing.SingleTarget(cfg)
	if err != nil {
		return err
	}
	c.rec.Config = configForLog(v)
	c.rec.LastUsedOptionIndex = path
	c.w.Header().Set(hdrOptionIndex, path)
	t := rt.target
	if leaf.VirtualKey != "" {
		if err := c.useVirtualKey(t, leaf.VirtualKey); err != nil {
			return err
		}
	} else {
		t.Provider, t.APIKey = leaf.Provider, leaf.APIKey
		if t.APIKey == "" {
			t.APIKey = bearer(c.r.Header.Get("Authorization"))
		}
	}
	if leaf.CustomHost != "" {
		t.CustomHost = leaf.CustomHost
	}
	for k, val := range leaf.ProviderFields {
		if t.Options == nil {
			t.Options = make(map[string]string)
		}
		t.Options[k] = val
	}
	t.ForwardHeaders = append(t.ForwardHeaders, leaf.ForwardHeaders...)
	rt.overrides = leaf.OverrideParams
	if leaf.StrictOpenAI != nil {
		rt.strict = *leaf.StrictOpenAI
	}
	if leaf.RequestTimeout != nil {
		rt.timeout = *leaf.RequestTimeout
	}
	return nil
}

// configForLog keeps an inline config in the record without its secrets.
func configForLog(v string) string {
	var m any
	if json.Unmarshal([]byte(v), &m) != nil {
		return ""
	}
	redact(m)
	b, _ := json.Marshal(m)
	return string(b)
}

func redact(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			switch k {
			case "api_key", "aws_secret_access_key", "aws_session_token", "vertex_service_account_json":
				x[k] = "[redacted]"
			default:
				redact(val)
			}
		}
	case []any:
		for _, e := range x {
			redact(e)
		}
	}
}

func bearer(v string) string {
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return strings.TrimSpace(v[7:])
	}
	return strings.TrimSpace(v)
}

// forwardedHeaders copies the client headers the target asks to forward.
func forwardedHeaders(in http.Header, names []string) http.Header {
	if len(names) == 0 {
		return nil
	}
	out := make(http.Header, len(names))
	for _, n := range names {
		ck := http.CanonicalHeaderKey(n)
		if isGatewayHeader(ck) || ck == "Authorization" || ck == "Host" || ck == "Content-Length" {
			continue
		}
		if vs := in.Values(ck); len(vs) > 0 {
			out[ck] = vs
		}
	}
	return out
}

func isGatewayHeader(canonical string) bool { return strings.HasPrefix(canonical, "X-Gateway-") }

// upstreamError maps an adapter's failure to the client's answer: one
// function for every failure kind (STYLE.md §2).
func upstreamError(err error) error {
	var ue *provider.UpstreamError
	var ce *provider.ConfigError
	var up *provider.UnsupportedParameterError
	var se *provider.StreamError
	switch {
	case errors.As(err, &ue):
		d := provider.ParseErrorBody(ue.Body)
		status := ue.Status
		if status == 529 { // Anthropic's overloaded (API.md §3)
			status = http.StatusServiceUnavailable
		}
		if d.Message == "" {
			d.Message = provider.ErrorMessageForStatus(ue.Provider, ue.Status)
		}
		he := &httpx.Error{Status: status, Type: errorType(status, d.Type), Code: d.Code, Param: d.Param, Message: d.Message, Provider: ue.Provider, Err: err}
		he.Header = retryHeaders(ue.Header)
		return he
	case errors.As(err, &up):
		return &httpx.Error{Status: http.StatusBadRequest, Type: httpx.TypeInvalidRequest, Code: "unsupported_parameter", Param: up.Param, Message: up.Error(), Err: err}
	case errors.As(err, &ce):
		return &httpx.Error{Status: http.StatusBadRequest, Type: httpx.TypeInvalidRequest, Code: "invalid_provider_config", Param: ce.Param, Message: ce.Msg, Err: err}
	case errors.As(err, &se):
		d := provider.ParseErrorBody(se.Data)
		return &httpx.Error{Status: http.StatusBadGateway, Type: httpx.TypeUpstream, Code: d.Code, Message: d.Message, Provider: se.Provider, Err: err}
	case errors.Is(err, provider.ErrTimeout):
		return &httpx.Error{Status: http.StatusGatewayTimeout, Type: httpx.TypeTimeout, Code: "upstream_timeout", Message: "the provider did not answer in time", Err: err}
	case errors.Is(err, provider.ErrStreamBroken):
		return &httpx.Error{Status: http.StatusBadGateway, Type: httpx.TypeUpstream, Code: "upstream_stream_broken", Message: "the provider's stream ended unexpectedly", Err: err}
	case errors.Is(err, provider.ErrBadResponse):
		return &httpx.Error{Status: http.StatusBadGateway, Type: httpx.TypeUpstream, Code: "upstream_bad_response", Message: "the provider's answer could not be read", Err: err}
	case errors.Is(err, provider.ErrUnreachable):
		return &httpx.Error{Status: http.StatusBadGateway, Type: httpx.TypeUpstream, Code: "upstream_unreachable", Message: "the provider could not be reached", Err: err}
	}
	return err
}

// errorType keeps a provider's OpenAI error type when it is one, and
// otherwise derives it from the status.
func errorType(status int, providerType string) string {
	switch providerType {
	case httpx.TypeInvalidRequest, httpx.TypeAuthentication, httpx.TypePermission, httpx.TypeNotFound,
		httpx.TypeRateLimit, httpx.TypeQuota, httpx.TypeServer:
		return providerType
	}
	switch {
	case status == http.StatusUnauthorized:
		return httpx.TypeAuthentication
	case status == http.StatusForbidden:
		return httpx.TypePermission
	case status == http.StatusNotFound:
		return httpx.TypeNotFound
	case status == http.StatusTooManyRequests:
		return httpx.TypeRateLimit
	case status >= 500:
		return httpx.TypeServer
	}
	return httpx.TypeInvalidRequest
}

// retryHeaders carries the provider's retry hints to the client.
func retryHeaders(h http.Header) http.Header {
	var out http.Header
	for k, vs := range h {
		lk := strings.ToLower(k)
		if lk == "retry-after" || lk == "retry-after-ms" || strings.HasPrefix(lk, "x-ratelimit-") {
			if out == nil {
				out = make(http.Header)
			}
			out[k] = vs
		}
	}
	return out
}

// copyResponseHeaders passes the provider's response headers to the client,
// less hop-by-hop headers, framing headers the gateway sets itself, cookies
// and anything in the gateway's own namespace.
func copyResponseHeaders(dst, src http.Header) {
	for k, vs := range src {
		switch k {
		case "Content-Length", "Content-Type", "Content-Encoding", "Transfer-Encoding", "Connection", "Keep-Alive",
			"Proxy-Connection", "Te", "Trailer", "Upgrade", "Set-Cookie", "Date", "Server", "Alt-Svc":
			continue
		}
		if isGatewayHeader(k) {
			continue
		}
		dst[k] = vs
	}
}
