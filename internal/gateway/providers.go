package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/limits"
	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/registry"
	"github.com/ai-gateway/gateway/internal/routing"
)

// Stored providers (API.md §6 "Integrations, providers"):
// x-gateway-provider: @<slug>, or a config target's "provider": "@<slug>",
// routes through a provider of the caller's workspace. The target takes
// its integration's adapter (ai_provider), credential, custom host and
// provider options. Unlike a virtual key's, its host cannot be replaced
// (x-gateway-custom-host or a config's custom_host: 400
// custom_host_not_allowed), and options from headers or the config only
// fill what the integration leaves unset (lockStoredTarget). Before the
// provider is called:
//
//   - the integration's model allow-list is applied to the model the
//     attempt sends: a model it does not allow is refused with 403
//     permission_error, code model_not_allowed, param "model" (a policy
//     refusal, not a malformed request; in a fallback the next target is
//     tried). Requests naming no model (GET /v1/files) are not checked;
//   - the provider's rate_limits, then its integration's (shared by every
//     provider using it), are counted: a refusal is limits.TooMany's 429
//     with Retry-After and x-ratelimit-* headers. After a chat or embeddings
//     answer, its usage.total_tokens counts against the tokens rules.
//     Pass-through answers count as requests but not as tokens.
//
// usage_limits are stored and returned but not enforced: that needs cost
// tracking, which the gateway does not have yet.
//
// The log record's provider is the adapter's slug (bounded metric labels);
// its virtual_key field holds "@<slug>", the stored provider that
// supplied the credential, as it holds a virtual key's slug.

// ProviderResolver resolves a workspace's stored provider by slug;
// auth.Providers satisfies it.
type ProviderResolver interface {
	Resolve(ctx context.Context, organisationID, workspace, slug string) (*auth.ResolvedProvider, error)
}

// hdrWorkspace names the workspace an organisation key acts in (API.md §2).
const hdrWorkspace = "x-gateway-workspace"

// useStoredProvider fills t from the stored provider ref ("@slug"), named
// by param (the header or the config path). A workspace key reaches only
// its own workspace's providers; an organisation key the ones of the
// workspace it names in x-gateway-workspace, else of the default one.
// Another workspace's provider is unknown, as for a missing slug.
func (c *call) useStoredProvider(t *provider.Target, ref, param string) (*auth.ResolvedProvider, error) {
	if !routing.ValidStoredProvider(ref) {
		return nil, httpx.BadRequest("invalid_provider", param, "%s: %q is not a provider reference: @ then lowercase letters, digits and dashes", param, ref)
	}
	unknown := httpx.BadRequest("unknown_provider", param, "%s: provider %q not found in this workspace", param, ref)
	res := c.g.opt.Providers
	if res == nil {
		return nil, unknown
	}
	ws := c.p.WorkspaceID
	if named := header(c.r.Header, hdrWorkspace); named != "" && c.p.IsOrganisationKey() {
		ws = named
	}
	rp, err := res.Resolve(c.r.Context(), c.p.OrganisationID, ws, ref[len(routing.StoredProviderPrefix):])
	if errors.Is(err, auth.ErrUnknownProvider) {
		return nil, unknown
	}
	if err != nil {
		return nil, err
	}
	t.Provider, t.APIKey, t.CustomHost, t.VirtualKey = rp.AIProvider, rp.APIKey, rp.CustomHost, ref
	t.Options = nil
	if len(rp.Options) > 0 {
		t.Options = make(map[string]string, len(rp.Options))
		for k, v := range rp.Options {
			t.Options[k] = v
		}
	}
	return rp, nil
}

// lockStoredTarget keeps a stored provider's credential where its
// integration sends it: a custom host from the request's header or the
// config (configHost) is refused, since it would hand the organisation's
// credential to any host a workspace member names, and the integration's
// provider options win over the request's x-gateway-* headers (which may
// only fill options the integration leaves unset).
func (c *call) lockStoredTarget(t *provider.Target, rp *auth.ResolvedProvider, configHost string) error {
	if c.hs.customHost != "" {
		return httpx.BadRequest("custom_host_not_allowed", hdrCustomHost, "%s: a stored provider (@%s) sends requests only to its integration's host", hdrCustomHost, rp.Slug)
	}
	if configHost != "" {
		return httpx.BadRequest("custom_host_not_allowed", "custom_host", "custom_host: a stored provider (@%s) sends requests only to its integration's host", rp.Slug)
	}
	t.CustomHost = rp.CustomHost
	for k, v := range rp.Options {
		if t.Options == nil {
			t.Options = make(map[string]string, len(rp.Options))
		}
		t.Options[k] = v
	}
	return nil
}

// admitStoredProvider applies a stored provider's model allow-list and
// rate limits to one attempt, and meters the tokens of its answer.
func (c *call) admitStoredProvider(rt *route, rp *auth.ResolvedProvider) error {
	if model := c.attemptModel(rt); model != "" && !rp.Integration.ModelAllowed(model) {
		return &httpx.Error{Status: http.StatusForbidden, Type: httpx.TypePermission, Code: "model_not_allowed", Param: "model",
			Message: fmt.Sprintf("model %q is not allowed by the integration of provider %q", model, "@"+rp.Slug)}
	}
	lim := c.g.opt.Limiter
	if lim == nil {
		return nil
	}
	counters := rateCounters(rp)
	if len(counters) > 0 {
		// One call for both counters: a request the integration refuses
		// does not use the provider's budget, nor the reverse.
		d, err := lim.Allow(c.r.Context(), limitCounters(counters)...)
		switch {
		case err != nil:
			// A limiter that cannot count degrades limits, never requests.
			c.g.log.Warn("rate limit not checked", "request_id", c.rec.ID, "provider", "@"+rp.Slug, "err", err)
		case !d.Allowed:
			he := limits.TooMany(d)
			for _, rc := range counters {
				if rc.key == d.Key {
					he.Message = rc.what + ": " + he.Message
				}
			}
			return he
		}
	}
	if m := newTokenMeter(c, lim, counters); m != nil {
		rt.provider = m.wrap(rt.provider)
	}
	return nil
}

// attemptModel is the model an attempt sends: its target's override, else
// the request body's.
func (c *call) attemptModel(rt *route) string {
	if raw, ok := rt.overrides["model"]; ok {
		var m string
		if json.Unmarshal(raw, &m) == nil {
			return m
		}
	}
	if len(c.body) > 0 && c.body[0] == '{' {
		return gjson.GetBytes(c.body, "model").String()
	}
	return ""
}

// rateCounter is one set of rules counted under one key.
type rateCounter struct {
	key   string
	what  string // the message's prefix on a refusal
	rules []limits.Rule
}

// rateCounters are a stored provider's counters: its own rules, then its
// integration's. Keys carry ids, so that a renamed or re-created slug
// starts afresh.
func rateCounters(rp *auth.ResolvedProvider) []rateCounter {
	var out []rateCounter
	if len(rp.RateLimits) > 0 {
		out = append(out, rateCounter{key: "provider:" + rp.ID, what: "provider @" + rp.Slug, rules: toRules(rp.RateLimits)})
	}
	if len(rp.IntegrationRateLimits) > 0 {
		out = append(out, rateCounter{key: "integration:" + rp.Integration.ID, what: "integration " + rp.Integration.Slug, rules: toRules(rp.IntegrationRateLimits)})
	}
	return out
}

// limitCounters are the limiter's form of counters.
func limitCounters(counters []rateCounter) []limits.Counter {
	out := make([]limits.Counter, len(counters))
	for i, rc := range counters {
		out[i] = limits.Counter{Key: rc.key, Rules: rc.rules}
	}
	return out
}

func toRules(rls []registry.RateLimit) []limits.Rule {
	out := make([]limits.Rule, len(rls))
	for i, r := range rls {
		out[i] = limits.Rule(r)
	}
	return out
}

// tokenMeter adds an answer's total tokens to the tokens rules of a stored
// provider's counters, once per attempt.
type tokenMeter struct {
	lim      limits.Limiter
	counters []rateCounter
	ctx      context.Context
	log      func(err error)
}

// newTokenMeter returns a meter, or nil when no counter has a tokens rule.
func newTokenMeter(c *call, lim limits.Limiter, counters []rateCounter) *tokenMeter {
	var withTokens []rateCounter
	for _, rc := range counters {
		for _, r := range rc.rules {
			if r.Type == limits.TypeTokens {
				withTokens = append(withTokens, rc)
				break
			}
		}
	}
	if len(withTokens) == 0 {
		return nil
	}
	id := c.rec.ID
	return &tokenMeter{lim: lim, counters: withTokens, ctx: context.WithoutCancel(c.r.Context()),
		log: func(err error) { c.g.log.Warn("tokens not counted against rate limits", "request_id", id, "err", err) }}
}

// add counts n tokens. It runs after the answer, so it has its own
// deadline rather than the request's.
func (m *tokenMeter) add(n int) {
	if n <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, 2*time.Second)
	defer cancel()
	if err := m.lim.AddTokens(ctx, int64(n), limitCounters(m.counters)...); err != nil {
		m.log(err)
	}
}

// wrap returns p metered, keeping the optional capabilities it has.
func (m *tokenMeter) wrap(p provider.Provider) provider.Provider {
	mp := &meteredProvider{Provider: p, m: m}
	if e, ok := p.(provider.Embedder); ok {
		return &meteredEmbedder{meteredProvider: mp, e: e}
	}
	return mp
}

// meteredProvider counts the tokens of chat answers, plain and streamed.
type meteredProvider struct {
	provider.Provider
	m *tokenMeter
}

var (
	_ provider.Provider = (*meteredProvider)(nil)
	_ provider.Native   = (*meteredProvider)(nil)
	_ provider.Embedder = (*meteredEmbedder)(nil)
)

// Native reports the wrapped adapter's answer.
func (p *meteredProvider) Native() bool {
	n, ok := p.Provider.(provider.Native)
	return ok && n.Native()
}

// Chat counts a complete answer's tokens.
func (p *meteredProvider) Chat(ctx context.Context, call *provider.ChatCall) (*provider.Response, error) {
	resp, err := p.Provider.Chat(ctx, call)
	if err == nil && resp != nil && resp.Status < 300 {
		p.m.add(resp.Usage.TotalTokens)
	}
	return resp, err
}

// ChatStream counts a stream's tokens when it ends or is closed.
func (p *meteredProvider) ChatStream(ctx context.Context, call *provider.ChatCall) (provider.Stream, error) {
	st, err := p.Provider.ChatStream(ctx, call)
	if err != nil {
		return nil, err
	}
	return &meteredStream{Stream: st, m: p.m}, nil
}

type meteredEmbedder struct {
	*meteredProvider
	e provider.Embedder
}

// Embed counts an embeddings answer's tokens.
func (p *meteredEmbedder) Embed(ctx context.Context, call *provider.EmbedCall) (*provider.Response, error) {
	resp, err := p.e.Embed(ctx, call)
	if err == nil && resp != nil && resp.Status < 300 {
		p.m.add(resp.Usage.TotalTokens)
	}
	return resp, err
}

// meteredStream remembers the last usage a stream reported and counts it
// once, at its end or when it is closed early.
type meteredStream struct {
	provider.Stream
	m     *tokenMeter
	total int
	once  sync.Once
}

func (s *meteredStream) Next() (provider.Chunk, error) {
	ch, err := s.Stream.Next()
	if err == nil && ch.Usage != nil {
		s.total = ch.Usage.TotalTokens
	}
	if err != nil {
		s.once.Do(func() { s.m.add(s.total) })
	}
	return ch, err
}

func (s *meteredStream) Close() error {
	s.once.Do(func() { s.m.add(s.total) })
	return s.Stream.Close()
}
