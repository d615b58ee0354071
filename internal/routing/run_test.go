package routing

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

type contextT = context.Context

// script answers attempts by target name: each name has a queue of
// outcomes; an empty queue succeeds.
type script struct {
	mu    sync.Mutex
	next  map[string][]Outcome
	calls []string // "name#retry"
}

func newScript(next map[string][]Outcome) *script { return &script{next: next} }

func (s *script) try(_ context.Context, a Attempt) Outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	name := a.Target.Name
	if name == "" {
		name = a.Target.Provider
	}
	s.calls = append(s.calls, name+"#"+string(rune('0'+a.Retry)))
	q := s.next[name]
	if len(q) == 0 {
		return Outcome{Status: 200}
	}
	s.next[name] = q[1:]
	return q[0]
}

func (s *script) called() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.calls, " ")
}

func status(code int) Outcome { return Outcome{Status: code, Failure: FailedStatus} }

var (
	connErr = Outcome{Status: 502, Failure: FailedConnection}
	timeout = Outcome{Status: 504, Failure: FailedTimeout}
)

// sleeper records waits without waiting.
type sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeper) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func testRunner(sl *sleeper) *Runner {
	src := rand.New(rand.NewPCG(1, 2))
	var mu sync.Mutex
	return &Runner{
		Sleep: sl.sleep,
		Rand: func() float64 {
			mu.Lock()
			defer mu.Unlock()
			return src.Float64()
		},
	}
}

func TestFallback(t *testing.T) {
	const three = `"targets":[{"provider":"a"},{"provider":"b"},{"provider":"c"}]`
	for _, tc := range []struct {
		name, strategy string
		script         map[string][]Outcome
		calls          string
		status         int
	}{
		{"first succeeds", `{"mode":"fallback"}`, nil, "a#0", 200},
		{"in order until one succeeds", `{"mode":"fallback"}`, map[string][]Outcome{"a": {status(500)}, "b": {status(400)}}, "a#0 b#0 c#0", 200},
		{"all fail: the last answer", `{"mode":"fallback"}`, map[string][]Outcome{"a": {status(500)}, "b": {status(503)}, "c": {status(429)}}, "a#0 b#0 c#0", 429},
		{"on_status_codes stops on others", `{"mode":"fallback","on_status_codes":[429,503]}`, map[string][]Outcome{"a": {status(500)}}, "a#0", 500},
		{"on_status_codes moves on for listed", `{"mode":"fallback","on_status_codes":[429,503]}`, map[string][]Outcome{"a": {status(429)}, "b": {status(503)}}, "a#0 b#0 c#0", 200},
		{"connection errors always move on", `{"mode":"fallback","on_status_codes":[429]}`, map[string][]Outcome{"a": {connErr}}, "a#0 b#0", 200},
		{"timeouts always move on", `{"mode":"fallback","on_status_codes":[429]}`, map[string][]Outcome{"a": {timeout}}, "a#0 b#0", 200},
		{"a committed answer is final", `{"mode":"fallback"}`, map[string][]Outcome{"a": {{Status: 200, Committed: true, Err: errors.New("broke after first byte")}}}, "a#0", 200},
		{"aborted stops everything", `{"mode":"fallback"}`, map[string][]Outcome{"a": {{Status: 499, Failure: Aborted}}}, "a#0", 499},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustPlan(t, `{"strategy":`+tc.strategy+`,`+three+`}`)
			s := newScript(tc.script)
			out := testRunner(&sleeper{}).Run(t.Context(), p, RunOptions{}, s.try)
			if s.called() != tc.calls || out.Status != tc.status {
				t.Errorf("calls %q status %d, want %q %d", s.called(), out.Status, tc.calls, tc.status)
			}
		})
	}
}

// TestLoadbalanceShares: over many requests the observed shares follow the
// weights within statistical bounds, and weight 0 is never picked.
func TestLoadbalanceShares(t *testing.T) {
	p := mustPlan(t, `{"strategy":{"mode":"loadbalance"},"targets":[
		{"provider":"a","weight":1},{"provider":"b","weight":3},{"provider":"zero","weight":0},{"provider":"c"}]}`)
	r := testRunner(&sleeper{})
	count := map[string]int{}
	const n = 20000
	for range n {
		r.Run(t.Context(), p, RunOptions{}, func(_ context.Context, a Attempt) Outcome {
			count[a.Target.Provider]++
			return Outcome{Status: 200}
		})
	}
	if count["zero"] != 0 {
		t.Errorf("weight 0 picked %d times", count["zero"])
	}
	// Expected shares 1/5, 3/5, 1/5 (c has the default weight 1). Allow
	// five standard deviations of a binomial count.
	for name, share := range map[string]float64{"a": 0.2, "b": 0.6, "c": 0.2} {
		want := share * n
		sd := math.Sqrt(n * share * (1 - share))
		if got := float64(count[name]); math.Abs(got-want) > 5*sd {
			t.Errorf("%s picked %v times, want %v ± %v", name, got, want, 5*sd)
		}
	}
}

func TestLoadbalanceFailureIsFinal(t *testing.T) {
	p := mustPlan(t, `{"strategy":{"mode":"loadbalance"},"targets":[{"provider":"a"},{"provider":"b"}]}`)
	s := newScript(map[string][]Outcome{"a": {status(500)}, "b": {status(500)}})
	out := testRunner(&sleeper{}).Run(t.Context(), p, RunOptions{}, s.try)
	if out.Status != 500 || strings.Count(s.called(), "#") != 1 {
		t.Errorf("loadbalance tried %q, status %d", s.called(), out.Status)
	}
}

// TestNested: strategies nest to any depth; a failing subtree moves its
// parent's fallback on.
func TestNested(t *testing.T) {
	p := mustPlan(t, `{"strategy":{"mode":"fallback"},"targets":[
		{"strategy":{"mode":"fallback","on_status_codes":[503]},"targets":[{"provider":"a"},{"provider":"b"}]},
		{"strategy":{"mode":"loadbalance"},"targets":[{"provider":"c","weight":0},
			{"strategy":{"mode":"conditional","conditions":[{"query":{"metadata.x":"1"},"then":"d"}],"default":"e"},
			 "targets":[{"name":"d","provider":"d"},{"name":"e","provider":"e"}]}]}]}`)
	s := newScript(map[string][]Outcome{"a": {status(503)}, "b": {status(500)}})
	var got string
	out := testRunner(&sleeper{}).Run(t.Context(), p, RunOptions{Facts: Facts{Metadata: map[string]string{"x": "1"}}}, func(ctx context.Context, a Attempt) Outcome {
		got = a.Target.Path
		return s.try(ctx, a)
	})
	if s.called() != "a#0 b#0 d#0" || got != "config.targets[1].targets[1].targets[0]" || !out.OK() {
		t.Errorf("calls %q last %s out %+v", s.called(), got, out)
	}
}

func TestRetry(t *testing.T) {
	for _, tc := range []struct {
		name, retry string
		outs        []Outcome
		calls       string
		status      int
		waits       int
	}{
		{"no retry policy", ``, []Outcome{status(500)}, "a#0", 500, 0},
		{"attempts 0", `"retry":{"attempts":0},`, []Outcome{status(500)}, "a#0", 500, 0},
		{"until success", `"retry":{"attempts":3},`, []Outcome{status(500), status(429)}, "a#0 a#1 a#2", 200, 2},
		{"gives up after attempts", `"retry":{"attempts":2},`, []Outcome{status(502), status(503), status(504), status(500)}, "a#0 a#1 a#2", 504, 2},
		{"default codes only", `"retry":{"attempts":3},`, []Outcome{status(400)}, "a#0", 400, 0},
		{"own codes", `"retry":{"attempts":3,"on_status_codes":[418]},`, []Outcome{status(418), status(500)}, "a#0 a#1", 500, 1},
		{"connection error counts as 502", `"retry":{"attempts":1},`, []Outcome{connErr}, "a#0 a#1", 200, 1},
		{"timeout counts as 504", `"retry":{"attempts":1},`, []Outcome{timeout}, "a#0 a#1", 200, 1},
		{"timeout not retried without 504", `"retry":{"attempts":1,"on_status_codes":[500]},`, []Outcome{timeout}, "a#0", 504, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustPlan(t, `{`+tc.retry+`"provider":"a"}`)
			s := newScript(map[string][]Outcome{"a": tc.outs})
			sl := &sleeper{}
			out := testRunner(sl).Run(t.Context(), p, RunOptions{}, s.try)
			if s.called() != tc.calls || out.Status != tc.status || len(sl.waits) != tc.waits {
				t.Errorf("calls %q status %d waits %v; want %q %d %d", s.called(), out.Status, sl.waits, tc.calls, tc.status, tc.waits)
			}
		})
	}
}

// TestBackoff: exponential with jitter (each wait between half and all of
// 250 ms·2ⁿ); Retry-After honoured only with use_retry_after_header; the
// total wait is capped.
func TestBackoff(t *testing.T) {
	p := mustPlan(t, `{"provider":"a","retry":{"attempts":5}}`)
	s := newScript(map[string][]Outcome{"a": {status(500), status(500), status(500), status(500), status(500)}})
	sl := &sleeper{}
	testRunner(sl).Run(t.Context(), p, RunOptions{}, s.try)
	if len(sl.waits) != 5 {
		t.Fatalf("waits %v", sl.waits)
	}
	distinct := map[time.Duration]bool{}
	for n, w := range sl.waits {
		full := 250 * time.Millisecond << n
		if w < full/2 || w >= full {
			t.Errorf("wait %d = %v, want in [%v, %v)", n, w, full/2, full)
		}
		distinct[w-full/2] = true
	}
	if len(distinct) < 3 {
		t.Errorf("no jitter: %v", sl.waits)
	}

	withHint := Outcome{Status: 429, Failure: FailedStatus, RetryAfter: 2 * time.Second, HasRetryAfter: true}
	for _, tc := range []struct {
		retry string
		outs  []Outcome
		want  []time.Duration
		calls int
	}{
		{`{"attempts":1,"use_retry_after_header":true}`, []Outcome{withHint}, []time.Duration{2 * time.Second}, 2},
		{`{"attempts":1,"use_retry_after_header":true}`, []Outcome{{Status: 429, Failure: FailedStatus, HasRetryAfter: true}}, []time.Duration{0}, 2},
		// Beyond the 60 s budget: no retry, the 429 is the answer.
		{`{"attempts":1,"use_retry_after_header":true}`, []Outcome{{Status: 429, Failure: FailedStatus, RetryAfter: 61 * time.Second, HasRetryAfter: true}}, nil, 1},
		{`{"attempts":3,"use_retry_after_header":true}`, []Outcome{
			{Status: 429, Failure: FailedStatus, RetryAfter: 30 * time.Second, HasRetryAfter: true},
			{Status: 429, Failure: FailedStatus, RetryAfter: 25 * time.Second, HasRetryAfter: true},
			{Status: 429, Failure: FailedStatus, RetryAfter: 10 * time.Second, HasRetryAfter: true},
		}, []time.Duration{30 * time.Second, 25 * time.Second}, 3},
	} {
		p := mustPlan(t, `{"provider":"a","retry":`+tc.retry+`}`)
		s := newScript(map[string][]Outcome{"a": tc.outs})
		sl := &sleeper{}
		testRunner(sl).Run(t.Context(), p, RunOptions{}, s.try)
		if strings.Count(s.called(), "#") != tc.calls || len(sl.waits) != len(tc.want) {
			t.Errorf("%s: calls %q waits %v", tc.retry, s.called(), sl.waits)
			continue
		}
		for i := range tc.want {
			if sl.waits[i] != tc.want[i] {
				t.Errorf("%s: wait %d = %v, want %v", tc.retry, i, sl.waits[i], tc.want[i])
			}
		}
	}
	// Without use_retry_after_header the hint is ignored.
	p = mustPlan(t, `{"provider":"a","retry":{"attempts":1}}`)
	sl = &sleeper{}
	testRunner(sl).Run(t.Context(), p, RunOptions{}, newScript(map[string][]Outcome{"a": {withHint}}).try)
	if len(sl.waits) != 1 || sl.waits[0] >= 250*time.Millisecond {
		t.Errorf("hint used without use_retry_after_header: %v", sl.waits)
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second, true},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond, true},
		{http.Header{"Retry-After-Ms": {"150"}, "Retry-After": {"9"}}, 150 * time.Millisecond, true},
		{http.Header{"Retry-After": {now.Add(4 * time.Second).Format(http.TimeFormat)}}, 4 * time.Second, true},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		{http.Header{}, 0, false},
	} {
		d, ok := RetryAfter(tc.h, now)
		if d != tc.want || ok != tc.ok {
			t.Errorf("%v: %v %v", tc.h, d, ok)
		}
	}
}

// TestAttemptTimeout: each attempt gets its own deadline; the request's
// x-gateway-request-timeout replaces the config's.
func TestAttemptTimeout(t *testing.T) {
	p := mustPlan(t, `{"provider":"a","request_timeout":5000,"retry":{"attempts":1}}`)
	var deadlines []time.Duration
	try := func(ctx context.Context, a Attempt) Outcome {
		dl, ok := ctx.Deadline()
		if !ok {
			t.Fatal("no deadline")
		}
		deadlines = append(deadlines, time.Until(dl))
		return timeout
	}
	testRunner(&sleeper{}).Run(t.Context(), p, RunOptions{}, try)
	if len(deadlines) != 2 || deadlines[1] < 4*time.Second || deadlines[1] > 5*time.Second {
		t.Errorf("deadlines %v: the retry must get a fresh 5 s", deadlines)
	}
	deadlines = nil
	testRunner(&sleeper{}).Run(t.Context(), p, RunOptions{RequestTimeout: 100 * time.Millisecond}, try)
	if deadlines[0] > 100*time.Millisecond {
		t.Errorf("header timeout not applied: %v", deadlines)
	}
}

func TestSleepCancelled(t *testing.T) {
	p := mustPlan(t, `{"provider":"a","retry":{"attempts":3}}`)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	out := (&Runner{}).Run(ctx, p, RunOptions{}, func(context.Context, Attempt) Outcome { return status(500) })
	if out.Failure != Aborted {
		t.Errorf("out %+v", out)
	}
}

// TestCircuitBreakerInRunner: a target whose circuit opened is skipped (no
// call): a fallback moves on, loadbalance picks another, a single target
// answers 503 circuit_open; after the cool-down one probe goes through.
func TestCircuitBreakerInRunner(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	br := NewMemoryBreakers()
	r := testRunner(&sleeper{})
	r.Breakers, r.Now = br, func() time.Time { return clock }
	p := mustPlan(t, `{"strategy":{"mode":"fallback"},"circuit_breaker":{"failure_threshold":2,"window_ms":1000,"cooldown_ms":5000},
		"targets":[{"provider":"a"},{"provider":"b"}]}`)
	s := newScript(map[string][]Outcome{"a": {status(500), status(502)}})
	var skipped []string
	opt := RunOptions{Skipped: func(t *Target) { skipped = append(skipped, t.Provider) }}
	r.Run(t.Context(), p, opt, s.try)
	r.Run(t.Context(), p, opt, s.try)
	if s.called() != "a#0 b#0 a#0 b#0" {
		t.Fatalf("calls %q", s.called())
	}
	out := r.Run(t.Context(), p, opt, s.try)
	if s.called() != "a#0 b#0 a#0 b#0 b#0" || !out.OK() || len(skipped) != 1 || skipped[0] != "a" {
		t.Errorf("open circuit not skipped: calls %q skipped %v", s.called(), skipped)
	}
	key := p.Targets()[0].BreakerKey
	if br.State(key, clock) != "open" {
		t.Errorf("state %s", br.State(key, clock))
	}

	single := mustPlan(t, `{"provider":"a","circuit_breaker":{"failure_threshold":1,"cooldown_ms":5000}}`)
	r.Run(t.Context(), single, RunOptions{}, func(context.Context, Attempt) Outcome { return connErr })
	out = r.Run(t.Context(), single, RunOptions{}, func(context.Context, Attempt) Outcome { t.Fatal("called"); return Outcome{} })
	if out.Status != 503 || out.Failure != SkippedOpenCircuit || !strings.Contains(out.Err.Error(), "circuit_open") {
		t.Errorf("single open: %+v", out)
	}

	// After the cool-down: half-open, one probe; its success closes.
	clock = clock.Add(5 * time.Second)
	if br.State(key, clock) != "half-open" {
		t.Errorf("state %s", br.State(key, clock))
	}
	s = newScript(nil)
	r.Run(t.Context(), p, opt, s.try)
	if s.called() != "a#0" || br.State(key, clock) != "closed" {
		t.Errorf("probe: calls %q state %s", s.called(), br.State(key, clock))
	}

	// Loadbalance avoids an open circuit.
	lb := mustPlan(t, `{"strategy":{"mode":"loadbalance"},"circuit_breaker":{"failure_threshold":1},"targets":[{"provider":"a"},{"provider":"b"}]}`)
	ta := lb.Targets()[0]
	br.Record(t.Context(), ta.BreakerKey, *ta.Breaker, true, clock)
	for range 50 {
		out := r.Run(t.Context(), lb, RunOptions{}, func(_ context.Context, a Attempt) Outcome {
			if a.Target.Provider == "a" {
				t.Fatal("loadbalance picked a target with an open circuit")
			}
			return Outcome{Status: 200}
		})
		if !out.OK() {
			t.Fatalf("out %+v", out)
		}
	}
}
