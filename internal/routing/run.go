package routing

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ai-gateway/gateway/internal/httpx"
)

// Failure says how an attempt ended, which decides whether a retry or a
// fallback follows.
type Failure int

const (
	// Succeeded: a 2xx answer.
	Succeeded Failure = iota
	// FailedStatus: a non-2xx answer (the provider's, or the gateway's on
	// its behalf, such as an unknown virtual key).
	FailedStatus
	// FailedConnection: no answer (dial failure, reset, a stream that broke
	// before its first event). Retried as a 502; always moves a fallback on.
	FailedConnection
	// FailedTimeout: no answer within request_timeout or first_token_timeout.
	// Retried as a 504; always moves a fallback on.
	FailedTimeout
	// SkippedOpenCircuit: the target's circuit is open; no call was made.
	// Moves a fallback on and makes loadbalance pick another target.
	SkippedOpenCircuit
	// Aborted: nothing more may be tried (the client went away).
	Aborted
)

// Outcome is what one attempt, or a whole node of a plan, ended with.
type Outcome struct {
	// Status is the HTTP status of the answer (or of the error answer the
	// gateway would give).
	Status  int
	Failure Failure
	// RetryAfter is the provider's Retry-After / retry-after-ms hint, when
	// HasRetryAfter.
	RetryAfter    time.Duration
	HasRetryAfter bool
	// Committed is set once the answer's first byte went to the client:
	// nothing more can be tried, whatever happens next.
	Committed bool
	// Err is the answer to give when this outcome is final and not
	// committed, or what went wrong after committing.
	Err error
}

// OK reports whether the outcome is a success.
func (o Outcome) OK() bool { return o.Failure == Succeeded }

// Attempt is one call the Runner asks for.
type Attempt struct {
	Target *Target
	// Retry is 0 for a target's first try, then 1, 2, …
	Retry int
}

// TryFunc makes one attempt. ctx carries the attempt's deadline
// (request_timeout); on success the function commits the answer itself.
type TryFunc func(ctx context.Context, a Attempt) Outcome

// RunOptions are a request's inputs to a run.
type RunOptions struct {
	Facts Facts
	// RequestTimeout, when positive, replaces every target's
	// request_timeout (x-gateway-request-timeout).
	RequestTimeout time.Duration
	// Skipped, if set, is told about targets skipped for an open circuit.
	Skipped func(t *Target)
}

// MaxRetryWait caps the total time one request spends waiting between
// retries, across all its targets. A backoff or Retry-After that would go
// beyond it ends the retries and returns the last answer instead.
const MaxRetryWait = 60 * time.Second

// Backoff bounds: the n-th retry (from 0) waits about base·2ⁿ, between half
// and all of it (jitter), at most maxBackoff.
const (
	backoffBase = 250 * time.Millisecond
	maxBackoff  = 10 * time.Second
)

// Runner executes plans. Its zero value works: real time, a shared random
// source, no circuit breaking. Fields may be replaced before first use.
type Runner struct {
	// Breakers holds circuit state; nil disables circuit breaking.
	Breakers Breakers
	// Sleep waits d or until ctx ends (tests replace it).
	Sleep func(ctx context.Context, d time.Duration) error
	// Rand returns a number in [0, 1); it must be safe for concurrent use.
	Rand func() float64
	// Now is the clock of the circuit breakers and Retry-After dates.
	Now func() time.Time
	// MaxRetryWait overrides the package's MaxRetryWait when positive.
	MaxRetryWait time.Duration
}

// sleep waits d unless ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) rand() float64 {
	if r.Rand != nil {
		return r.Rand()
	}
	return rand.Float64()
}

// run is the state of one request's run.
type run struct {
	r      *Runner
	opt    *RunOptions
	try    TryFunc
	waited time.Duration
}

// Run executes the plan for one request and returns the final outcome. An
// outcome that is not committed is the caller's to answer with (Err).
func (r *Runner) Run(ctx context.Context, p *Plan, opt RunOptions, try TryFunc) Outcome {
	st := &run{r: r, opt: &opt, try: try}
	return st.node(ctx, p.root)
}

func (st *run) node(ctx context.Context, n *node) Outcome {
	if n.target != nil {
		return st.leaf(ctx, n.target)
	}
	switch n.mode {
	case ModeFallback:
		var out Outcome
		for i, child := range n.children {
			out = st.node(ctx, child)
			if out.OK() || out.Committed || out.Failure == Aborted || i == len(n.children)-1 || !movesOn(out, n.onStatus) {
				return out
			}
		}
		return out
	case ModeLoadbalance:
		return st.loadbalance(ctx, n)
	case ModeConditional:
		for _, c := range n.conds {
			if c.q.Match(&st.opt.Facts) {
				return st.node(ctx, n.children[c.child])
			}
		}
		if n.def >= 0 {
			return st.node(ctx, n.children[n.def])
		}
		return Outcome{Status: http.StatusBadRequest, Failure: FailedStatus, Err: &httpx.Error{
			Status: http.StatusBadRequest, Type: httpx.TypeInvalidRequest, Code: "no_matching_condition", Param: n.path + ".strategy.conditions",
			Message: fmt.Sprintf("%s: no condition matched the request and the strategy has no default", n.path),
		}}
	}
	return st.node(ctx, n.children[0])
}

// movesOn reports whether a fallback tries its next target after out.
func movesOn(out Outcome, onStatus []int) bool {
	switch out.Failure {
	case FailedConnection, FailedTimeout, SkippedOpenCircuit:
		return true
	case FailedStatus:
		return onStatus == nil || slices.Contains(onStatus, out.Status)
	}
	return false
}

// loadbalance picks a child at random in proportion to the weights. Weight
// 0 is never picked. A child skipped for an open circuit is taken out and
// another picked; any other outcome is final.
func (st *run) loadbalance(ctx context.Context, n *node) Outcome {
	left := make([]*node, 0, len(n.children))
	for _, c := range n.children {
		if c.weight > 0 {
			left = append(left, c)
		}
	}
	var out Outcome
	for len(left) > 0 {
		i := pick(left, st.r.rand())
		out = st.node(ctx, left[i])
		if out.Failure != SkippedOpenCircuit {
			return out
		}
		left = slices.Delete(left, i, i+1)
	}
	return out
}

// pick chooses an index of ns by weight; x is uniform in [0, 1).
func pick(ns []*node, x float64) int {
	total := 0.0
	for _, n := range ns {
		total += n.weight
	}
	at := x * total
	for i, n := range ns {
		if at < n.weight {
			return i
		}
		at -= n.weight
	}
	return len(ns) - 1 // rounding
}

// leaf makes the attempts of one target: the first try and its retries.
func (st *run) leaf(ctx context.Context, t *Target) Outcome {
	r := st.r
	if t.Breaker != nil && r.Breakers != nil && !r.Breakers.Allow(ctx, t.BreakerKey, *t.Breaker, r.now()) {
		if st.opt.Skipped != nil {
			st.opt.Skipped(t)
		}
		return Outcome{Status: http.StatusServiceUnavailable, Failure: SkippedOpenCircuit, Err: &httpx.Error{
			Status: http.StatusServiceUnavailable, Type: httpx.TypeUpstream, Code: "circuit_open",
			Message: fmt.Sprintf("target %s is unavailable: its circuit breaker is open after repeated failures", t.Path),
		}}
	}
	timeout := t.RequestTimeout
	if st.opt.RequestTimeout > 0 {
		timeout = st.opt.RequestTimeout
	}
	for n := 0; ; n++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if timeout > 0 {
			actx, cancel = context.WithTimeout(ctx, timeout)
		}
		out := st.try(actx, Attempt{Target: t, Retry: n})
		cancel()
		if t.Breaker != nil && r.Breakers != nil && out.Failure != Aborted {
			r.Breakers.Record(ctx, t.BreakerKey, *t.Breaker, breakerFailure(out), r.now())
		}
		if out.OK() || out.Committed || out.Failure == Aborted {
			return out
		}
		if n >= t.Retry.Attempts || !retryable(t.Retry, out) {
			return out
		}
		wait, ok := st.backoff(t.Retry, n, out)
		if !ok {
			return out
		}
		sl := r.Sleep
		if sl == nil {
			sl = sleep
		}
		if err := sl(ctx, wait); err != nil {
			return Outcome{Status: 499, Failure: Aborted, Err: err}
		}
	}
}

// breakerFailure reports whether out counts against a circuit: no answer,
// or an answer saying the provider is overloaded or broken.
func breakerFailure(out Outcome) bool {
	switch out.Failure {
	case FailedConnection, FailedTimeout:
		return true
	case FailedStatus:
		return out.Status == http.StatusTooManyRequests || out.Status >= 500
	}
	return false
}

// retryable reports whether a failed attempt is retried under policy.
func retryable(policy Retry, out Outcome) bool {
	status := out.Status
	switch out.Failure {
	case FailedConnection:
		status = http.StatusBadGateway
	case FailedTimeout:
		status = http.StatusGatewayTimeout
	case FailedStatus:
	default:
		return false
	}
	return slices.Contains(policy.OnStatusCodes, status)
}

// backoff returns how long to wait before retry n+1, and false when that
// wait would exceed the request's retry budget.
func (st *run) backoff(policy Retry, n int, out Outcome) (time.Duration, bool) {
	var d time.Duration
	if policy.UseRetryAfterHeader && out.HasRetryAfter {
		d = max(out.RetryAfter, 0)
	} else {
		d = min(backoffBase<<n, maxBackoff)
		d = d/2 + time.Duration(st.r.rand()*float64(d/2))
	}
	budget := st.r.MaxRetryWait
	if budget <= 0 {
		budget = MaxRetryWait
	}
	if st.waited+d > budget {
		return 0, false
	}
	st.waited += d
	return d, true
}

// RetryAfter reads a provider's retry hint: retry-after-ms (milliseconds,
// OpenAI and Azure), else Retry-After in seconds or as an HTTP date.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
			return time.Duration(f * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
		return time.Duration(f * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
