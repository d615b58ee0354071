// Package routing owns the config object of API.md §4: its schema, its
// validation (errors coded AB01…, param naming the path), and turning a
// config into the target(s) a request is sent to.
//
// This first version resolves configs with a single leaf target; the
// fallback, loadbalance and conditional strategies arrive with the routing
// engine. routing imports only provider, llm and httpx.
package routing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/ai-gateway/gateway/internal/httpx"
)

// Config is one level of the config object; targets nest.
type Config struct {
	Strategy       *Strategy         `json:"strategy,omitempty"`
	Targets        []*Config         `json:"targets,omitempty"`
	Name           string            `json:"name,omitempty"`
	Provider       string            `json:"provider,omitempty"`
	APIKey         string            `json:"api_key,omitempty"`
	VirtualKey     string            `json:"virtual_key,omitempty"`
	CustomHost     string            `json:"custom_host,omitempty"`
	Weight         *float64          `json:"weight,omitempty"`
	OverrideParams map[string]any    `json:"override_params,omitempty"`
	Retry          json.RawMessage   `json:"retry,omitempty"`
	Cache          json.RawMessage   `json:"cache,omitempty"`
	RequestTimeout *int64            `json:"request_timeout,omitempty"`
	ForwardHeaders []string          `json:"forward_headers,omitempty"`
	StrictOpenAI   *bool             `json:"strict_openai_compliance,omitempty"`
	InputGuards    json.RawMessage   `json:"input_guardrails,omitempty"`
	OutputGuards   json.RawMessage   `json:"output_guardrails,omitempty"`
	BeforeHooks    json.RawMessage   `json:"before_request_hooks,omitempty"`
	AfterHooks     json.RawMessage   `json:"after_request_hooks,omitempty"`
	ProviderFields map[string]string `json:"-"`
}

// Strategy is a config's routing strategy.
type Strategy struct {
	Mode          string          `json:"mode"`
	OnStatusCodes []int           `json:"on_status_codes,omitempty"`
	Conditions    json.RawMessage `json:"conditions,omitempty"`
	Default       string          `json:"default,omitempty"`
}

// providerFieldNames are the snake_case provider settings a target may
// carry (API.md §3 "Provider specifics").
var providerFieldNames = []string{
	"aws_access_key_id", "aws_secret_access_key", "aws_session_token", "aws_region",
	"vertex_project_id", "vertex_region", "vertex_service_account_json",
	"azure_resource_name", "azure_deployment_id", "azure_api_version",
	"anthropic_version", "anthropic_beta",
}

// configError is the AB01 validation error of API.md §2.
func configError(code, param, format string, args ...any) *httpx.Error {
	return httpx.BadRequest(code, param, format, args...)
}

// Parse decodes and validates a config object strictly.
func Parse(data []byte) (*Config, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, configError("AB01_INVALID_CONFIG", "config", "config must be a JSON object")
	}
	c, err := parseLevel(data, "config")
	if err != nil {
		return nil, err
	}
	return c, nil
}

func parseLevel(data []byte, path string) (*Config, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, configError("AB01_INVALID_CONFIG", path, "%s: malformed JSON: %v", path, err)
	}
	c := new(Config)
	for _, name := range providerFieldNames {
		if v, ok := raw[name]; ok {
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, configError("AB01_INVALID_TYPE", path+"."+name, "%s.%s: must be a string", path, name)
			}
			if c.ProviderFields == nil {
				c.ProviderFields = make(map[string]string)
			}
			c.ProviderFields[name] = s
			delete(raw, name)
		}
	}
	var targets []json.RawMessage
	if t, ok := raw["targets"]; ok {
		if err := json.Unmarshal(t, &targets); err != nil {
			return nil, configError("AB01_INVALID_TYPE", path+".targets", "%s.targets: must be an array of configs", path)
		}
		delete(raw, "targets")
	}
	rest, _ := json.Marshal(raw)
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		msg := err.Error()
		if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			f = strings.Trim(f, `"`)
			return nil, configError("AB01_UNKNOWN_FIELD", path+"."+f, "%s.%s: unknown config field", path, f)
		}
		var te *json.UnmarshalTypeError
		if ok := asTypeErr(err, &te); ok {
			return nil, configError("AB01_INVALID_TYPE", path+"."+te.Field, "%s.%s: must be %s", path, te.Field, te.Type)
		}
		return nil, configError("AB01_INVALID_CONFIG", path, "%s: %v", path, err)
	}
	for i, t := range targets {
		child, err := parseLevel(t, fmt.Sprintf("%s.targets[%d]", path, i))
		if err != nil {
			return nil, err
		}
		c.Targets = append(c.Targets, child)
	}
	return c, validate(c, path)
}

func asTypeErr(err error, te **json.UnmarshalTypeError) bool {
	t, ok := err.(*json.UnmarshalTypeError)
	if ok {
		*te = t
	}
	return ok
}

func validate(c *Config, path string) error {
	if c.Strategy != nil {
		switch c.Strategy.Mode {
		case "single", "fallback", "loadbalance", "conditional":
		case "":
			return configError("AB01_MISSING_FIELD", path+".strategy.mode", "%s.strategy.mode: is required", path)
		default:
			return configError("AB01_INVALID_VALUE", path+".strategy.mode", "%s.strategy.mode: must be one of single, fallback, loadbalance, conditional, got %q", path, c.Strategy.Mode)
		}
	}
	if c.Weight != nil && *c.Weight < 0 {
		return configError("AB01_INVALID_VALUE", path+".weight", "%s.weight: must be ≥ 0", path)
	}
	if c.RequestTimeout != nil && *c.RequestTimeout <= 0 {
		return configError("AB01_INVALID_VALUE", path+".request_timeout", "%s.request_timeout: must be a positive number of milliseconds", path)
	}
	if c.CustomHost != "" {
		if err := ValidateCustomHost(c.CustomHost); err != nil {
			return configError("AB01_INVALID_VALUE", path+".custom_host", "%s.custom_host: %v", path, err)
		}
	}
	if len(c.Targets) == 0 && c.Provider == "" && c.VirtualKey == "" {
		return configError("AB01_MISSING_FIELD", path+".provider", "%s: a target needs provider (with api_key) or virtual_key", path)
	}
	return nil
}

// ValidateCustomHost checks a custom host is an absolute http(s) URL.
func ValidateCustomHost(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("must be an absolute http or https URL, got %q", s)
	}
	return nil
}

// SingleTarget returns the one leaf of c with inherited settings applied,
// and its path for x-gateway-last-used-option-index. Until the routing
// engine lands, a config must resolve to exactly one leaf.
func SingleTarget(c *Config) (*Config, string, error) {
	path := "config"
	leaf := c
	overrides := map[string]any{}
	inherit := func(from *Config) {
		for k, v := range from.OverrideParams {
			overrides[k] = v
		}
	}
	for len(leaf.Targets) > 0 {
		if len(leaf.Targets) != 1 {
			mode := "single"
			if leaf.Strategy != nil {
				mode = leaf.Strategy.Mode
			}
			return nil, "", &httpx.Error{Status: http.StatusBadRequest, Type: httpx.TypeInvalidRequest, Code: "AB01_UNSUPPORTED_STRATEGY",
				Param: path + ".targets", Message: fmt.Sprintf("%s: strategy %q with %d targets is not supported by this gateway version; use one target", path, mode, len(leaf.Targets))}
		}
		inherit(leaf)
		parent := leaf
		leaf = leaf.Targets[0]
		path += ".targets[0]"
		// Non-credential settings are inherited when the child lacks them.
		if leaf.CustomHost == "" {
			leaf.CustomHost = parent.CustomHost
		}
		if leaf.ForwardHeaders == nil {
			leaf.ForwardHeaders = parent.ForwardHeaders
		}
		if leaf.RequestTimeout == nil {
			leaf.RequestTimeout = parent.RequestTimeout
		}
	}
	inherit(leaf)
	out := *leaf
	if len(overrides) > 0 {
		out.OverrideParams = overrides
	}
	return &out, path, nil
}
