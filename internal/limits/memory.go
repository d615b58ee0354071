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

// counterKey names the counter of one rule of key.
func counterKey(key string, r Rule) string { return key + "\x00" + r.Type + "\x00" + r.Unit }

// current returns the rule's window as of now, starting a fresh one when
// the last has ended. Callers hold m.mu.
func (m *Memory) current(key string, r Rule, now time.Time) *window {
	ck := counterKey(key, r)
	start := now.Truncate(r.Window())
	w := m.windows[ck]
	if w == nil || !w.start.Equal(start) {
		w = &window{start: start}
		m.windows[ck] = w
	}
	return w
}

// Allow implements Limiter.
func (m *Memory) Allow(_ context.Context, key string, rules []Rule) (Decision, error) {
	if len(rules) == 0 {
		return Decision{Allowed: true, Remaining: -1}, nil
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gc(now)
	counts := make([]int64, len(rules))
	for i, r := range rules {
		if r.Window() == 0 || r.Value <= 0 {
			return Decision{}, fmt.Errorf("limits: invalid rule %+v", r)
		}
		counts[i] = m.current(key, r, now).count
	}
	d := decide(rules, counts, now)
	if d.Allowed {
		for _, r := range rules {
			if r.Type == TypeRequests {
				m.current(key, r, now).count++
			}
		}
	}
	return d, nil
}

// AddTokens implements Limiter.
func (m *Memory) AddTokens(_ context.Context, key string, rules []Rule, n int64) error {
	if n <= 0 {
		return nil
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range rules {
		if r.Type == TypeTokens && r.Window() > 0 {
			m.current(key, r, now).count += n
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

// decide judges rules given what each has used so far in its window: a
// requests rule allows while one more request fits, a tokens rule while
// some budget is left. The decision reports the rule with the least room.
func decide(rules []Rule, used []int64, now time.Time) Decision {
	d := Decision{Allowed: true, Remaining: -1}
	for i, r := range rules {
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
				// Refused: report the rule that frees up last.
				d = Decision{Allowed: false, Rule: r, Remaining: 0, Reset: reset}
			}
		case d.Allowed && (d.Remaining < 0 || remaining < d.Remaining):
			d = Decision{Allowed: true, Rule: r, Remaining: remaining, Reset: reset}
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
