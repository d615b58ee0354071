package routing

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"time"
)

// Plan is a validated config ready to run: a tree of strategy nodes whose
// leaves are Targets with every inherited setting already applied. A Plan
// is immutable once built and is shared by concurrent requests; caches hold
// one per config version.
type Plan struct {
	root *node
	// key identifies the config for circuit-breaker state: "saved:<id>:<version>"
	// or "inline:<hash>".
	key     string
	targets []*Target
}

// node is one level of the plan.
type node struct {
	path     string
	mode     string
	onStatus []int // fallback: nil means any non-2xx
	conds    []cond
	def      int // conditional default child, -1 for none
	children []*node
	weight   float64
	target   *Target // set on leaves
}

type cond struct {
	q     *Query
	child int
}

// Target is one leaf of a plan: where an attempt goes and how it behaves.
// Inherited settings are already merged in; credentials are the leaf's own.
type Target struct {
	// Path is the leaf's JSON path in the config (config, config.targets[1],
	// config.targets[0].targets[2]), for x-gateway-last-used-option-index.
	Path       string
	Name       string
	Provider   string
	APIKey     string
	VirtualKey string
	CustomHost string
	// Options holds the provider settings of API.md §3 (not inherited).
	Options map[string]string
	// Overrides are the merged override_params (child wins over parent).
	Overrides      map[string]json.RawMessage
	Retry          Retry
	RequestTimeout time.Duration
	// FirstTokenTimeout bounds a streamed attempt's wait for its first
	// event (see Config.FirstTokenTimeout).
	FirstTokenTimeout time.Duration
	ForwardHeaders    []string
	StrictOpenAI      *bool
	Cache             *Cache
	// Breaker is nil when the target has no circuit breaker.
	Breaker *CircuitBreaker
	// BreakerKey names the target's circuit state: the plan's key and the
	// target's path.
	BreakerKey string

	InputGuardrails  json.RawMessage
	OutputGuardrails json.RawMessage
	BeforeHooks      json.RawMessage
	AfterHooks       json.RawMessage
}

// inherited are the settings a child takes from its parent when it lacks
// them (API.md §4). Credentials and provider settings are never inherited.
type inherited struct {
	overrides      map[string]json.RawMessage
	retry          *Retry
	cache          *Cache
	timeout        *int64
	firstToken     *int64
	customHost     string
	forwardHeaders []string
	strict         *bool
	breaker        *CircuitBreaker
	inGuards       json.RawMessage
	outGuards      json.RawMessage
	beforeHooks    json.RawMessage
	afterHooks     json.RawMessage
}

// NewPlan builds the plan of a validated config. key identifies the config
// (and its version) for circuit-breaker state.
func NewPlan(c *Config, key string) *Plan {
	p := &Plan{key: key}
	p.root = p.build(c, "config", inherited{})
	return p
}

// Compile parses data and builds its plan; key as for NewPlan, or "" for a
// key derived from the config's bytes.
func Compile(data []byte, key string, opt ParseOptions) (*Plan, error) {
	c, err := ParseWith(data, opt)
	if err != nil {
		return nil, err
	}
	if key == "" {
		key = InlineKey(data)
	}
	return NewPlan(c, key), nil
}

// InlineKey is the plan key of an inline config: a hash of its bytes.
func InlineKey(data []byte) string {
	sum := sha256.Sum256(data)
	return "inline:" + hex.EncodeToString(sum[:12])
}

// Key returns the plan's identity.
func (p *Plan) Key() string { return p.key }

// Targets lists the plan's leaves in config order.
func (p *Plan) Targets() []*Target { return p.targets }

func (p *Plan) build(c *Config, path string, in inherited) *node {
	// The child's own settings win; what it lacks comes from the parent.
	if len(c.OverrideParams) > 0 {
		merged := make(map[string]json.RawMessage, len(in.overrides)+len(c.OverrideParams))
		maps.Copy(merged, in.overrides)
		maps.Copy(merged, c.OverrideParams)
		in.overrides = merged
	}
	if c.Retry != nil {
		in.retry = c.Retry
	}
	if c.Cache != nil {
		in.cache = c.Cache
	}
	if c.RequestTimeout != nil {
		in.timeout = c.RequestTimeout
	}
	if c.FirstTokenTimeout != nil {
		in.firstToken = c.FirstTokenTimeout
	}
	if c.CustomHost != "" {
		in.customHost = c.CustomHost
	}
	if c.ForwardHeaders != nil {
		in.forwardHeaders = c.ForwardHeaders
	}
	if c.StrictOpenAI != nil {
		in.strict = c.StrictOpenAI
	}
	if c.CircuitBreaker != nil {
		in.breaker = c.CircuitBreaker
	}
	if c.InputGuards != nil {
		in.inGuards = c.InputGuards
	}
	if c.OutputGuards != nil {
		in.outGuards = c.OutputGuards
	}
	if c.BeforeHooks != nil {
		in.beforeHooks = c.BeforeHooks
	}
	if c.AfterHooks != nil {
		in.afterHooks = c.AfterHooks
	}

	n := &node{path: path, mode: ModeSingle, def: -1, weight: 1}
	if c.Weight != nil {
		n.weight = *c.Weight
	}
	if len(c.Targets) == 0 {
		n.target = p.leaf(c, path, in)
		p.targets = append(p.targets, n.target)
		return n
	}
	if c.Strategy != nil {
		n.mode = c.Strategy.Mode
		n.onStatus = c.Strategy.OnStatusCodes
	}
	names := make(map[string]int, len(c.Targets))
	for i, child := range c.Targets {
		n.children = append(n.children, p.build(child, fmt.Sprintf("%s.targets[%d]", path, i), in))
		if child.Name != "" {
			names[child.Name] = i
		}
	}
	if n.mode == ModeConditional {
		for _, cd := range c.Strategy.Conditions {
			n.conds = append(n.conds, cond{q: cd.Query, child: names[cd.Then]})
		}
		if c.Strategy.Default != "" {
			n.def = names[c.Strategy.Default]
		}
	}
	return n
}

func (p *Plan) leaf(c *Config, path string, in inherited) *Target {
	t := &Target{
		Path: path, Name: c.Name, Provider: c.Provider, APIKey: c.APIKey, VirtualKey: c.VirtualKey,
		CustomHost: in.customHost, Overrides: in.overrides, ForwardHeaders: in.forwardHeaders,
		StrictOpenAI: in.strict, Cache: in.cache, Breaker: in.breaker, BreakerKey: p.key + "|" + path,
		InputGuardrails: in.inGuards, OutputGuardrails: in.outGuards, BeforeHooks: in.beforeHooks, AfterHooks: in.afterHooks,
	}
	if len(c.ProviderFields) > 0 {
		t.Options = maps.Clone(c.ProviderFields)
	}
	if in.retry != nil {
		t.Retry = *in.retry
	}
	if t.Retry.OnStatusCodes == nil {
		t.Retry.OnStatusCodes = DefaultRetryStatusCodes
	}
	if in.timeout != nil {
		t.RequestTimeout = time.Duration(*in.timeout) * time.Millisecond
	}
	if in.firstToken != nil {
		t.FirstTokenTimeout = time.Duration(*in.firstToken) * time.Millisecond
	}
	return t
}
