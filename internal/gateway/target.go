package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/routing"
)

// route is one resolved target: a provider with its credentials and what
// the config added to them.
type route struct {
	target    *provider.Target
	provider  provider.Provider
	overrides map[string]json.RawMessage
	// path is the config target's JSON path ("" without a config).
	path string
	// firstToken bounds a stream's wait for its first event (0: none).
	firstToken time.Duration
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
	"x-gateway-azure-entra-client-id":       "azure_entra_client_id",
	"x-gateway-azure-entra-client-secret":   "azure_entra_client_secret",
	"x-gateway-azure-entra-tenant-id":       "azure_entra_tenant_id",
	"x-gateway-azure-authority-host":        "azure_authority_host",
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

// headerSettings are the request headers that adjust every target,
// whether it comes from headers or from a config: they are read and
// checked once per request.
type headerSettings struct {
	customHost string
	options    map[string]string
	forward    []string
	strict     *bool
	// timeout is x-gateway-request-timeout: it replaces every target's
	// request_timeout.
	timeout time.Duration
}

func readHeaderSettings(h http.Header) (headerSettings, error) {
	var hs headerSettings
	if ch := header(h, hdrCustomHost); ch != "" {
		if err := routing.ValidateCustomHost(ch); err != nil {
			return hs, httpx.BadRequest("invalid_custom_host", hdrCustomHost, "%s: %v", hdrCustomHost, err)
		}
		hs.customHost = ch
	}
	for hdr, opt := range providerHeaderFields {
		if v := firstValue(h, hdr); v != "" {
			if hs.options == nil {
				hs.options = make(map[string]string)
			}
			hs.options[opt] = v
		}
	}
	if fh := header(h, hdrForwardHeaders); fh != "" {
		for _, name := range strings.Split(fh, ",") {
			if name = strings.TrimSpace(name); name != "" {
				hs.forward = append(hs.forward, name)
			}
		}
	}
	if v := header(h, hdrStrictOpenAI); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return hs, httpx.BadRequest("invalid_header", hdrStrictOpenAI, "%s: must be true or false", hdrStrictOpenAI)
		}
		hs.strict = &b
	}
	d, err := requestTimeout(h)
	if err != nil {
		return hs, err
	}
	hs.timeout = d
	return hs, nil
}

// apply lays the request's header settings over a target: they win over
// a config's and a virtual key's.
func (hs *headerSettings) apply(rt *route) {
	t := rt.target
	if hs.customHost != "" {
		t.CustomHost = hs.customHost
	}
	for k, v := range hs.options {
		if t.Options == nil {
			t.Options = make(map[string]string, len(hs.options))
		}
		t.Options[k] = v
	}
	t.ForwardHeaders = append(t.ForwardHeaders, hs.forward...)
	if hs.strict != nil {
		rt.strict = *hs.strict
	}
}

// keyDefaults is the defaults object of an API key (API.md §6 "API keys").
type keyDefaults struct {
	ConfigID string `json:"config_id"`
	// AllowConfigOverride false forbids the request's own x-gateway-config
	// (403) and makes the default config win over routing headers.
	AllowConfigOverride *bool `json:"allow_config_override"`
}

func readKeyDefaults(raw []byte) keyDefaults {
	var d keyDefaults
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &d) // validated when the key is saved; garbage means none
	}
	return d
}

// routePlan decides how the request is routed, from SPEC.md's header
// combinations or the API key's default config:
//
//   - x-gateway-config (inline JSON, or a saved config's slug or id) wins,
//     unless the key has a default config with allow_config_override false:
//     then the request is refused (403 config_override_not_allowed);
//   - otherwise a key's default config (defaults.config_id) routes the
//     request when it names no virtual key or provider, and always when
//     allow_config_override is false (routing headers are then ignored);
//   - otherwise x-gateway-virtual-key, then x-gateway-provider with
//     Authorization (and x-gateway-custom-host).
//
// With a config, c.plan is set; otherwise c.direct.
func (c *call) routePlan() error {
	h := c.r.Header
	hs, err := readHeaderSettings(h)
	if err != nil {
		return err
	}
	c.hs = hs
	def := readKeyDefaults(c.p.Defaults)
	overridable := def.AllowConfigOverride == nil || *def.AllowConfigOverride
	cfg := strings.TrimSpace(header(h, hdrConfig))
	switch {
	case cfg != "":
		if def.ConfigID != "" && !overridable {
			return httpx.Forbidden("config_override_not_allowed", "this API key routes with its default config and may not send "+hdrConfig)
		}
		return c.useConfig(cfg)
	case def.ConfigID != "" && (!overridable || (header(h, hdrVirtualKey) == "" && header(h, hdrProvider) == "")):
		if !overridable {
			// The key's config is enforced: headers that would send its
			// targets elsewhere are ignored with the rest of the routing.
			c.hs.customHost, c.hs.options = "", nil
		}
		return c.useSaved(def.ConfigID, "defaults.config_id")
	case c.g.opt.DeploymentConfig != nil && header(h, hdrVirtualKey) == "" && header(h, hdrProvider) == "":
		// The deployment's config routes a request that names no routing
		// of its own (API.md §6 Deployments).
		if ref := c.g.opt.DeploymentConfig(c.p); ref != "" {
			return c.useDeploymentConfig(ref)
		}
	}
	rt := &route{target: &provider.Target{}, strict: true}
	t := rt.target
	var stored *auth.ResolvedProvider
	switch name := strings.TrimSpace(header(h, hdrProvider)); {
	case header(h, hdrVirtualKey) != "":
		if err := c.useVirtualKey(t, header(h, hdrVirtualKey)); err != nil {
			return err
		}
	case routing.IsStoredProvider(name):
		// x-gateway-provider: @slug routes through a stored provider
		// (providers.go); the client's Authorization is not used.
		if stored, err = c.useStoredProvider(t, name, hdrProvider); err != nil {
			return err
		}
	case name != "":
		t.Provider = name
		t.APIKey = bearer(h.Get("Authorization"))
	default:
		return httpx.BadRequest("missing_provider", hdrProvider,
			"no provider routing: send x-gateway-virtual-key, x-gateway-provider with Authorization, or x-gateway-config")
	}
	c.hs.apply(rt)
	if stored != nil {
		if err := c.lockStoredTarget(t, stored, ""); err != nil {
			return err
		}
	}
	p, ok := c.g.providers.Lookup(t.Provider)
	if !ok {
		return httpx.BadRequest("unknown_provider", hdrProvider, "%v", c.g.providers.UnknownProviderError(t.Provider))
	}
	rt.provider = p
	if stored != nil {
		if err := c.admitStoredProvider(rt, stored); err != nil {
			return err
		}
	}
	c.direct = rt
	return nil
}

// useConfig routes with the x-gateway-config header: inline JSON, or a
// saved config's slug or id.
func (c *call) useConfig(v string) error {
	if !strings.HasPrefix(v, "{") && !strings.HasPrefix(v, "[") && !strings.HasPrefix(v, `"`) {
		return c.useSaved(v, hdrConfig)
	}
	plan, err := c.g.inlinePlan(v)
	if err != nil {
		return err
	}
	c.plan = plan
	c.rec.Config = configForLog(v)
	return nil
}

// useSaved routes with a saved config. A workspace key sees only its own
// workspace's configs; another's is "not found", so ids do not leak.
func (c *call) useSaved(slugOrID, param string) error {
	return c.savedPlan(slugOrID, param, false)
}

// useDeploymentConfig routes with the config of the deployment this process
// serves. An administrator chose it for every workspace the deployment
// serves, so a saved one applies whichever workspace it was saved in.
func (c *call) useDeploymentConfig(ref string) error {
	if strings.HasPrefix(ref, "{") {
		return c.useConfig(ref)
	}
	return c.savedPlan(ref, "deployment.config", true)
}

// savedPlan routes with a saved config; unless anyWorkspace, only one of
// the key's own workspace (or any, for an organisation key).
func (c *call) savedPlan(slugOrID, param string, anyWorkspace bool) error {
	if c.g.configs == nil {
		return routing.NotFound(slugOrID, param)
	}
	plan, cfg, err := c.g.configs.Plan(c.r.Context(), c.p.OrganisationID, slugOrID, param)
	if err != nil {
		return err
	}
	if !anyWorkspace && !c.p.IsOrganisationKey() && cfg.WorkspaceID != c.p.WorkspaceID {
		return routing.NotFound(slugOrID, param)
	}
	c.plan = plan
	c.rec.Config = cfg.Slug
	return nil
}

// inlinePlan parses an inline config, through a small cache keyed by the
// header's text: clients send the same config on every request.
func (g *Gateway) inlinePlan(v string) (*routing.Plan, error) {
	g.inlineMu.RLock()
	p := g.inline[v]
	g.inlineMu.RUnlock()
	if p != nil {
		return p, nil
	}
	p, err := routing.Compile([]byte(v), "", routing.ParseOptions{KnownProvider: g.knownProvider})
	if err != nil {
		return nil, err
	}
	g.inlineMu.Lock()
	if len(g.inline) >= maxInlinePlans {
		clear(g.inline)
	}
	g.inline[v] = p
	g.inlineMu.Unlock()
	return p, nil
}

// maxInlinePlans bounds the inline-config cache.
const maxInlinePlans = 1024

func (g *Gateway) knownProvider(slug string) bool {
	_, ok := g.providers.Lookup(slug)
	return ok
}

// leafRoute resolves a config target to a route: its credentials (its own
// api_key, its virtual key, or the request's Authorization), settings and
// adapter, with the request's header settings laid over them.
func (c *call) leafRoute(lt *routing.Target) (*route, error) {
	rt := &route{target: &provider.Target{}, strict: true, path: lt.Path, overrides: lt.Overrides, firstToken: lt.FirstTokenTimeout}
	t := rt.target
	var stored *auth.ResolvedProvider
	if lt.VirtualKey != "" {
		if err := c.useVirtualKey(t, lt.VirtualKey); err != nil {
			return nil, err
		}
	} else if routing.IsStoredProvider(lt.Provider) {
		var err error
		if stored, err = c.useStoredProvider(t, lt.Provider, lt.Path+".provider"); err != nil {
			return nil, err
		}
	} else {
		t.Provider, t.APIKey = lt.Provider, lt.APIKey
		if t.APIKey == "" {
			t.APIKey = bearer(c.r.Header.Get("Authorization"))
		}
	}
	if lt.CustomHost != "" && stored == nil {
		t.CustomHost = lt.CustomHost
	}
	for k, v := range lt.Options {
		if t.Options == nil {
			t.Options = make(map[string]string, len(lt.Options))
		}
		t.Options[k] = v
	}
	t.ForwardHeaders = append(t.ForwardHeaders, lt.ForwardHeaders...)
	if lt.StrictOpenAI != nil {
		rt.strict = *lt.StrictOpenAI
	}
	c.hs.apply(rt)
	if stored != nil {
		if err := c.lockStoredTarget(t, stored, lt.CustomHost); err != nil {
			return nil, err
		}
	}
	p, ok := c.g.providers.Lookup(t.Provider)
	if !ok {
		return nil, httpx.BadRequest("unknown_provider", lt.Path+".provider", "%v", c.g.providers.UnknownProviderError(t.Provider))
	}
	rt.provider = p
	if stored != nil {
		if err := c.admitStoredProvider(rt, stored); err != nil {
			return nil, err
		}
	}
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
			if auth.IsSecretField(k) {
				x[k] = "[redacted]"
			} else {
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
