package routing

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ai-gateway/gateway/internal/httpx"
)

func mustPlan(t *testing.T, cfg string) *Plan {
	t.Helper()
	p, err := Compile([]byte(cfg), "test", ParseOptions{})
	if err != nil {
		t.Fatalf("Compile(%s): %v", cfg, err)
	}
	return p
}

func TestParseAndInheritance(t *testing.T) {
	p := mustPlan(t, `{"override_params":{"temperature":0.1,"model":"a"},"custom_host":"http://h/v1","forward_headers":["x-a"],
		"targets":[{"provider":"azure-openai","api_key":"k","azure_resource_name":"res","override_params":{"model":"b"}}]}`)
	leaf := p.Targets()[0]
	if leaf.Path != "config.targets[0]" || leaf.Provider != "azure-openai" || leaf.APIKey != "k" || leaf.CustomHost != "http://h/v1" ||
		leaf.Options["azure_resource_name"] != "res" || string(leaf.Overrides["model"]) != `"b"` || string(leaf.Overrides["temperature"]) != "0.1" ||
		len(leaf.ForwardHeaders) != 1 {
		t.Errorf("leaf = %+v", leaf)
	}
	// Credentials are never inherited.
	p = mustPlan(t, `{"api_key":"parent","targets":[{"provider":"openai"}]}`)
	if leaf := p.Targets()[0]; leaf.APIKey != "" {
		t.Errorf("credential inherited: %q", leaf.APIKey)
	}
}

// TestInheritanceRules: a child inherits override_params (merged, child
// wins), retry, cache, request_timeout, custom_host, forward_headers,
// guardrails and hooks it lacks, at any depth; never credentials or
// provider settings.
func TestInheritanceRules(t *testing.T) {
	p := mustPlan(t, `{
		"strategy":{"mode":"fallback"},
		"override_params":{"model":"top","temperature":0.5},
		"retry":{"attempts":2,"use_retry_after_header":true},
		"cache":{"mode":"simple","max_age":60},
		"request_timeout":1000,
		"first_token_timeout":300,
		"custom_host":"http://parent/v1",
		"forward_headers":["x-parent"],
		"strict_openai_compliance":false,
		"circuit_breaker":{"failure_threshold":3},
		"input_guardrails":["pg-in"],
		"output_guardrails":[{"id":"x"}],
		"before_request_hooks":[{"id":"b"}],
		"after_request_hooks":[{"id":"a"}],
		"virtual_key":"vk-parent",
		"aws_region":"eu-west-1",
		"targets":[
			{"strategy":{"mode":"loadbalance"},"override_params":{"model":"mid"},"request_timeout":500,"targets":[
				{"provider":"openai","api_key":"sk-1","override_params":{"temperature":1}},
				{"provider":"openai","retry":{"attempts":0},"custom_host":"http://own/v1","forward_headers":[],"cache":{"mode":"semantic"}}
			]},
			{"provider":"anthropic"}
		]}`)
	ts := p.Targets()
	if len(ts) != 3 {
		t.Fatalf("%d targets", len(ts))
	}
	a, b, c := ts[0], ts[1], ts[2]
	if a.Path != "config.targets[0].targets[0]" || b.Path != "config.targets[0].targets[1]" || c.Path != "config.targets[1]" {
		t.Errorf("paths %s %s %s", a.Path, b.Path, c.Path)
	}
	if string(a.Overrides["model"]) != `"mid"` || string(a.Overrides["temperature"]) != "1" {
		t.Errorf("a overrides %s %s", a.Overrides["model"], a.Overrides["temperature"])
	}
	if string(c.Overrides["model"]) != `"top"` || string(c.Overrides["temperature"]) != "0.5" {
		t.Errorf("c overrides %v", c.Overrides)
	}
	if a.Retry.Attempts != 2 || !a.Retry.UseRetryAfterHeader || len(a.Retry.OnStatusCodes) != 5 {
		t.Errorf("a retry %+v", a.Retry)
	}
	if b.Retry.Attempts != 0 || b.Retry.UseRetryAfterHeader {
		t.Errorf("b retry %+v: its own retry must win whole", b.Retry)
	}
	if a.RequestTimeout != 500*time.Millisecond || c.RequestTimeout != time.Second || a.FirstTokenTimeout != 300*time.Millisecond {
		t.Errorf("timeouts %v %v %v", a.RequestTimeout, c.RequestTimeout, a.FirstTokenTimeout)
	}
	if a.CustomHost != "http://parent/v1" || b.CustomHost != "http://own/v1" {
		t.Errorf("custom hosts %q %q", a.CustomHost, b.CustomHost)
	}
	if len(a.ForwardHeaders) != 1 || len(b.ForwardHeaders) != 0 {
		t.Errorf("forward headers %v %v", a.ForwardHeaders, b.ForwardHeaders)
	}
	if a.Cache == nil || a.Cache.Mode != "simple" || *a.Cache.MaxAge != 60 || b.Cache.Mode != "semantic" {
		t.Errorf("cache %+v %+v", a.Cache, b.Cache)
	}
	if a.StrictOpenAI == nil || *a.StrictOpenAI || a.Breaker == nil || a.Breaker.FailureThreshold != 3 || a.Breaker.CooldownMS != DefaultCooldownMS {
		t.Errorf("strict %v breaker %+v", a.StrictOpenAI, a.Breaker)
	}
	for _, x := range []*Target{a, b, c} {
		if string(x.InputGuardrails) != `["pg-in"]` || x.OutputGuardrails == nil || x.BeforeHooks == nil || x.AfterHooks == nil {
			t.Errorf("%s guardrails/hooks not inherited", x.Path)
		}
		if x.VirtualKey != "" || x.Options["aws_region"] != "" {
			t.Errorf("%s inherited credentials or provider settings: %q %v", x.Path, x.VirtualKey, x.Options)
		}
	}
	if a.APIKey != "sk-1" || b.APIKey != "" {
		t.Errorf("api keys %q %q", a.APIKey, b.APIKey)
	}
	if a.BreakerKey == b.BreakerKey || !strings.HasPrefix(a.BreakerKey, "test|") {
		t.Errorf("breaker keys %q %q", a.BreakerKey, b.BreakerKey)
	}
}

// TestValidation: every malformed shape answers 400 with an AB01 code and
// param naming the path of the first problem.
func TestValidation(t *testing.T) {
	ok := `{"provider":"openai"}`
	two := `[{"provider":"a","name":"a"},{"provider":"b","name":"b"}]`
	for _, tc := range []struct{ cfg, param, code string }{
		// Shapes of the whole config.
		{`"slug"`, "config", CodeInvalidType},
		{`[1]`, "config", CodeInvalidType},
		{`{`, "config", CodeInvalidConfig},
		{``, "config", CodeInvalidConfig},
		{`{}`, "config.provider", CodeMissingField},
		{`{"provider":"openai","nope":1}`, "config.nope", CodeUnknownField},
		{`{"provider":"openai","provider":"x"}`, "config.provider", CodeDuplicateField},
		// Types and ranges of a level.
		{`{"targets":[{"provider":"openai"},{"provider":"x","weight":"heavy"}]}`, "config.targets[1].weight", CodeInvalidType},
		{`{"strategy":{"mode":"loadbalance"},"targets":[{"provider":"a","weight":-1}]}`, "config.targets[0].weight", CodeInvalidValue},
		{`{"targets":{}}`, "config.targets", CodeInvalidType},
		{`{"targets":[5]}`, "config.targets[0]", CodeInvalidType},
		{`{"aws_region":5,"provider":"bedrock"}`, "config.aws_region", CodeInvalidType},
		{`{"provider":5}`, "config.provider", CodeInvalidType},
		{`{"provider":""}`, "config.provider", CodeInvalidValue},
		{`{"provider":"p","api_key":1}`, "config.api_key", CodeInvalidType},
		{`{"provider":"p","custom_host":"nope"}`, "config.custom_host", CodeInvalidValue},
		{`{"provider":"p","request_timeout":0}`, "config.request_timeout", CodeInvalidValue},
		{`{"provider":"p","request_timeout":1.5}`, "config.request_timeout", CodeInvalidType},
		{`{"provider":"p","request_timeout":"1000"}`, "config.request_timeout", CodeInvalidType},
		{`{"provider":"p","first_token_timeout":-5}`, "config.first_token_timeout", CodeInvalidValue},
		{`{"provider":"p","override_params":[1]}`, "config.override_params", CodeInvalidType},
		{`{"provider":"p","forward_headers":"x-a"}`, "config.forward_headers", CodeInvalidType},
		{`{"provider":"p","forward_headers":["x",1]}`, "config.forward_headers[1]", CodeInvalidType},
		{`{"provider":"p","strict_openai_compliance":"no"}`, "config.strict_openai_compliance", CodeInvalidType},
		{`{"provider":"p","input_guardrails":"g"}`, "config.input_guardrails", CodeInvalidType},
		{`{"provider":"p","output_guardrails":[1]}`, "config.output_guardrails[0]", CodeInvalidType},
		{`{"provider":"p","before_request_hooks":["x"]}`, "config.before_request_hooks[0]", CodeInvalidType},
		{`{"provider":"p","name":3}`, "config.name", CodeInvalidType},
		// Strategy.
		{`{"targets":[{"targets":[{"strategy":{"mode":"x"},"provider":"p"}]}]}`, "config.targets[0].targets[0].strategy.mode", CodeInvalidValue},
		{`{"strategy":{},"targets":[{"provider":"p"}]}`, "config.strategy.mode", CodeMissingField},
		{`{"strategy":"fallback","targets":[{"provider":"p"}]}`, "config.strategy", CodeInvalidType},
		{`{"strategy":{"mode":"fallback","x":1},"targets":[{"provider":"p"}]}`, "config.strategy.x", CodeUnknownField},
		{`{"strategy":{"mode":"fallback"}}`, "config.targets", CodeMissingField},
		{`{"strategy":{"mode":"fallback"},"targets":[]}`, "config.targets", CodeMissingField},
		{`{"strategy":{"mode":"fallback","on_status_codes":[429,600]},"targets":[{"provider":"p"}]}`, "config.strategy.on_status_codes[1]", CodeInvalidValue},
		{`{"strategy":{"mode":"fallback","on_status_codes":429},"targets":[{"provider":"p"}]}`, "config.strategy.on_status_codes", CodeInvalidType},
		{`{"strategy":{"mode":"loadbalance","on_status_codes":[500]},"targets":[{"provider":"p"}]}`, "config.strategy.on_status_codes", CodeInvalidValue},
		{`{"strategy":{"mode":"single"},"targets":` + two + `}`, "config.targets", CodeInvalidValue},
		{`{"targets":` + two + `}`, "config.strategy", CodeMissingField},
		{`{"strategy":{"mode":"loadbalance"},"targets":[{"provider":"a","weight":0},{"provider":"b","weight":0}]}`, "config.targets", CodeInvalidValue},
		{`{"strategy":{"mode":"fallback","default":"a"},"targets":` + two + `}`, "config.strategy.default", CodeInvalidValue},
		// Conditional.
		{`{"strategy":{"mode":"conditional"},"targets":` + two + `}`, "config.strategy.conditions", CodeMissingField},
		{`{"strategy":{"mode":"conditional","conditions":{}},"targets":` + two + `}`, "config.strategy.conditions", CodeInvalidType},
		{`{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.a":"x"}}]},"targets":` + two + `}`, "config.strategy.conditions[0].then", CodeMissingField},
		{`{"strategy":{"mode":"conditional","conditions":[{"then":"a"}]},"targets":` + two + `}`, "config.strategy.conditions[0].query", CodeMissingField},
		{`{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.a":"x"},"then":"zz"}]},"targets":` + two + `}`, "config.strategy.conditions[0].then", CodeUnknownTarget},
		{`{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.a":"x"},"then":"a","else":"b"}]},"targets":` + two + `}`, "config.strategy.conditions[0].else", CodeUnknownField},
		{`{"strategy":{"mode":"conditional","default":"zz","conditions":[]},"targets":` + two + `}`, "config.strategy.default", CodeUnknownTarget},
		{`{"strategy":{"mode":"conditional","default":"a"},"targets":[{"provider":"a","name":"a"},{"provider":"b","name":"a"}]}`, "config.targets[1].name", CodeInvalidValue},
		{`{"strategy":{"mode":"conditional","conditions":[{"query":{},"then":"a"}]},"targets":` + two + `}`, "config.strategy.conditions[0].query", CodeInvalidValue},
		{`{"strategy":{"mode":"conditional","conditions":[{"query":{"body.a":"x"},"then":"a"}]},"targets":` + two + `}`, "config.strategy.conditions[0].query.body.a", CodeInvalidValue},
		{`{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.a":{"$like":"x"}},"then":"a"}]},"targets":` + two + `}`, "config.strategy.conditions[0].query.metadata.a.$like", CodeInvalidValue},
		{`{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.a":{"$in":"x"}},"then":"a"}]},"targets":` + two + `}`, "config.strategy.conditions[0].query.metadata.a.$in", CodeInvalidType},
		{`{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.a":{"$regex":"("}},"then":"a"}]},"targets":` + two + `}`, "config.strategy.conditions[0].query.metadata.a.$regex", CodeInvalidValue},
		{`{"strategy":{"mode":"conditional","conditions":[{"query":{"params.n":{"$gt":[1]}},"then":"a"}]},"targets":` + two + `}`, "config.strategy.conditions[0].query.params.n.$gt", CodeInvalidType},
		{`{"strategy":{"mode":"conditional","conditions":[{"query":{"$or":{}},"then":"a"}]},"targets":` + two + `}`, "config.strategy.conditions[0].query.$or", CodeInvalidType},
		{`{"strategy":{"mode":"conditional","conditions":[{"query":{"$not":[]},"then":"a"}]},"targets":` + two + `}`, "config.strategy.conditions[0].query.$not", CodeInvalidValue},
		{`{"strategy":{"mode":"conditional","conditions":[{"query":{"$and":[{"metadata.a":{"$eq":{}}}]},"then":"a"}]},"targets":` + two + `}`, "config.strategy.conditions[0].query.$and[0].metadata.a.$eq", CodeInvalidType},
		{`{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.a":{"$eq":1,"x":2}},"then":"a"}]},"targets":` + two + `}`, "config.strategy.conditions[0].query.metadata.a.x", CodeInvalidValue},
		// Retry, cache, circuit breaker.
		{`{"provider":"p","retry":{"attempts":6}}`, "config.retry.attempts", CodeInvalidValue},
		{`{"provider":"p","retry":{"attempts":-1}}`, "config.retry.attempts", CodeInvalidValue},
		{`{"provider":"p","retry":{"attempts":"3"}}`, "config.retry.attempts", CodeInvalidType},
		{`{"provider":"p","retry":{"on_status_codes":[99]}}`, "config.retry.on_status_codes[0]", CodeInvalidValue},
		{`{"provider":"p","retry":{"use_retry_after_header":1}}`, "config.retry.use_retry_after_header", CodeInvalidType},
		{`{"provider":"p","retry":{"attempts":1,"backoff":2}}`, "config.retry.backoff", CodeUnknownField},
		{`{"provider":"p","retry":3}`, "config.retry", CodeInvalidType},
		{`{"provider":"p","cache":{"mode":"fast"}}`, "config.cache.mode", CodeInvalidValue},
		{`{"provider":"p","cache":{"max_age":10}}`, "config.cache.mode", CodeMissingField},
		{`{"provider":"p","cache":{"mode":"simple","max_age":0}}`, "config.cache.max_age", CodeInvalidValue},
		{`{"provider":"p","cache":{"mode":"simple","ttl":5}}`, "config.cache.ttl", CodeUnknownField},
		{`{"provider":"p","circuit_breaker":{"failure_threshold":0}}`, "config.circuit_breaker.failure_threshold", CodeInvalidValue},
		{`{"provider":"p","circuit_breaker":{"cooldown_ms":0}}`, "config.circuit_breaker.cooldown_ms", CodeInvalidValue},
		{`{"provider":"p","circuit_breaker":{"window":1}}`, "config.circuit_breaker.window", CodeUnknownField},
	} {
		_, err := Parse([]byte(tc.cfg))
		var he *httpx.Error
		if !errors.As(err, &he) || !strings.HasPrefix(he.Code, "AB01") || he.Param != tc.param || he.Status != 400 || he.Code != tc.code {
			t.Errorf("%s:\n\tgot %v (param %q, code %q)\n\twant %s at %s", tc.cfg, err, paramOf(he), codeOf(he), tc.code, tc.param)
		}
	}
	if _, err := Parse([]byte(ok)); err != nil {
		t.Error(err)
	}
	// Nulls are absent fields.
	if _, err := Parse([]byte(`{"provider":"p","retry":null,"weight":null}`)); err != nil {
		t.Error(err)
	}
}

// TestEveryProblemReported: one answer lists every problem, in the order of
// the JSON text, with param and code of the first.
func TestEveryProblemReported(t *testing.T) {
	_, err := Parse([]byte(`{"strategy":{"mode":"fallback","on_status_codes":[42]},"targets":[
		{"provider":"a","weight":-2,"retry":{"attempts":9}},
		{"virtual_key":"v","cache":{"mode":"x"},"bogus":true}],"request_timeout":0}`))
	he := httpx.As(err)
	want := []string{
		"config.strategy.on_status_codes[0]", "config.targets[0].weight", "config.targets[0].retry.attempts",
		"config.targets[1].cache.mode", "config.targets[1].bogus", "config.request_timeout",
	}
	if he.Param != want[0] || he.Code != CodeInvalidValue {
		t.Fatalf("first problem %s %s", he.Param, he.Code)
	}
	ps, _ := he.Extra["errors"].([]Problem)
	var got []string
	for _, p := range ps {
		got = append(got, p.Param)
		if !strings.Contains(he.Message, p.Message) {
			t.Errorf("message lacks %q", p.Message)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("problems\n got %v\nwant %v", got, want)
	}
	body := string(he.Body())
	if !strings.Contains(body, `"errors":[{"param":"config.strategy.on_status_codes[0]"`) {
		t.Errorf("body %s", body)
	}
	var decoded map[string]any
	if json.Unmarshal(he.Body(), &decoded) != nil || len(decoded["errors"].([]any)) != len(want) {
		t.Errorf("body errors: %s", body)
	}
}

func TestUnknownProvider(t *testing.T) {
	_, err := ParseWith([]byte(`{"strategy":{"mode":"fallback"},"targets":[{"provider":"openai"},{"provider":"nope"}]}`),
		ParseOptions{KnownProvider: func(s string) bool { return s == "openai" }})
	if he := httpx.As(err); he.Param != "config.targets[1].provider" || he.Code != CodeUnknownProvider {
		t.Errorf("%v", err)
	}
}

func paramOf(he *httpx.Error) string {
	if he == nil {
		return ""
	}
	return he.Param
}

func codeOf(he *httpx.Error) string {
	if he == nil {
		return ""
	}
	return he.Code
}
