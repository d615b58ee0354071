package routing

import (
	"fmt"
	"testing"
)

func compileQuery(t *testing.T, q string) *Query {
	t.Helper()
	d := &decoder{}
	c := d.query("q", []byte(q))
	if len(d.problems) > 0 {
		t.Fatalf("query %s: %v", q, d.problems)
	}
	return c
}

func TestQueryOperators(t *testing.T) {
	f := &Facts{
		Metadata: map[string]string{"plan": "paid", "tier": "3", "region": "eu-west-1"},
		Params:   []byte(`{"model":"gpt-4o","temperature":0.7,"max_tokens":500,"stream":true,"user":{"team":"ml"},"messages":[{"role":"system"}]}`),
		Path:     "/v1/chat/completions",
	}
	for _, tc := range []struct {
		q    string
		want bool
	}{
		{`{"metadata.plan":"paid"}`, true},
		{`{"metadata.plan":"free"}`, false},
		{`{"metadata.plan":{"$eq":"paid"}}`, true},
		{`{"metadata.plan":{"$ne":"paid"}}`, false},
		{`{"metadata.missing":{"$ne":"x"}}`, true},
		{`{"metadata.missing":{"$eq":"x"}}`, false},
		{`{"metadata.tier":{"$gt":2}}`, true},
		{`{"metadata.tier":{"$gte":3}}`, true},
		{`{"metadata.tier":{"$lt":3}}`, false},
		{`{"metadata.tier":{"$lte":3}}`, true},
		{`{"metadata.tier":3}`, true},
		{`{"metadata.plan":{"$gt":"free"}}`, true}, // strings order lexically
		{`{"metadata.plan":{"$gt":5}}`, false},     // not comparable
		{`{"metadata.plan":{"$in":["free","paid"]}}`, true},
		{`{"metadata.plan":{"$nin":["free","paid"]}}`, false},
		{`{"metadata.missing":{"$nin":["x"]}}`, true},
		{`{"metadata.missing":{"$in":["x"]}}`, false},
		{`{"metadata.region":{"$regex":"^eu-"}}`, true},
		{`{"metadata.region":{"$regex":"^us-"}}`, false},
		{`{"params.model":"gpt-4o"}`, true},
		{`{"params.model":{"$regex":"^gpt-4"}}`, true},
		{`{"params.temperature":{"$lt":1}}`, true},
		{`{"params.max_tokens":{"$gte":500,"$lt":1000}}`, true},
		{`{"params.max_tokens":{"$gte":500,"$lt":600,"$ne":500}}`, false},
		{`{"params.stream":true}`, true},
		{`{"params.stream":{"$eq":false}}`, false},
		{`{"params.user.team":"ml"}`, true},
		{`{"params.messages.0.role":"system"}`, true},
		{`{"params.absent":null}`, false},
		{`{"url.pathname":"/v1/chat/completions"}`, true},
		{`{"url.pathname":{"$regex":"embeddings$"}}`, false},
		// Several keys: all must match.
		{`{"metadata.plan":"paid","params.model":"gpt-4o"}`, true},
		{`{"metadata.plan":"paid","params.model":"other"}`, false},
		{`{"$or":[{"metadata.plan":"free"},{"params.model":"gpt-4o"}]}`, true},
		{`{"$or":[{"metadata.plan":"free"},{"params.model":"x"}]}`, false},
		{`{"$and":[{"metadata.plan":"paid"},{"$or":[{"metadata.tier":{"$gt":5}},{"metadata.region":{"$regex":"eu"}}]}]}`, true},
		{`{"$and":[{"metadata.plan":"paid"},{"metadata.tier":{"$gt":5}}]}`, false},
	} {
		if got := compileQuery(t, tc.q).Match(f); got != tc.want {
			t.Errorf("%s = %v, want %v", tc.q, got, tc.want)
		}
	}
}

func TestConditionalRouting(t *testing.T) {
	p := mustPlan(t, `{"strategy":{"mode":"conditional","conditions":[
			{"query":{"metadata.plan":"paid"},"then":"big"},
			{"query":{"params.model":{"$in":["small-1","small-2"]}},"then":"small"}
		],"default":"small"},
		"targets":[{"name":"small","provider":"a"},{"name":"big","provider":"b"}]}`)
	for _, tc := range []struct {
		md    map[string]string
		body  string
		want  string
		match bool
	}{
		{map[string]string{"plan": "paid"}, `{"model":"x"}`, "config.targets[1]", true},
		{nil, `{"model":"small-2"}`, "config.targets[0]", true},
		{nil, `{"model":"x"}`, "config.targets[0]", true}, // default
	} {
		got := runOnce(t, p, Facts{Metadata: tc.md, Params: []byte(tc.body)})
		if got != tc.want {
			t.Errorf("%v %s: routed to %s, want %s", tc.md, tc.body, got, tc.want)
		}
	}
	// Without a default, no match is a 400.
	p = mustPlan(t, `{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.plan":"paid"},"then":"big"}]},
		"targets":[{"name":"big","provider":"b"}]}`)
	out := (&Runner{}).Run(t.Context(), p, RunOptions{}, func(ctx_ contextT, a Attempt) Outcome {
		t.Fatal("called a target")
		return Outcome{}
	})
	if out.Status != 400 || out.Failure != FailedStatus || fmt.Sprint(out.Err) == "" {
		t.Errorf("no match: %+v", out)
	}
}

// runOnce runs p with a target that always succeeds and returns its path.
func runOnce(t *testing.T, p *Plan, f Facts) string {
	t.Helper()
	var path string
	(&Runner{}).Run(t.Context(), p, RunOptions{Facts: f}, func(_ contextT, a Attempt) Outcome {
		path = a.Target.Path
		return Outcome{Status: 200}
	})
	return path
}
