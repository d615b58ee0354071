package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/reqlog"
	"github.com/ai-gateway/gateway/internal/routing"
)

// attemptFunc makes one attempt against rt. On success it commits the
// answer (writes it to the client) and says so in the outcome; on failure
// it writes nothing and the outcome's Err is the answer to give if no
// other attempt follows.
type attemptFunc func(ctx context.Context, rt *route) routing.Outcome

// dispatch sends the request: through the config's plan (retries,
// fallbacks, load balancing, conditions, circuit breakers) or, without a
// config, to the one target the headers name. It returns the error to
// answer with, or nil once an answer was given.
func (c *call) dispatch(try attemptFunc) error {
	var out routing.Outcome
	if c.plan == nil {
		ctx, cancel := c.r.Context(), context.CancelFunc(func() {})
		if c.hs.timeout > 0 {
			ctx, cancel = context.WithTimeout(ctx, c.hs.timeout)
		}
		out = c.attempt(ctx, c.direct, 0, try)
		cancel()
	} else {
		opt := routing.RunOptions{
			Facts:          routing.Facts{Metadata: c.rec.Metadata, Params: c.body, Path: c.r.URL.Path},
			RequestTimeout: c.hs.timeout,
			Skipped: func(t *routing.Target) {
				c.rec.Attempts = append(c.rec.Attempts, reqlog.Attempt{Target: t.Path, Provider: t.Provider, Status: http.StatusServiceUnavailable, Error: "skipped: circuit open"})
			},
		}
		out = c.g.runner.Run(c.r.Context(), c.plan, opt, func(ctx context.Context, a routing.Attempt) routing.Outcome {
			rt, err := c.leafRoute(a.Target)
			if err != nil {
				c.noteAttempt(a.Target.Path, a.Target.Provider, a.Retry)
				out := c.failure(err, nil)
				c.recordAttempt(a.Target.Path, a.Target.Provider, a.Retry, out, 0)
				return out
			}
			return c.attempt(ctx, rt, a.Retry, try)
		})
	}
	if out.Committed || out.OK() {
		return out.Err
	}
	if out.Err == nil {
		return httpx.Internal(fmt.Errorf("routing ended with status %d and no answer", out.Status))
	}
	return out.Err
}

// attempt makes one attempt and keeps its trace: the response headers of
// API.md §3 (sent with the answer, success or error, of the last attempt)
// and the log record's attempt list.
func (c *call) attempt(ctx context.Context, rt *route, retry int, try attemptFunc) routing.Outcome {
	c.noteAttempt(rt.path, rt.target.Provider, retry)
	c.rec.VirtualKey = rt.target.VirtualKey
	start := c.g.now()
	out := try(ctx, rt)
	d := c.g.now().Sub(start)
	c.upstreamDur += d
	c.recordAttempt(rt.path, rt.target.Provider, retry, out, d)
	return out
}

// noteAttempt sets the headers and record fields that name the target
// being tried; the last attempt's stay, so that an answer, success or
// error, carries x-gateway-provider, x-gateway-last-used-option-index (the
// config path of the target that answered; absent without a config) and
// x-gateway-retry-attempt-count (the retries made on that target before
// the answer: 0 when its first try answered).
func (c *call) noteAttempt(path, providerName string, retry int) {
	h := c.w.Header()
	if providerName != "" {
		setHeader(h, hdrProviderOut, providerName)
	}
	setHeader(h, hdrRetryCount, strconv.Itoa(retry))
	if path != "" {
		setHeader(h, hdrOptionIndex, path)
	}
	c.rec.Provider, c.rec.RetryCount, c.rec.LastUsedOptionIndex = providerName, retry, path
}

func (c *call) recordAttempt(path, providerName string, retry int, out routing.Outcome, d time.Duration) {
	a := reqlog.Attempt{Target: path, Provider: providerName, Retry: retry, Status: out.Status, LatencyMS: ms(d)}
	if !out.OK() && out.Err != nil {
		a.Error = truncate(attemptError(out.Err), 256)
	}
	c.rec.Attempts = append(c.rec.Attempts, a)
}

// attemptError is the client-safe description of a failed attempt.
func attemptError(err error) string {
	var pa *passAnswer
	if errors.As(err, &pa) {
		return provider.ParseErrorBody(pa.body).Message
	}
	if errors.Is(err, errClientGone) {
		return errClientGone.Error()
	}
	return httpx.As(err).Message
}

// failure classifies a failed attempt: its status, whether it is a
// connection error or a timeout (which always move a fallback on), the
// provider's Retry-After hint, and the error answer. guard is the attempt's
// first-token guard, if any: when it fired, the failure is a timeout
// whatever the adapter made of its cancellation.
func (c *call) failure(err error, guard *firstTokenGuard) routing.Outcome {
	if guard.expired() {
		he := &httpx.Error{Status: http.StatusGatewayTimeout, Type: httpx.TypeTimeout, Code: "first_token_timeout",
			Message: fmt.Sprintf("the provider sent no first token within %d ms", guard.d.Milliseconds()), Err: err}
		return routing.Outcome{Status: he.Status, Failure: routing.FailedTimeout, Err: he}
	}
	if errors.Is(err, errClientGone) || c.r.Context().Err() != nil {
		return routing.Outcome{Status: statusClientClosed, Failure: routing.Aborted, Err: errClientGone}
	}
	var pa *passAnswer
	if errors.As(err, &pa) {
		out := routing.Outcome{Status: pa.status, Failure: routing.FailedStatus, Err: pa}
		out.RetryAfter, out.HasRetryAfter = routing.RetryAfter(pa.header, c.g.now())
		return out
	}
	if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, provider.ErrTimeout) {
		err = errors.Join(provider.ErrTimeout, err)
	}
	he := httpx.As(upstreamError(err))
	out := routing.Outcome{Status: he.Status, Failure: routing.FailedStatus, Err: he}
	var se *provider.StreamError
	var ue *provider.UpstreamError
	switch {
	case errors.Is(err, provider.ErrTimeout):
		out.Failure = routing.FailedTimeout
	case errors.Is(err, provider.ErrUnreachable):
		out.Failure = routing.FailedConnection
	case errors.Is(err, provider.ErrStreamBroken) && !errors.As(err, &se):
		out.Failure = routing.FailedConnection
	case errors.As(err, &ue):
		out.RetryAfter, out.HasRetryAfter = routing.RetryAfter(ue.Header, c.g.now())
	}
	return out
}

// committed is the outcome of an attempt whose answer went to the client;
// err is what went wrong after that, if anything.
func committed(status int, err error) routing.Outcome {
	return routing.Outcome{Status: status, Failure: routing.Succeeded, Committed: true, Err: err}
}

// firstTokenGuard cancels a streamed attempt that has not delivered its
// first event within the target's first_token_timeout.
type firstTokenGuard struct {
	d      time.Duration
	timer  *time.Timer
	fired  atomic.Bool
	cancel context.CancelFunc
}

// guardFirstToken returns ctx bounded by d until arrived is called; a nil
// guard (d ≤ 0) does nothing.
func guardFirstToken(ctx context.Context, d time.Duration) (context.Context, *firstTokenGuard) {
	if d <= 0 {
		return ctx, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	g := &firstTokenGuard{d: d, cancel: cancel}
	g.timer = time.AfterFunc(d, func() {
		g.fired.Store(true)
		cancel()
	})
	return ctx, g
}

// arrived stops the clock at the first event; false means it had already
// run out (the attempt's context is cancelled).
func (g *firstTokenGuard) arrived() bool { return g == nil || g.timer.Stop() }

func (g *firstTokenGuard) expired() bool { return g != nil && g.fired.Load() }

// release frees the guard's context once the attempt is over.
func (g *firstTokenGuard) release() {
	if g != nil {
		g.timer.Stop()
		g.cancel()
	}
}

// passAnswer is a pass-through provider's error answer, held back so that a
// retry or fallback may still replace it; when it is final it is relayed
// unchanged (API.md §3).
type passAnswer struct {
	status int
	header http.Header
	body   []byte
}

func (a *passAnswer) Error() string { return fmt.Sprintf("provider answered %d", a.status) }
