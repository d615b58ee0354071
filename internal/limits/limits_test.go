package limits

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 22, 10, 0, 5, 0, time.UTC)} }

// contract runs the behaviour every Limiter shares; advance moves its clock.
func contract(t *testing.T, l Limiter, advance func(time.Duration)) {
	ctx := context.Background()
	t.Run("requests", func(t *testing.T) {
		rules := []Rule{{Type: TypeRequests, Unit: UnitMinute, Value: 3}}
		for i := range 3 {
			d, err := l.Allow(ctx, Counter{"req", rules})
			if err != nil || !d.Allowed {
				t.Fatalf("request %d: %+v, %v", i+1, d, err)
			}
			if d.Remaining != int64(2-i) {
				t.Errorf("request %d: remaining %d, want %d", i+1, d.Remaining, 2-i)
			}
		}
		d, err := l.Allow(ctx, Counter{"req", rules})
		if err != nil || d.Allowed {
			t.Fatalf("4th request: %+v, %v; want refused", d, err)
		}
		if d.Reset <= 0 || d.Reset > time.Minute {
			t.Errorf("reset %v, want within the minute", d.Reset)
		}
		// Another key has its own counter.
		if d, _ := l.Allow(ctx, Counter{"other", rules}); !d.Allowed {
			t.Error("another key was refused")
		}
		advance(time.Minute)
		if d, _ := l.Allow(ctx, Counter{"req", rules}); !d.Allowed {
			t.Error("refused in the next window")
		}
	})
	t.Run("tokens", func(t *testing.T) {
		rules := []Rule{{Type: TypeRequests, Unit: UnitHour, Value: 100}, {Type: TypeTokens, Unit: UnitMinute, Value: 50}}
		if d, _ := l.Allow(ctx, Counter{"tok", rules}); !d.Allowed {
			t.Fatal("first request refused")
		}
		if err := l.AddTokens(ctx, 49, Counter{"tok", rules}); err != nil {
			t.Fatal(err)
		}
		d, _ := l.Allow(ctx, Counter{"tok", rules})
		if !d.Allowed || d.Rule.Type != TypeTokens || d.Remaining != 1 {
			t.Fatalf("with 1 token left: %+v", d)
		}
		_ = l.AddTokens(ctx, 1, Counter{"tok", rules})
		d, _ = l.Allow(ctx, Counter{"tok", rules})
		if d.Allowed || d.Rule.Type != TypeTokens {
			t.Fatalf("with no token left: %+v", d)
		}
		advance(time.Minute)
		if d, _ := l.Allow(ctx, Counter{"tok", rules}); !d.Allowed {
			t.Fatalf("next minute: %+v", d)
		}
	})
	t.Run("refused requests are not counted", func(t *testing.T) {
		rules := []Rule{{Type: TypeRequests, Unit: UnitDay, Value: 1}, {Type: TypeRequests, Unit: UnitMinute, Value: 5}}
		l.Allow(ctx, Counter{"both", rules})
		for range 3 {
			if d, _ := l.Allow(ctx, Counter{"both", rules}); d.Allowed || d.Rule.Unit != UnitDay {
				t.Fatalf("want the day rule to refuse: %+v", d)
			}
		}
		// The minute rule counted only the one allowed request: 4 left.
		d, _ := l.Allow(ctx, Counter{"both", []Rule{{Type: TypeRequests, Unit: UnitMinute, Value: 5}}})
		if !d.Allowed || d.Remaining != 3 {
			t.Fatalf("minute rule: %+v, want allowed with 3 left", d)
		}
	})
	t.Run("counters are all or nothing", func(t *testing.T) {
		// A provider allowing 10 a day behind an integration allowing 2:
		// requests the integration refuses do not use the provider's budget.
		prov := Counter{"provider:p", []Rule{{Type: TypeRequests, Unit: UnitDay, Value: 10}}}
		integ := Counter{"integration:i", []Rule{{Type: TypeRequests, Unit: UnitDay, Value: 2}}}
		for range 2 {
			if d, _ := l.Allow(ctx, prov, integ); !d.Allowed {
				t.Fatalf("within both limits: %+v", d)
			}
		}
		for range 5 {
			if d, _ := l.Allow(ctx, prov, integ); d.Allowed || d.Key != "integration:i" {
				t.Fatalf("want the integration to refuse: %+v", d)
			}
		}
		d, _ := l.Allow(ctx, prov)
		if !d.Allowed || d.Key != "provider:p" || d.Remaining != 7 {
			t.Fatalf("provider alone: %+v, want allowed with 7 left", d)
		}
	})
	t.Run("no rules", func(t *testing.T) {
		if d, err := l.Allow(ctx, Counter{"none", nil}); err != nil || !d.Allowed {
			t.Fatalf("%+v %v", d, err)
		}
	})
	t.Run("invalid rule", func(t *testing.T) {
		if _, err := l.Allow(ctx, Counter{"bad", []Rule{{Type: TypeRequests, Unit: "rpw", Value: 1}}}); err == nil {
			t.Fatal("want an error for an unknown unit")
		}
	})
}

func TestMemory(t *testing.T) {
	c := newClock()
	contract(t, NewMemory(c.now), c.add)
}

func redisClient(t *testing.T) rueidis.Client {
	t.Helper()
	addr := os.Getenv("GATEWAY_TEST_REDIS_ADDR")
	if addr == "" {
		t.Skip("GATEWAY_TEST_REDIS_ADDR not set: skipping the Redis rate-limit tests")
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatalf("connect to redis at %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	return c
}

func prefix(t *testing.T) string {
	b := make([]byte, 6)
	rand.Read(b)
	return "test:limits:" + hex.EncodeToString(b) + ":"
}

func TestRedis(t *testing.T) {
	c := redisClient(t)
	clk := newClock()
	l := NewRedis(c, prefix(t), nil)
	l.now = clk.now
	contract(t, l, clk.add)
}

// Two processes sharing Redis enforce one limit between them, even when
// they race for the last units.
func TestRedisSharedAcrossProcesses(t *testing.T) {
	c := redisClient(t)
	p := prefix(t)
	a, b := NewRedis(c, p, nil), NewRedis(c, p, nil)
	rules := []Rule{{Type: TypeRequests, Unit: UnitDay, Value: 40}}
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for i := range 100 {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Go(func() {
			d, err := l.Allow(context.Background(), Counter{"shared", rules})
			if err != nil {
				t.Error(err)
			}
			if d.Allowed {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if allowed != 40 {
		t.Fatalf("allowed %d of 100 concurrent requests, want exactly 40", allowed)
	}
}

// Without a Redis client the limiter counts in process rather than failing
// the request.
func TestRedisFallback(t *testing.T) {
	l := NewRedis(nil, "x:", nil)
	rules := []Rule{{Type: TypeRequests, Unit: UnitMinute, Value: 1}}
	if d, err := l.Allow(context.Background(), Counter{"k", rules}); err != nil || !d.Allowed {
		t.Fatalf("%+v %v", d, err)
	}
	if d, _ := l.Allow(context.Background(), Counter{"k", rules}); d.Allowed {
		t.Fatal("fallback does not count")
	}
}

func TestTooMany(t *testing.T) {
	d := Decision{Rule: Rule{Type: TypeRequests, Unit: UnitMinute, Value: 10}, Reset: 1500 * time.Millisecond}
	e := TooMany(d)
	if e.Status != 429 || e.Type != "rate_limit_error" {
		t.Fatalf("%+v", e)
	}
	for k, want := range map[string]string{
		"Retry-After": "2", "X-Ratelimit-Limit-Requests": "10", "X-Ratelimit-Remaining-Requests": "0",
	} {
		if got := e.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}
