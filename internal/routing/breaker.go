package routing

import (
	"context"
	"sync"
	"time"
)

// Breakers holds the circuit state of targets, by key. The in-process
// MemoryBreakers serves one gateway process; RedisBreakers shares the state
// between every process using one Redis.
//
// A circuit is closed until cb.FailureThreshold failures are recorded
// within one window of cb.WindowMS (counted from the window's first
// failure); it is then open for cb.CooldownMS, during which Allow refuses.
// After the cool-down it is half-open: Allow lets one probe through (and
// refuses others while the probe is out, for at most probeLease); the
// probe's success closes the circuit and its failure opens it again.
type Breakers interface {
	// Allow reports whether a call to the target may go ahead now.
	Allow(ctx context.Context, key string, cb CircuitBreaker, now time.Time) bool
	// Record notes the result of a call that Allow let through.
	Record(ctx context.Context, key string, cb CircuitBreaker, failed bool, now time.Time)
}

// probeLease bounds how long a half-open circuit waits for its probe's
// result before letting another request probe: the cool-down, at least 5 s.
func probeLease(cb CircuitBreaker) time.Duration {
	return max(time.Duration(cb.CooldownMS)*time.Millisecond, 5*time.Second)
}

// MemoryBreakers is the in-process Breakers.
type MemoryBreakers struct {
	mu sync.Mutex
	m  map[string]*circuit
}

// maxCircuits bounds the map; beyond it, the state is forgotten (every
// circuit closes), which errs on the side of calling providers.
const maxCircuits = 100_000

type circuit struct {
	failures    int
	windowStart time.Time
	openUntil   time.Time // zero: closed
	probeUntil  time.Time // half-open: a probe is out until then
}

// NewMemoryBreakers returns an empty in-process circuit store.
func NewMemoryBreakers() *MemoryBreakers { return &MemoryBreakers{m: make(map[string]*circuit)} }

// Allow implements Breakers.
func (b *MemoryBreakers) Allow(_ context.Context, key string, cb CircuitBreaker, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.m[key]
	if c == nil || c.openUntil.IsZero() {
		return true
	}
	if now.Before(c.openUntil) || now.Before(c.probeUntil) {
		return false
	}
	c.probeUntil = now.Add(probeLease(cb))
	return true
}

// Record implements Breakers.
func (b *MemoryBreakers) Record(_ context.Context, key string, cb CircuitBreaker, failed bool, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.m[key]
	if !failed {
		// A success closes a half-open circuit; in a closed one it leaves
		// the window's count alone ("N failures within the window").
		if c != nil && !c.openUntil.IsZero() && !now.Before(c.openUntil) {
			delete(b.m, key)
		}
		return
	}
	if c == nil {
		if len(b.m) >= maxCircuits {
			clear(b.m)
		}
		c = new(circuit)
		b.m[key] = c
	}
	cooldown := time.Duration(cb.CooldownMS) * time.Millisecond
	if !c.openUntil.IsZero() {
		if !now.Before(c.openUntil) { // the half-open probe failed
			c.openUntil, c.probeUntil = now.Add(cooldown), time.Time{}
		}
		return // a late failure of a call made before the circuit opened
	}
	if c.windowStart.IsZero() || now.Sub(c.windowStart) >= time.Duration(cb.WindowMS)*time.Millisecond {
		c.windowStart, c.failures = now, 0
	}
	c.failures++
	if c.failures >= cb.FailureThreshold {
		c.openUntil, c.probeUntil = now.Add(cooldown), time.Time{}
		c.failures, c.windowStart = 0, time.Time{}
	}
}

// State names a circuit's state at now, for tests and diagnostics:
// "closed", "open" or "half-open".
func (b *MemoryBreakers) State(key string, now time.Time) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.m[key]
	switch {
	case c == nil || c.openUntil.IsZero():
		return "closed"
	case now.Before(c.openUntil):
		return "open"
	}
	return "half-open"
}
