package routing

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
)

// RedisBreakers keeps circuit state in Redis, so that every gateway process
// using the same Redis sees one circuit per target. Each circuit is one hash
// changed only by a Lua script, so concurrent processes never interleave a
// read and a write. The clock is the caller's (each process's), in
// milliseconds; processes' clocks need only agree to well within a
// cool-down.
//
// When Redis fails (or no client is set yet) the in-process MemoryBreakers
// answers instead and the error is logged (at most once a minute), so an
// outage of Redis degrades circuit breaking to per-process, never the
// requests themselves.
type RedisBreakers struct {
	client   atomic.Pointer[rueidis.Client]
	prefix   string
	fallback *MemoryBreakers
	log      *slog.Logger
	// timeout bounds each Redis call on the request path.
	timeout time.Duration

	logMu   sync.Mutex
	lastLog time.Time
}

// NewRedisBreakers returns circuit state in Redis under keys
// prefix+<target key>. client may be nil until SetClient.
func NewRedisBreakers(client rueidis.Client, prefix string, log *slog.Logger) *RedisBreakers {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &RedisBreakers{prefix: prefix, fallback: NewMemoryBreakers(), log: log, timeout: 250 * time.Millisecond}
	if client != nil {
		b.client.Store(&client)
	}
	return b
}

// SetClient installs the Redis client (when it connects after start).
func (b *RedisBreakers) SetClient(c rueidis.Client) { b.client.Store(&c) }

// breakerScript applies one operation to a circuit hash.
// KEYS[1] the circuit; ARGV: op (allow|fail|ok), now ms, threshold,
// window ms, cool-down ms, probe lease ms, key ttl ms.
// Fields: f failures in the window, ws window start, ou open until (0:
// closed), pu probe out until.
var breakerScript = rueidis.NewLuaScript(`
local k = KEYS[1]
local op = ARGV[1]
local now = tonumber(ARGV[2])
local threshold = tonumber(ARGV[3])
local window = tonumber(ARGV[4])
local cooldown = tonumber(ARGV[5])
local lease = tonumber(ARGV[6])
local ttl = tonumber(ARGV[7])
local ou = tonumber(redis.call('HGET', k, 'ou') or '0')
if op == 'allow' then
  if ou == 0 then return 1 end
  if now < ou then return 0 end
  local pu = tonumber(redis.call('HGET', k, 'pu') or '0')
  if now < pu then return 0 end
  redis.call('HSET', k, 'pu', tostring(now + lease))
  redis.call('PEXPIRE', k, ttl)
  return 1
end
if op == 'ok' then
  if ou ~= 0 and now >= ou then redis.call('DEL', k) end
  return 0
end
if ou ~= 0 then
  if now >= ou then
    redis.call('HSET', k, 'ou', tostring(now + cooldown), 'pu', '0')
    redis.call('PEXPIRE', k, ttl)
  end
  return 0
end
local ws = tonumber(redis.call('HGET', k, 'ws') or '0')
local f = tonumber(redis.call('HGET', k, 'f') or '0')
if ws == 0 or now - ws >= window then
  ws = now
  f = 0
end
f = f + 1
if f >= threshold then
  redis.call('HSET', k, 'ou', tostring(now + cooldown), 'pu', '0', 'f', '0', 'ws', '0')
else
  redis.call('HSET', k, 'f', tostring(f), 'ws', tostring(ws))
end
redis.call('PEXPIRE', k, ttl)
return 0
`)

func (b *RedisBreakers) exec(ctx context.Context, op, key string, cb CircuitBreaker, now time.Time) (int64, error) {
	cp := b.client.Load()
	if cp == nil {
		return 0, errNoRedis
	}
	lease := probeLease(cb).Milliseconds()
	ttl := cb.WindowMS + cb.CooldownMS + lease + 60_000
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.timeout)
	defer cancel()
	return breakerScript.Exec(ctx, *cp, []string{b.prefix + key}, []string{
		op, strconv.FormatInt(now.UnixMilli(), 10), strconv.Itoa(cb.FailureThreshold),
		strconv.FormatInt(cb.WindowMS, 10), strconv.FormatInt(cb.CooldownMS, 10),
		strconv.FormatInt(lease, 10), strconv.FormatInt(ttl, 10),
	}).AsInt64()
}

var errNoRedis = errors.New("redis client not connected")

func (b *RedisBreakers) failed(err error) {
	b.logMu.Lock()
	defer b.logMu.Unlock()
	if time.Since(b.lastLog) < time.Minute {
		return
	}
	b.lastLog = time.Now()
	b.log.Warn("circuit breaker state in Redis unavailable; using this process's own state", "err", err)
}

// Allow implements Breakers.
func (b *RedisBreakers) Allow(ctx context.Context, key string, cb CircuitBreaker, now time.Time) bool {
	n, err := b.exec(ctx, "allow", key, cb, now)
	if err != nil {
		b.failed(err)
		return b.fallback.Allow(ctx, key, cb, now)
	}
	return n == 1
}

// Record implements Breakers.
func (b *RedisBreakers) Record(ctx context.Context, key string, cb CircuitBreaker, failed bool, now time.Time) {
	op := "ok"
	if failed {
		op = "fail"
	}
	if _, err := b.exec(ctx, op, key, cb, now); err != nil {
		b.failed(err)
		b.fallback.Record(ctx, key, cb, failed, now)
	}
}
