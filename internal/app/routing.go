package app

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/ai-gateway/gateway/internal/limits"
	"github.com/ai-gateway/gateway/internal/routing"
)

// circuitKeyPrefix starts the Redis keys of circuit-breaker state.
const circuitKeyPrefix = "gateway:circuit:"

// newBreakers returns the circuit-breaker store of the routing engine: in
// Redis when the gateway has one (GATEWAY_REDIS_URL), so that every process
// shares one circuit per target, and in-process otherwise. With Redis it
// also returns connect, to run in the background: it dials until Redis
// answers (the store uses in-process state until then), so that a Redis
// that is down at start delays nothing.
func (a *App) newBreakers() (b routing.Breakers, connect func(ctx context.Context)) {
	if a.cfg.RedisURL == "" {
		return routing.NewMemoryBreakers(), nil
	}
	opt, err := rueidis.ParseURL(a.cfg.RedisURL)
	if err != nil {
		a.log.Warn("redis url unusable for circuit breakers; using in-process state", "err", err)
		return routing.NewMemoryBreakers(), nil
	}
	// Client-side caching needs RESP3 tracking, which the breaker's
	// scripts do not use; without it any Redis version will do.
	opt.DisableCache = true
	rb := routing.NewRedisBreakers(nil, circuitKeyPrefix, a.log)
	connect = func(ctx context.Context) {
		delay := time.Second
		for {
			c, err := rueidis.NewClient(opt)
			if err == nil {
				a.redisMu.Lock()
				a.redis = c
				a.redisMu.Unlock()
				rb.SetClient(c)
				a.bus.setClient(c)
				if rl, ok := a.limiter.(*limits.Redis); ok {
					rl.SetClient(c)
				}
				return
			}
			if delay == time.Second {
				a.log.Warn("redis unreachable; circuit breakers use in-process state until it answers", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			delay = min(2*delay, 30*time.Second)
		}
	}
	return rb, connect
}

// newLimiter returns the rate limiter: counters in Redis, shared by every
// gateway process, when Redis is configured (connected by the same loop as
// the circuit breakers), else in process.
func (a *App) newLimiter() limits.Limiter {
	if a.cfg.RedisURL == "" {
		return limits.NewMemory(nil)
	}
	return limits.NewRedis(nil, rateLimitKeyPrefix, a.log)
}

// rateLimitKeyPrefix starts every rate-limit counter's Redis key.
const rateLimitKeyPrefix = "gateway:ratelimit:"

// closeRedis closes the Redis client, if one connected.
func (a *App) closeRedis() {
	a.redisMu.Lock()
	defer a.redisMu.Unlock()
	if a.redis != nil {
		a.redis.Close()
		a.redis = nil
	}
}
