package routing

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// breakerContract runs the circuit life cycle against b: closed → open
// after N failures within the window → half-open after the cool-down with
// one probe at a time → closed on the probe's success, open again on its
// failure.
func breakerContract(t *testing.T, b Breakers, key string) {
	ctx := context.Background()
	cb := CircuitBreaker{FailureThreshold: 3, WindowMS: 1000, CooldownMS: 5000}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	allow := func(ms int, want bool, what string) {
		t.Helper()
		if got := b.Allow(ctx, key, cb, at(ms)); got != want {
			t.Errorf("%s: Allow at %d ms = %v, want %v", what, ms, got, want)
		}
	}
	fail := func(ms int) { b.Record(ctx, key, cb, true, at(ms)) }
	ok := func(ms int) { b.Record(ctx, key, cb, false, at(ms)) }

	allow(0, true, "new circuit")
	fail(0)
	fail(100)
	ok(150) // successes do not reset the window's count
	allow(200, true, "two failures")
	// The window restarts after window_ms: these two do not open it.
	fail(1200)
	fail(1300)
	allow(1400, true, "window restarted")
	fail(1500) // the third within the window starting at 1200
	allow(1501, false, "open")
	allow(6499, false, "still cooling down")
	allow(6500, true, "half-open probe")
	allow(6501, false, "second request while the probe is out")
	fail(6600) // the probe failed: open again
	allow(6700, false, "reopened")
	allow(11600, true, "second probe")
	ok(11700)
	allow(11701, true, "closed again")
	allow(11702, true, "closed again")
	fail(11800)
	allow(11900, true, "one failure after closing")
}

func TestMemoryBreakers(t *testing.T) {
	breakerContract(t, NewMemoryBreakers(), "k")
}

// redisClient connects to GATEWAY_TEST_REDIS_ADDR or skips.
func redisClient(t *testing.T) rueidis.Client {
	t.Helper()
	addr := os.Getenv("GATEWAY_TEST_REDIS_ADDR")
	if addr == "" {
		t.Skip("GATEWAY_TEST_REDIS_ADDR not set: skipping the Redis circuit-breaker tests")
	}
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatalf("connect to redis at %s: %v", addr, err)
	}
	t.Cleanup(c.Close)
	return c
}

func uniquePrefix(t *testing.T) string {
	b := make([]byte, 6)
	rand.Read(b)
	return "test:" + t.Name() + ":" + hex.EncodeToString(b) + ":"
}

func TestRedisBreakers(t *testing.T) {
	c := redisClient(t)
	prefix := uniquePrefix(t)
	t.Cleanup(func() {
		keys, _ := c.Do(context.Background(), c.B().Keys().Pattern(prefix+"*").Build()).AsStrSlice()
		for _, k := range keys {
			c.Do(context.Background(), c.B().Del().Key(k).Build())
		}
	})
	b := NewRedisBreakers(c, prefix, nil)
	breakerContract(t, b, "k")

	// Two processes share one circuit.
	other := NewRedisBreakers(c, prefix, nil)
	cb := CircuitBreaker{FailureThreshold: 2, WindowMS: 60_000, CooldownMS: 60_000}
	now := time.Now()
	b.Record(t.Context(), "shared", cb, true, now)
	other.Record(t.Context(), "shared", cb, true, now)
	if b.Allow(t.Context(), "shared", cb, now) || other.Allow(t.Context(), "shared", cb, now) {
		t.Error("failures recorded by two processes did not open one circuit")
	}
	if ttl, err := c.Do(t.Context(), c.B().Pttl().Key(prefix+"shared").Build()).AsInt64(); err != nil || ttl <= 0 {
		t.Errorf("circuit key has no expiry: %d %v", ttl, err)
	}

	// A Redis that fails (here: a closed client) degrades to in-process
	// state rather than failing requests.
	closed, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{os.Getenv("GATEWAY_TEST_REDIS_ADDR")}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	breakerContract(t, NewRedisBreakers(closed, prefix+"closed:", nil), "k")
}

// TestRedisBreakersFallBack: with Redis unreachable (or not yet connected)
// the in-process state answers.
func TestRedisBreakersFallBack(t *testing.T) {
	b := NewRedisBreakers(nil, "x:", nil)
	breakerContract(t, b, "k")
}
