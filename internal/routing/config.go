// Package routing owns the config object of API.md §4: its schema and
// strict validation (every problem reported at once, codes AB01…, param
// naming the path of the first one), the immutable Plan built from a config
// with the inheritance rules applied, the Runner that executes a plan
// (single, fallback, loadbalance, conditional, nested to any depth, with
// retries, per-attempt timeouts and circuit breaking), and the cache of
// saved configs.
//
// routing does not call providers: the data plane hands the Runner a
// function that makes one attempt against one target and reports its
// Outcome. routing imports only httpx among the gateway's packages; the
// store satisfies its ConfigStore interface.
package routing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ai-gateway/gateway/internal/httpx"
)

// Config is one level of the config object; targets nest. Parse fills it
// only from a config that passed validation.
type Config struct {
	Strategy   *Strategy
	Targets    []*Config
	Name       string
	Provider   string
	APIKey     string
	VirtualKey string
	CustomHost string
	// Weight is the loadbalance weight (default 1; 0 never chosen).
	Weight *float64
	// OverrideParams are set over the request body's top-level fields, as
	// raw JSON values so that numbers keep their exact text.
	OverrideParams map[string]json.RawMessage
	Retry          *Retry
	Cache          *Cache
	// RequestTimeout bounds each attempt, in milliseconds.
	RequestTimeout *int64
	// FirstTokenTimeout bounds, in milliseconds, how long a streamed
	// attempt may take to deliver its first event. API.md §4 names no
	// field for the time-to-first-token limit the issue asks for; this
	// gateway calls it first_token_timeout, in the units of
	// request_timeout. Only streamed requests use it.
	FirstTokenTimeout *int64
	// CircuitBreaker turns circuit breaking on for the target (and, by
	// inheritance, every target below it). API.md §4 has no field for it;
	// see CircuitBreaker.
	CircuitBreaker *CircuitBreaker
	ForwardHeaders []string
	StrictOpenAI   *bool
	InputGuards    json.RawMessage
	OutputGuards   json.RawMessage
	BeforeHooks    json.RawMessage
	AfterHooks     json.RawMessage
	// ProviderFields holds the snake_case provider settings of API.md §3
	// (aws_region, azure_resource_name, …).
	ProviderFields map[string]string
}

// Strategy is a config's routing strategy. A level without one routes in
// mode single, which takes exactly one target (or none: the level is
// itself the target); several targets need an explicit mode.
type Strategy struct {
	Mode string
	// OnStatusCodes limits which statuses make a fallback move on; nil
	// means any non-2xx. Connection errors and timeouts always move on.
	OnStatusCodes []int
	Conditions    []Condition
	Default       string
}

// Condition is one rule of a conditional strategy: the first whose query
// matches sends the request to the target named Then.
type Condition struct {
	Query *Query
	Then  string
}

// Retry is a target's retry policy (API.md §4).
type Retry struct {
	// Attempts is the number of retries after the first try, 0 to 5.
	Attempts int
	// OnStatusCodes are the statuses retried; nil means DefaultRetryStatusCodes.
	OnStatusCodes       []int
	UseRetryAfterHeader bool
}

// DefaultRetryStatusCodes are retried when a retry policy names none
// (API.md §4). A connection error counts as 502 and a timeout as 504.
var DefaultRetryStatusCodes = []int{429, 500, 502, 503, 504}

// Cache is a target's response-cache setting (API.md §4). The cache itself
// is another issue's; routing validates and inherits the setting.
type Cache struct {
	Mode   string
	MaxAge *int64 // seconds
}

// CircuitBreaker is a target's circuit-breaker setting. API.md §4 has no
// field for it; this gateway reads
//
//	"circuit_breaker": {"failure_threshold": 5, "window_ms": 60000, "cooldown_ms": 30000}
//
// on any target: after failure_threshold failures (connection errors,
// timeouts, 429 and 5xx answers) within window_ms, the target is skipped for
// cooldown_ms; then one request probes it (half-open), and its success
// closes the circuit while its failure opens it for another cool-down.
// Omitted fields take the defaults shown; without the object there is no
// circuit breaking.
type CircuitBreaker struct {
	FailureThreshold int
	WindowMS         int64
	CooldownMS       int64
}

// Circuit-breaker defaults, used only for fields a configured breaker omits.
const (
	DefaultFailureThreshold = 5
	DefaultWindowMS         = 60_000
	DefaultCooldownMS       = 30_000
)

// Strategy modes.
const (
	ModeSingle      = "single"
	ModeFallback    = "fallback"
	ModeLoadbalance = "loadbalance"
	ModeConditional = "conditional"
)

var modes = []string{ModeSingle, ModeFallback, ModeLoadbalance, ModeConditional}

// providerFieldNames are the snake_case provider settings a target may
// carry (API.md §3 "Provider specifics").
var providerFieldNames = []string{
	"aws_access_key_id", "aws_secret_access_key", "aws_session_token", "aws_region",
	"vertex_project_id", "vertex_region", "vertex_service_account_json",
	"azure_resource_name", "azure_deployment_id", "azure_api_version",
	"azure_entra_client_id", "azure_entra_client_secret", "azure_entra_tenant_id", "azure_authority_host",
	"anthropic_version", "anthropic_beta",
}

// Validation error codes (API.md §2: codes starting AB01).
const (
	CodeInvalidConfig   = "AB01_INVALID_CONFIG"
	CodeInvalidType     = "AB01_INVALID_TYPE"
	CodeUnknownField    = "AB01_UNKNOWN_FIELD"
	CodeDuplicateField  = "AB01_DUPLICATE_FIELD"
	CodeMissingField    = "AB01_MISSING_FIELD"
	CodeInvalidValue    = "AB01_INVALID_VALUE"
	CodeUnknownProvider = "AB01_UNKNOWN_PROVIDER"
	CodeUnknownTarget   = "AB01_UNKNOWN_TARGET"
	CodeConfigNotFound  = "AB01_CONFIG_NOT_FOUND"
)

// Problem is one validation failure of a config.
type Problem struct {
	Param   string `json:"param"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// StoredProviderPrefix starts a provider value that names a stored
// provider of the workspace ("@openai-prod", API.md §6 "Integrations,
// providers") instead of an adapter.
const StoredProviderPrefix = "@"

// storedProviderSlug is the form of a provider slug after the "@": the
// control plane's slug rule (at most 255 characters).
var storedProviderSlug = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,254}$`)

// IsStoredProvider reports whether a provider value names a stored
// provider.
func IsStoredProvider(provider string) bool { return strings.HasPrefix(provider, StoredProviderPrefix) }

// ValidStoredProvider reports whether "@slug" is a well-formed reference.
func ValidStoredProvider(provider string) bool {
	slug, ok := strings.CutPrefix(provider, StoredProviderPrefix)
	return ok && storedProviderSlug.MatchString(slug)
}

// ParseOptions tune validation.
type ParseOptions struct {
	// KnownProvider reports whether a provider slug is served; nil accepts
	// any.
	KnownProvider func(slug string) bool
	// Root is the path of the config's top level in messages; default
	// "config".
	Root string
}

// Parse decodes and validates a config object strictly, accepting any
// provider slug.
func Parse(data []byte) (*Config, error) { return ParseWith(data, ParseOptions{}) }

// ParseWith decodes and validates a config object strictly: unknown fields,
// wrong types and out-of-range values at every level are reported together
// in one 400 whose code and param are those of the first problem (in the
// order of the JSON text), whose message lists them all, and whose body
// carries them as an "errors" array.
func ParseWith(data []byte, opt ParseOptions) (*Config, error) {
	root := opt.Root
	if root == "" {
		root = "config"
	}
	d := &decoder{known: opt.KnownProvider}
	data = bytes.TrimSpace(data)
	var c *Config
	switch {
	case len(data) == 0:
		d.add(root, CodeInvalidConfig, "%s: must be a JSON object, got nothing", root)
	case !json.Valid(data):
		d.add(root, CodeInvalidConfig, "%s: malformed JSON", root)
	case data[0] != '{':
		d.add(root, CodeInvalidType, "%s: must be a JSON object, got %s", root, kindOf(data))
	default:
		c = d.level(data, root)
	}
	if len(d.problems) > 0 {
		return nil, ProblemsError(d.problems)
	}
	return c, nil
}

// ProblemsError is the AB01 answer for ps (at least one).
func ProblemsError(ps []Problem) *httpx.Error {
	msg := ps[0].Message
	if len(ps) > 1 {
		parts := make([]string, len(ps))
		for i, p := range ps {
			parts[i] = p.Message
		}
		msg = fmt.Sprintf("invalid config: %d problems: %s", len(ps), strings.Join(parts, "; "))
	}
	return &httpx.Error{
		Status: 400, Type: httpx.TypeInvalidRequest, Code: ps[0].Code, Param: ps[0].Param, Message: msg,
		Extra: map[string]any{"errors": ps},
	}
}

type decoder struct {
	problems []Problem
	known    func(string) bool
}

func (d *decoder) add(path, code, format string, args ...any) {
	d.problems = append(d.problems, Problem{Param: path, Code: code, Message: fmt.Sprintf(format, args...)})
}

// member is one key of a JSON object, in the order written.
type member struct {
	key string
	val json.RawMessage
}

// members splits a JSON object into its members in order. data must be
// valid JSON; ok is false when it is not an object.
func members(data []byte) ([]member, bool) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	var out []member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		out = append(out, member{key, raw})
	}
	if _, err := dec.Token(); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return out, true
}

// elements splits a JSON array into its elements; ok is false when data is
// not an array.
func elements(data []byte) ([]json.RawMessage, bool) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '[' {
		return nil, false
	}
	var out []json.RawMessage
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, false
	}
	return out, true
}

// kindOf names the JSON type of a valid value for messages.
func kindOf(v []byte) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func isNull(v []byte) bool { return string(bytes.TrimSpace(v)) == "null" }

func (d *decoder) str(path string, v []byte) (string, bool) {
	var s string
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
		d.add(path, CodeInvalidType, "%s: must be a string, got %s", path, kindOf(v))
		return "", false
	}
	return s, true
}

func (d *decoder) boolean(path string, v []byte) (bool, bool) {
	switch string(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	d.add(path, CodeInvalidType, "%s: must be a boolean, got %s", path, kindOf(v))
	return false, false
}

func (d *decoder) number(path string, v []byte) (float64, bool) {
	if kindOf(v) != "a number" {
		d.add(path, CodeInvalidType, "%s: must be a number, got %s", path, kindOf(v))
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		d.add(path, CodeInvalidValue, "%s: number out of range", path)
		return 0, false
	}
	return f, true
}

func (d *decoder) integer(path string, v []byte) (int64, bool) {
	if kindOf(v) != "a number" {
		d.add(path, CodeInvalidType, "%s: must be an integer, got %s", path, kindOf(v))
		return 0, false
	}
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil || f != float64(int64(f)) {
		d.add(path, CodeInvalidType, "%s: must be an integer, got %s", path, v)
		return 0, false
	}
	return int64(f), true
}

// intIn decodes an integer within [lo, hi].
func (d *decoder) intIn(path string, v []byte, lo, hi int64) (int64, bool) {
	n, ok := d.integer(path, v)
	if !ok {
		return 0, false
	}
	if n < lo || n > hi {
		d.add(path, CodeInvalidValue, "%s: must be between %d and %d, got %d", path, lo, hi, n)
		return 0, false
	}
	return n, true
}

// positive decodes an integer > 0 (milliseconds, seconds).
func (d *decoder) positive(path string, v []byte) (*int64, bool) {
	n, ok := d.integer(path, v)
	if !ok {
		return nil, false
	}
	if n <= 0 {
		d.add(path, CodeInvalidValue, "%s: must be a positive integer, got %d", path, n)
		return nil, false
	}
	return &n, true
}

// statusCodes decodes an array of HTTP statuses (100..599).
func (d *decoder) statusCodes(path string, v []byte) []int {
	els, ok := elements(v)
	if !ok {
		d.add(path, CodeInvalidType, "%s: must be an array of HTTP status codes, got %s", path, kindOf(v))
		return nil
	}
	out := make([]int, 0, len(els))
	for i, e := range els {
		if n, ok := d.intIn(fmt.Sprintf("%s[%d]", path, i), e, 100, 599); ok {
			out = append(out, int(n))
		}
	}
	return out
}

func (d *decoder) strings(path string, v []byte) []string {
	els, ok := elements(v)
	if !ok {
		d.add(path, CodeInvalidType, "%s: must be an array of strings, got %s", path, kindOf(v))
		return nil
	}
	out := make([]string, 0, len(els))
	for i, e := range els {
		if s, ok := d.str(fmt.Sprintf("%s[%d]", path, i), e); ok {
			out = append(out, s)
		}
	}
	return out
}

// object decodes a JSON object's members, reporting duplicates; ok is false
// (and a problem added) when v is not an object.
func (d *decoder) object(path string, v []byte) ([]member, bool) {
	ms, ok := members(v)
	if !ok {
		d.add(path, CodeInvalidType, "%s: must be an object, got %s", path, kindOf(v))
		return nil, false
	}
	seen := make(map[string]bool, len(ms))
	out := ms[:0:0]
	for _, m := range ms {
		if seen[m.key] {
			d.add(path+"."+m.key, CodeDuplicateField, "%s.%s: appears more than once", path, m.key)
			continue
		}
		seen[m.key] = true
		out = append(out, m)
	}
	return out, true
}

// level decodes one config level at path. It returns nil when the value is
// not an object.
func (d *decoder) level(data []byte, path string) *Config {
	ms, ok := d.object(path, data)
	if !ok {
		return nil
	}
	c := new(Config)
	targetsGiven, targetsOK := false, true
	for _, m := range ms {
		p := path + "." + m.key
		if isNull(m.val) {
			continue // null is absent
		}
		switch m.key {
		case "strategy":
			c.Strategy = d.strategy(p, m.val)
		case "targets":
			targetsGiven = true
			els, ok := elements(m.val)
			if !ok {
				d.add(p, CodeInvalidType, "%s: must be an array of configs, got %s", p, kindOf(m.val))
				targetsOK = false
				continue
			}
			for i, e := range els {
				child := d.level(e, fmt.Sprintf("%s[%d]", p, i))
				if child == nil {
					targetsOK = false
					child = new(Config)
				}
				c.Targets = append(c.Targets, child)
			}
		case "name":
			c.Name, _ = d.str(p, m.val)
		case "provider":
			if s, ok := d.str(p, m.val); ok {
				c.Provider = s
				switch {
				case s == "":
					d.add(p, CodeInvalidValue, "%s: must not be empty", p)
				case IsStoredProvider(s):
					// A stored provider is looked up when the target is
					// used (it may be created after the config is saved);
					// here only its form is checked.
					if !ValidStoredProvider(s) {
						d.add(p, CodeInvalidValue, "%s: %q is not a provider reference: @ then lowercase letters, digits and dashes, at most 255", p, s)
					}
				case d.known != nil && !d.known(s):
					d.add(p, CodeUnknownProvider, "%s: unknown provider %q", p, s)
				}
			}
		case "api_key":
			c.APIKey, _ = d.str(p, m.val)
		case "virtual_key":
			c.VirtualKey, _ = d.str(p, m.val)
		case "custom_host":
			if s, ok := d.str(p, m.val); ok {
				if err := ValidateCustomHost(s); err != nil {
					d.add(p, CodeInvalidValue, "%s: %v", p, err)
				} else {
					c.CustomHost = s
				}
			}
		case "weight":
			if f, ok := d.number(p, m.val); ok {
				if f < 0 {
					d.add(p, CodeInvalidValue, "%s: must be ≥ 0, got %v", p, f)
				} else {
					c.Weight = &f
				}
			}
		case "override_params":
			if om, ok := d.object(p, m.val); ok {
				c.OverrideParams = make(map[string]json.RawMessage, len(om))
				for _, o := range om {
					c.OverrideParams[o.key] = o.val
				}
			}
		case "retry":
			c.Retry = d.retry(p, m.val)
		case "cache":
			c.Cache = d.cache(p, m.val)
		case "request_timeout":
			c.RequestTimeout, _ = d.positive(p, m.val)
		case "first_token_timeout":
			c.FirstTokenTimeout, _ = d.positive(p, m.val)
		case "circuit_breaker":
			c.CircuitBreaker = d.breaker(p, m.val)
		case "forward_headers":
			c.ForwardHeaders = d.strings(p, m.val)
		case "strict_openai_compliance":
			if b, ok := d.boolean(p, m.val); ok {
				c.StrictOpenAI = &b
			}
		case "input_guardrails", "output_guardrails":
			if d.guardrails(p, m.val) {
				if m.key == "input_guardrails" {
					c.InputGuards = m.val
				} else {
					c.OutputGuards = m.val
				}
			}
		case "before_request_hooks", "after_request_hooks":
			if d.hooks(p, m.val) {
				if m.key == "before_request_hooks" {
					c.BeforeHooks = m.val
				} else {
					c.AfterHooks = m.val
				}
			}
		default:
			if !slices.Contains(providerFieldNames, m.key) {
				d.add(p, CodeUnknownField, "%s: unknown config field", p)
				continue
			}
			if s, ok := d.str(p, m.val); ok {
				if c.ProviderFields == nil {
					c.ProviderFields = make(map[string]string)
				}
				c.ProviderFields[m.key] = s
			}
		}
	}
	d.checkLevel(c, path, targetsGiven, targetsOK)
	return c
}

// checkLevel validates what spans a level's fields: the strategy against
// its targets, leaves, names.
func (d *decoder) checkLevel(c *Config, path string, targetsGiven, targetsOK bool) {
	mode := ModeSingle
	if c.Strategy != nil && slices.Contains(modes, c.Strategy.Mode) {
		mode = c.Strategy.Mode
	}
	s := c.Strategy
	if s != nil {
		if mode != ModeConditional && len(s.Conditions) > 0 {
			d.add(path+".strategy.conditions", CodeInvalidValue, "%s.strategy.conditions: applies only to mode conditional", path)
		}
		if mode != ModeConditional && s.Default != "" {
			d.add(path+".strategy.default", CodeInvalidValue, "%s.strategy.default: applies only to mode conditional", path)
		}
		if mode != ModeFallback && s.OnStatusCodes != nil {
			d.add(path+".strategy.on_status_codes", CodeInvalidValue, "%s.strategy.on_status_codes: applies only to mode fallback", path)
		}
	}
	if targetsGiven && !targetsOK {
		return // the targets' own problems are reported; the rest would only echo them
	}
	n := len(c.Targets)
	if n == 0 {
		if mode != ModeSingle {
			d.add(path+".targets", CodeMissingField, "%s.targets: strategy %s needs at least one target", path, mode)
			return
		}
		if c.Provider == "" && c.VirtualKey == "" {
			d.add(path+".provider", CodeMissingField, "%s: a target needs provider (with api_key) or virtual_key", path)
		}
		return
	}
	switch mode {
	case ModeSingle:
		if n > 1 {
			if s == nil {
				d.add(path+".strategy", CodeMissingField, "%s.strategy: is required when a config has more than one target", path)
			} else {
				d.add(path+".targets", CodeInvalidValue, "%s.targets: strategy single takes exactly one target, got %d; use fallback, loadbalance or conditional", path, n)
			}
		}
	case ModeLoadbalance:
		if !slices.ContainsFunc(c.Targets, func(t *Config) bool { return t.Weight == nil || *t.Weight > 0 }) {
			d.add(path+".targets", CodeInvalidValue, "%s.targets: loadbalance needs at least one target with weight > 0", path)
		}
	case ModeConditional:
		names := make(map[string]bool, n)
		for i, t := range c.Targets {
			if t.Name == "" {
				continue
			}
			if names[t.Name] {
				d.add(fmt.Sprintf("%s.targets[%d].name", path, i), CodeInvalidValue, "%s.targets[%d].name: %q names another target too", path, i, t.Name)
			}
			names[t.Name] = true
		}
		if len(s.Conditions) == 0 && s.Default == "" {
			d.add(path+".strategy.conditions", CodeMissingField, "%s.strategy.conditions: strategy conditional needs conditions or a default", path)
		}
		for i, cond := range s.Conditions {
			if cond.Then != "" && !names[cond.Then] {
				d.add(fmt.Sprintf("%s.strategy.conditions[%d].then", path, i), CodeUnknownTarget,
					"%s.strategy.conditions[%d].then: no target is named %q", path, i, cond.Then)
			}
		}
		if s.Default != "" && !names[s.Default] {
			d.add(path+".strategy.default", CodeUnknownTarget, "%s.strategy.default: no target is named %q", path, s.Default)
		}
	}
}

func (d *decoder) strategy(path string, v []byte) *Strategy {
	ms, ok := d.object(path, v)
	if !ok {
		return nil
	}
	s := new(Strategy)
	hasMode := false
	for _, m := range ms {
		p := path + "." + m.key
		if isNull(m.val) {
			continue
		}
		switch m.key {
		case "mode":
			hasMode = true
			if mode, ok := d.str(p, m.val); ok {
				if !slices.Contains(modes, mode) {
					d.add(p, CodeInvalidValue, "%s: must be one of %s, got %q", p, strings.Join(modes, ", "), mode)
				}
				s.Mode = mode
			}
		case "on_status_codes":
			s.OnStatusCodes = d.statusCodes(p, m.val)
		case "conditions":
			els, ok := elements(m.val)
			if !ok {
				d.add(p, CodeInvalidType, "%s: must be an array of {query, then}, got %s", p, kindOf(m.val))
				continue
			}
			for i, e := range els {
				s.Conditions = append(s.Conditions, d.condition(fmt.Sprintf("%s[%d]", p, i), e))
			}
		case "default":
			s.Default, _ = d.str(p, m.val)
		default:
			d.add(p, CodeUnknownField, "%s: unknown strategy field", p)
		}
	}
	if !hasMode {
		d.add(path+".mode", CodeMissingField, "%s.mode: is required", path)
	}
	return s
}

func (d *decoder) condition(path string, v []byte) Condition {
	var c Condition
	ms, ok := d.object(path, v)
	if !ok {
		return c
	}
	hasQuery, hasThen := false, false
	for _, m := range ms {
		p := path + "." + m.key
		switch m.key {
		case "query":
			hasQuery = true
			c.Query = d.query(p, m.val)
		case "then":
			hasThen = true
			if s, ok := d.str(p, m.val); ok {
				if s == "" {
					d.add(p, CodeInvalidValue, "%s: must name a target", p)
				}
				c.Then = s
			}
		default:
			d.add(p, CodeUnknownField, "%s: unknown condition field; a condition has query and then", p)
		}
	}
	if !hasQuery {
		d.add(path+".query", CodeMissingField, "%s.query: is required", path)
	}
	if !hasThen {
		d.add(path+".then", CodeMissingField, "%s.then: is required", path)
	}
	return c
}

func (d *decoder) retry(path string, v []byte) *Retry {
	ms, ok := d.object(path, v)
	if !ok {
		return nil
	}
	r := new(Retry)
	for _, m := range ms {
		p := path + "." + m.key
		if isNull(m.val) {
			continue
		}
		switch m.key {
		case "attempts":
			n, _ := d.intIn(p, m.val, 0, 5)
			r.Attempts = int(n)
		case "on_status_codes":
			r.OnStatusCodes = d.statusCodes(p, m.val)
		case "use_retry_after_header":
			r.UseRetryAfterHeader, _ = d.boolean(p, m.val)
		default:
			d.add(p, CodeUnknownField, "%s: unknown retry field", p)
		}
	}
	return r
}

func (d *decoder) cache(path string, v []byte) *Cache {
	ms, ok := d.object(path, v)
	if !ok {
		return nil
	}
	c := new(Cache)
	hasMode := false
	for _, m := range ms {
		p := path + "." + m.key
		if isNull(m.val) {
			continue
		}
		switch m.key {
		case "mode":
			hasMode = true
			if s, ok := d.str(p, m.val); ok {
				if s != "simple" && s != "semantic" {
					d.add(p, CodeInvalidValue, "%s: must be simple or semantic, got %q", p, s)
				}
				c.Mode = s
			}
		case "max_age":
			c.MaxAge, _ = d.positive(p, m.val)
		default:
			d.add(p, CodeUnknownField, "%s: unknown cache field", p)
		}
	}
	if !hasMode {
		d.add(path+".mode", CodeMissingField, "%s.mode: is required (simple or semantic)", path)
	}
	return c
}

func (d *decoder) breaker(path string, v []byte) *CircuitBreaker {
	ms, ok := d.object(path, v)
	if !ok {
		return nil
	}
	b := &CircuitBreaker{FailureThreshold: DefaultFailureThreshold, WindowMS: DefaultWindowMS, CooldownMS: DefaultCooldownMS}
	for _, m := range ms {
		p := path + "." + m.key
		if isNull(m.val) {
			continue
		}
		switch m.key {
		case "failure_threshold":
			if n, ok := d.intIn(p, m.val, 1, 10_000); ok {
				b.FailureThreshold = int(n)
			}
		case "window_ms":
			if n, ok := d.positive(p, m.val); ok {
				b.WindowMS = *n
			}
		case "cooldown_ms":
			if n, ok := d.positive(p, m.val); ok {
				b.CooldownMS = *n
			}
		default:
			d.add(p, CodeUnknownField, "%s: unknown circuit_breaker field", p)
		}
	}
	return b
}

// guardrails checks an array of guardrail slugs or inline objects (§5).
func (d *decoder) guardrails(path string, v []byte) bool {
	els, ok := elements(v)
	if !ok {
		d.add(path, CodeInvalidType, "%s: must be an array of guardrail slugs or objects, got %s", path, kindOf(v))
		return false
	}
	good := true
	for i, e := range els {
		if k := kindOf(e); k != "a string" && k != "an object" {
			d.add(fmt.Sprintf("%s[%d]", path, i), CodeInvalidType, "%s[%d]: must be a guardrail slug or object, got %s", path, i, k)
			good = false
		}
	}
	return good
}

// hooks checks an array of hook objects.
func (d *decoder) hooks(path string, v []byte) bool {
	els, ok := elements(v)
	if !ok {
		d.add(path, CodeInvalidType, "%s: must be an array of hook objects, got %s", path, kindOf(v))
		return false
	}
	good := true
	for i, e := range els {
		if k := kindOf(e); k != "an object" {
			d.add(fmt.Sprintf("%s[%d]", path, i), CodeInvalidType, "%s[%d]: must be a hook object, got %s", path, i, k)
			good = false
		}
	}
	return good
}

// ValidateCustomHost checks a custom host is an absolute http(s) URL.
func ValidateCustomHost(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("must be an absolute http or https URL, got %q", s)
	}
	return nil
}
