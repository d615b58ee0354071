package limits

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/ai-gateway/gateway/internal/httpx"
)

// Memory counts in this process: fixed windows aligned to the clock (a
// minute rule's window is a calendar minute), which every process and Redis
// agree on without coordination.
type Memory struct {
	now func() time.Time

	mu      sync.Mutex
	windows map[string]*window
	sweep   time.Time
}

type window struct {
	start time.Time
	count int64
}

// NewMemory returns an in-process limiter; now is the clock (time.Now when
// nil).
func NewMemory(now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{now: now, windows: make(map[string]*window)}
}

// counterKey names the count of one rule of key.
func counterKey(sl slot) string { return sl.key + "\x00" + sl.rule.Type + "\x00" + sl.rule.Unit }

// current returns the slot's window as of now, starting a fresh one when
// the last has ended. Callers hold m.mu.
func (m *Memory) current(sl slot, now time.Time) *window {
	ck := counterKey(sl)
	start := now.Truncate(sl.rule.Window())
	w := m.windows[ck]
	if w == nil || !w.start.Equal(start) {
		w = &window{start: start}
		m.windows[ck] = w
	}
	return w
}

// Allow implements Limiter.
func (m *Memory) Allow(_ context.Context, counters ...Counter) (Decision, error) {
	sls, err := slots(counters)
	if err != nil || len(sls) == 0 {
		return Decision{Allowed: true, Remaining: -1}, err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gc(now)
	used := make([]int64, len(sls))
	for i, sl := range sls {
		used[i] = m.current(sl, now).count
	}
	d := decide(sls, used, now)
	if d.Allowed {
		for _, sl := range sls {
			if sl.rule.Type == TypeRequests {
				m.current(sl, now).count++
			}
		}
	}
	return d, nil
}

// AddTokens implements Limiter.
func (m *Memory) AddTokens(_ context.Context, n int64, counters ...Counter) error {
	sls, err := slots(counters)
	if err != nil || n <= 0 {
		return err
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, sl := range sls {
		if sl.rule.Type == TypeTokens {
			m.current(sl, now).count += n
		}
	}
	return nil
}

// gc drops ended windows at most once a minute, so keys that stop being
// used do not accumulate. Callers hold m.mu.
func (m *Memory) gc(now time.Time) {
	if now.Sub(m.sweep) < time.Minute {
		return
	}
	m.sweep = now
	for k, w := range m.windows {
		if now.Sub(w.start) > 24*time.Hour {
			delete(m.windows, k)
		}
	}
}

// decide judges slots given what each has used so far in its window: a
// requests rule allows while one more request fits, a tokens rule while
// some budget is left. The decision reports the rule with the least room,
// or, when refused, the refusing rule that frees up last.
func decide(sls []slot, used []int64, now time.Time) Decision {
	d := Decision{Allowed: true, Remaining: -1}
	for i, sl := range sls {
		r := sl.rule
		remaining := r.Value - used[i]
		refused := remaining <= 0 // a tokens rule with nothing left
		if r.Type == TypeRequests {
			remaining-- // this request
			refused = remaining < 0
		}
		reset := now.Truncate(r.Window()).Add(r.Window()).Sub(now)
		switch {
		case refused:
			if d.Allowed || reset > d.Reset {
				d = Decision{Allowed: false, Key: sl.key, Rule: r, Remaining: 0, Reset: reset}
			}
		case d.Allowed && (d.Remaining < 0 || remaining < d.Remaining):
			d = Decision{Allowed: true, Key: sl.key, Rule: r, Remaining: remaining, Reset: reset}
		}
	}
	return d
}

// TooMany is the 429 of a refused decision (API.md §2: rate_limit_error
// with Retry-After and x-ratelimit-* headers). Callers may prefix the
// message with what was limited.
func TooMany(d Decision) *httpx.Error {
	h := Headers(d)
	secs := int64((d.Reset + time.Second - 1) / time.Second)
	h.Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
	return &httpx.Error{
		Status: http.StatusTooManyRequests, Type: httpx.TypeRateLimit, Code: "rate_limit_exceeded",
		Message: fmt.Sprintf("rate limit reached: %d %s per %s", d.Rule.Value, d.Rule.Type, unitWord(d.Rule.Unit)),
		Header:  h,
	}
}

// Headers are the x-ratelimit-* headers of a decision (none for a
// decision without rules).
func Headers(d Decision) http.Header {
	h := http.Header{}
	if d.Rule.Value == 0 {
		return h
	}
	h.Set("x-ratelimit-limit-"+d.Rule.Type, strconv.FormatInt(d.Rule.Value, 10))
	h.Set("x-ratelimit-remaining-"+d.Rule.Type, strconv.FormatInt(d.Remaining, 10))
	h.Set("x-ratelimit-reset-"+d.Rule.Type, strconv.FormatFloat(d.Reset.Seconds(), 'f', 0, 64)+"s")
	return h
}

func unitWord(u string) string {
	switch u {
	case UnitMinute:
		return "minute"
	case UnitHour:
		return "hour"
	case UnitDay:
		return "day"
	}
	return u
}
