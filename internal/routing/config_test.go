package routing

import (
	"errors"
	"strings"
	"testing"

	"github.com/ai-gateway/gateway/internal/httpx"
)

func TestParseAndSingleTarget(t *testing.T) {
	c, err := Parse([]byte(`{"override_params":{"temperature":0.1,"model":"a"},"custom_host":"http://h/v1","forward_headers":["x-a"],
		"targets":[{"provider":"azure-openai","api_key":"k","azure_resource_name":"res","override_params":{"model":"b"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	leaf, path, err := SingleTarget(c)
	if err != nil {
		t.Fatal(err)
	}
	if path != "config.targets[0]" || leaf.Provider != "azure-openai" || leaf.APIKey != "k" || leaf.CustomHost != "http://h/v1" ||
		leaf.ProviderFields["azure_resource_name"] != "res" || leaf.OverrideParams["model"] != "b" || leaf.OverrideParams["temperature"] != 0.1 ||
		len(leaf.ForwardHeaders) != 1 {
		t.Errorf("leaf = %+v at %s", leaf, path)
	}
	// Credentials are never inherited.
	c, _ = Parse([]byte(`{"api_key":"parent","targets":[{"provider":"openai"}]}`))
	if leaf, _, _ := SingleTarget(c); leaf.APIKey != "" {
		t.Errorf("credential inherited: %q", leaf.APIKey)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ cfg, param string }{
		{`{"provider":"openai","nope":1}`, "config.nope"},
		{`{"targets":[{"provider":"openai"},{"provider":"x","weight":"heavy"}]}`, "config.targets[1].weight"},
		{`{"targets":[{"targets":[{"strategy":{"mode":"x"},"provider":"p"}]}]}`, "config.targets[0].targets[0].strategy.mode"},
		{`{"strategy":{},"targets":[{"provider":"p"}]}`, "config.strategy.mode"},
		{`{"provider":"p","request_timeout":0}`, "config.request_timeout"},
		{`{"targets":{}}`, "config.targets"},
		{`{"aws_region":5,"provider":"bedrock"}`, "config.aws_region"},
		{`{}`, "config.provider"},
		{`"slug"`, "config"},
	} {
		_, err := Parse([]byte(tc.cfg))
		var he *httpx.Error
		if !errors.As(err, &he) || !strings.HasPrefix(he.Code, "AB01") || he.Param != tc.param || he.Status != 400 {
			t.Errorf("%s: %v (param %q), want AB01 at %s", tc.cfg, err, paramOf(he), tc.param)
		}
	}
	c, _ := Parse([]byte(`{"strategy":{"mode":"fallback"},"targets":[{"provider":"a"},{"provider":"b"}]}`))
	if _, _, err := SingleTarget(c); err == nil {
		t.Error("two targets resolved to one")
	}
}

func paramOf(he *httpx.Error) string {
	if he == nil {
		return ""
	}
	return he.Param
}
