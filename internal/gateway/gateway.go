// Package gateway holds the data-plane handlers: chat completions (plain and
// streamed), pass-through of any other provider path, files, and the model
// list. Each request is authenticated upstream of these handlers; here it
// is validated, routed to a target, sent to the provider, answered, and
// handed to the request log.
//
// gateway never imports admin or store: what it needs from storage arrives
// as interfaces declared here.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/limits"
	"github.com/ai-gateway/gateway/internal/metrics"
	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/reqlog"
	"github.com/ai-gateway/gateway/internal/routing"
)

// VirtualKeyResolver opens a virtual key for the data plane.
type VirtualKeyResolver interface {
	Resolve(ctx context.Context, organisationID, slug string) (*auth.ResolvedVirtualKey, error)
}

// LogQueue receives every request's record. Enqueue may wait for room.
type LogQueue interface {
	Enqueue(rec *reqlog.Record) error
}

// SavedConfigs resolves saved configs (x-gateway-config slugs and API
// keys' default configs) to plans; routing.SavedConfigs satisfies it.
type SavedConfigs interface {
	Plan(ctx context.Context, organisationID, slugOrID, param string) (*routing.Plan, *routing.StoredConfig, error)
}

// Options tune the data plane.
type Options struct {
	// Configs resolves saved configs; nil means there are none.
	Configs SavedConfigs
	// Breakers holds circuit-breaker state; nil means in-process state.
	Breakers routing.Breakers
	// VirtualKeyProviders lists the providers a key's virtual keys reach,
	// for GET /v1/models without routing headers; nil lists none.
	VirtualKeyProviders VirtualKeyProviders
	// DeploymentConfig, when set, returns the config (a saved config's slug
	// or id, or inline JSON) that routes a request naming no routing of its
	// own and whose key has no default config; "" for none.
	DeploymentConfig func(p *auth.Principal) string

	// Providers resolves stored providers (providers.go); nil means none.
	Providers ProviderResolver
	// Limiter enforces stored providers' and integrations' rate limits;
	// nil enforces none.
	Limiter limits.Limiter

	// Sleep and Rand replace the router's waits between retries and its
	// randomness (load balancing, backoff jitter); nil means real ones.
	Sleep func(ctx context.Context, d time.Duration) error
	Rand  func() float64

	// MaxBodyBytes bounds a request body (413 beyond); default 32 MiB.
	MaxBodyBytes int64
	// LogBodies stores request and response bodies in the log record.
	LogBodies bool
	// LogBodyMaxBytes truncates each stored body; default 64 KiB.
	LogBodyMaxBytes int
}

// Gateway serves the data plane.
type Gateway struct {
	providers   *provider.Registry
	virtualKeys VirtualKeyResolver
	logs        LogQueue
	metrics     *metrics.Metrics
	http        *http.Client
	log         *slog.Logger
	opt         Options
	now         func() time.Time

	runner  *routing.Runner
	configs SavedConfigs

	inlineMu sync.RWMutex
	inline   map[string]*routing.Plan
}

// New builds the data plane. hc is the client for pass-through requests
// (the same tuned client the adapters use).
func New(providers *provider.Registry, vks VirtualKeyResolver, logs LogQueue, m *metrics.Metrics, hc *http.Client, log *slog.Logger, opt Options) *Gateway {
	if opt.MaxBodyBytes <= 0 {
		opt.MaxBodyBytes = 32 << 20
	}
	if opt.LogBodyMaxBytes <= 0 {
		opt.LogBodyMaxBytes = 64 << 10
	}
	breakers := opt.Breakers
	if breakers == nil {
		breakers = routing.NewMemoryBreakers()
	}
	g := &Gateway{providers: providers, virtualKeys: vks, logs: logs, metrics: m, http: hc, log: log, opt: opt, now: time.Now,
		configs: opt.Configs, inline: make(map[string]*routing.Plan)}
	g.runner = &routing.Runner{Breakers: breakers, Sleep: opt.Sleep, Rand: opt.Rand}
	return g
}

// Register mounts the named data-plane routes of API.md §3 on mux. The
// catch-all pass-through is served by PassThrough, which the caller routes
// to when HasRouting reports provider routing headers.
func (g *Gateway) Register(mux *http.ServeMux) {
	mux.Handle("POST /v1/chat/completions", g.handle("chat", g.chat))
	mux.Handle("POST /v1/embeddings", g.handle("embeddings", g.embeddings))
	mux.Handle("POST /v1/completions", g.handle("completions", g.completions))
	files := g.handle("files", g.forward)
	mux.Handle("GET /v1/files", files)
	mux.Handle("POST /v1/files", files)
	mux.Handle("GET /v1/files/{file_id}", files)
	mux.Handle("DELETE /v1/files/{file_id}", files)
	mux.Handle("GET /v1/files/{file_id}/content", files)
	mux.Handle("GET /v1/models", g.models())
}

// PassThrough serves any other /v1 path by forwarding it to the provider.
func (g *Gateway) PassThrough() http.Handler { return g.handle("passthrough", g.forward) }

// Routing request headers (API.md §3).
const (
	hdrVirtualKey     = "x-gateway-virtual-key"
	hdrProvider       = "x-gateway-provider"
	hdrConfig         = "x-gateway-config"
	hdrCustomHost     = "x-gateway-custom-host"
	hdrMetadata       = "x-gateway-metadata"
	hdrSpanID         = "x-gateway-span-id"
	hdrParentSpanID   = "x-gateway-parent-span-id"
	hdrSpanName       = "x-gateway-span-name"
	hdrRequestTimeout = "x-gateway-request-timeout"
	hdrForwardHeaders = "x-gateway-forward-headers"
	hdrOptionIndex    = "x-gateway-last-used-option-index"
	hdrRetryCount     = "x-gateway-retry-attempt-count"
	hdrProviderOut    = "x-gateway-provider"
)

// canonicalNames maps the gateway's header names, spelled in lower case as
// API.md and the error messages do, to their canonical MIME forms, computed
// once: Header.Get and Set canonicalise (and allocate) on every call for a
// name that is not already canonical, which is measurable on the hot path.
var canonicalNames = map[string]string{}

func init() {
	for _, n := range []string{hdrVirtualKey, hdrProvider, hdrConfig, hdrCustomHost, hdrMetadata, hdrSpanID, hdrParentSpanID,
		hdrSpanName, hdrRequestTimeout, hdrForwardHeaders, hdrOptionIndex, hdrRetryCount, hdrProviderOut, hdrStrictOpenAI} {
		canonicalNames[n] = http.CanonicalHeaderKey(n)
	}
}

// header reads the first value of one of the gateway's headers.
func header(h http.Header, name string) string {
	if vs := h[canonical(name)]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// setHeader sets one of the gateway's response headers.
func setHeader(h http.Header, name, value string) { h[canonical(name)] = []string{value} }

func canonical(name string) string {
	if c, ok := canonicalNames[name]; ok {
		return c
	}
	return http.CanonicalHeaderKey(name)
}

// HasRouting reports whether r names a provider target, which makes an
// unnamed /v1 path a pass-through rather than a control-plane route.
func HasRouting(r *http.Request) bool {
	h := r.Header
	return header(h, hdrVirtualKey) != "" || header(h, hdrProvider) != "" || header(h, hdrConfig) != "" || header(h, hdrCustomHost) != ""
}

// call is the state of one data-plane request.
type call struct {
	g     *Gateway
	w     *httpx.Recorder
	r     *http.Request
	p     *auth.Principal
	route string
	start time.Time
	rec   *reqlog.Record

	// body is the request body, for conditional routing's params.*.
	body []byte
	// hs are the request's header settings; plan the config's plan, or
	// direct the one target named by headers.
	hs     headerSettings
	plan   *routing.Plan
	direct *route

	upstreamDur time.Duration
	ttft        time.Duration
	respLog     []byte
}

// errClientGone ends a request whose client disconnected: nothing more is
// written and the record says 499.
var errClientGone = errors.New("client closed the request")

// abortError ends a stream that broke after its first byte: the handler
// aborts the connection so the client cannot mistake the truncated stream
// for a complete one.
type abortError struct{ err *httpx.Error }

func (e *abortError) Error() string { return "stream aborted: " + e.err.Error() }
func (e *abortError) Unwrap() error { return e.err }

// statusClientClosed is the conventional status for a client that went
// away before the answer (nginx's 499).
const statusClientClosed = 499

func (g *Gateway) handle(route string, h func(*call) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ids := httpx.IDsFrom(r.Context())
		c := &call{g: g, w: httpx.NewRecorder(w), r: r, p: auth.PrincipalFrom(r.Context()), route: route, start: g.now()}
		c.rec = &reqlog.Record{
			ID: ids.RequestID, TraceID: ids.TraceID,
			SpanID: header(r.Header, hdrSpanID), ParentSpanID: header(r.Header, hdrParentSpanID), SpanName: header(r.Header, hdrSpanName),
			RequestPath: r.URL.Path, Method: r.Method, CreatedAt: c.start.UTC(),
		}
		if c.p != nil {
			c.rec.OrganisationID, c.rec.WorkspaceID, c.rec.APIKeyID = c.p.OrganisationID, c.p.WorkspaceID, c.p.APIKeyID
		}
		err := c.prepare()
		if err == nil {
			err = h(c)
		}
		status, abort := c.conclude(err)
		c.finish(status, err)
		if abort {
			panic(http.ErrAbortHandler)
		}
	})
}

// prepare checks what every data-plane request shares: the scope, the
// tracing metadata header.
func (c *call) prepare() error {
	if c.p == nil {
		return httpx.Unauthorized("missing_api_key", "missing x-gateway-api-key header")
	}
	if err := c.p.Require(auth.ScopeCompletionsWrite); err != nil {
		return err
	}
	md, err := parseMetadata(header(c.r.Header, hdrMetadata))
	if err != nil {
		return err
	}
	c.rec.Metadata = md
	return nil
}

// conclude writes the error answer when there is still time to, and says
// which status the request ended with and whether to abort the connection.
func (c *call) conclude(err error) (status int, abort bool) {
	if err == nil {
		return c.w.Status(), false
	}
	var ae *abortError
	var pa *passAnswer
	switch {
	case errors.As(err, &pa) && !c.w.Wrote():
		return c.writePassAnswer(pa), false
	case errors.As(err, &ae):
		c.rec.ErrorMessage = ae.err.Message
		return ae.err.Status, true
	case errors.Is(err, errClientGone) || (errors.Is(err, context.Canceled) && c.r.Context().Err() != nil):
		c.rec.ErrorMessage = "client closed the request"
		return statusClientClosed, false
	case c.w.Wrote():
		c.g.log.Warn("data-plane error after the response started", "request_id", c.rec.ID, "err", err)
		c.rec.ErrorMessage = truncate(err.Error(), 512)
		return c.w.Status(), false
	}
	he := httpx.WriteError(c.w, err)
	if he.Status >= 500 && he.Err != nil {
		c.g.log.Error("data-plane request failed", "request_id", c.rec.ID, "route", c.route, "status", he.Status, "err", he.Err)
	}
	c.rec.ErrorMessage = truncate(he.Message, 512)
	c.respLog = he.Body()
	return he.Status, false
}

// finish completes the record and hands it to the log queue. The request's
// context may be gone (client disconnect): the record is still written.
func (c *call) finish(status int, err error) {
	end := c.g.now()
	rec := c.rec
	rec.StatusCode = status
	rec.IsSuccess = status >= 200 && status < 300 && err == nil
	total := end.Sub(c.start)
	rec.LatencyMS = ms(total)
	rec.UpstreamLatencyMS = ms(c.upstreamDur)
	rec.OverheadMS = ms(max(0, total-c.upstreamDur))
	rec.TTFTMS = ms(c.ttft)
	if c.g.opt.LogBodies {
		rec.ResponseBody = c.g.bodyForLog(c.respLog)
	}
	c.g.metrics.Observe(metrics.Request{
		Route: c.route, Provider: rec.Provider, Status: status, Seconds: total.Seconds(), UpstreamSeconds: c.upstreamDur.Seconds(),
		PromptTokens: rec.Usage.PromptTokens, CompletionTokens: rec.Usage.CompletionTokens,
	})
	if qerr := c.g.logs.Enqueue(rec); qerr != nil {
		c.g.log.Error("request log record not queued", "request_id", rec.ID, "err", qerr)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// bodyForLog returns b as stored in a record: at most LogBodyMaxBytes.
func (g *Gateway) bodyForLog(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > g.opt.LogBodyMaxBytes {
		n := g.opt.LogBodyMaxBytes
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
		return string(b[:n]) + "…[truncated " + strconv.Itoa(len(b)-n) + " bytes]"
	}
	return string(b)
}

// parseMetadata reads x-gateway-metadata: a JSON object whose values are
// strings (SPEC.md; API.md §3).
func parseMetadata(v string) (map[string]string, error) {
	if v == "" {
		return nil, nil
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(v), &raw); err != nil || raw == nil {
		return nil, httpx.BadRequest("invalid_metadata", hdrMetadata, "%s: must be a JSON object of string values", hdrMetadata)
	}
	md := make(map[string]string, len(raw))
	for k, val := range raw {
		s, ok := val.(string)
		if !ok {
			return nil, httpx.BadRequest("invalid_metadata", hdrMetadata, "%s: value of %q must be a string", hdrMetadata, k)
		}
		md[k] = s
	}
	return md, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// requestTimeout reads x-gateway-request-timeout (milliseconds).
func requestTimeout(h http.Header) (time.Duration, error) {
	v := header(h, hdrRequestTimeout)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n <= 0 {
		return 0, httpx.BadRequest("invalid_header", hdrRequestTimeout, "%s: must be a positive number of milliseconds", hdrRequestTimeout)
	}
	return time.Duration(n) * time.Millisecond, nil
}
