package limits

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

// Redis counts in Redis, so that every gateway process using the same Redis
// enforces one limit rather than one each. A request's rules are checked
// and counted by one Lua script, so concurrent processes cannot both take
// the last unit of a window.
//
// When Redis fails (or has not connected yet) the in-process Memory limiter
// answers instead and the failure is logged at most once a minute: an
// outage of Redis degrades limits to per-process, never the requests.
type Redis struct {
	client   atomic.Pointer[rueidis.Client]
	prefix   string
	fallback *Memory
	now      func() time.Time
	log      *slog.Logger
	timeout  time.Duration

	logMu   sync.Mutex
	lastLog time.Time
}

// NewRedis returns a limiter keeping counters under prefix in Redis.
// client may be nil until SetClient; log may be nil.
func NewRedis(client rueidis.Client, prefix string, log *slog.Logger) *Redis {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Redis{prefix: prefix, fallback: NewMemory(nil), now: time.Now, log: log, timeout: 250 * time.Millisecond}
	if client != nil {
		l.client.Store(&client)
	}
	return l
}

// SetClient installs the Redis client (when it connects after start).
func (l *Redis) SetClient(c rueidis.Client) { l.client.Store(&c) }

// allowScript checks and counts one request.
// KEYS: one counter per rule. ARGV: for each rule, its kind ("r" requests,
// "t" tokens), limit and counter ttl in ms.
// Returns the counters' values before this request, then 1 when allowed.
var allowScript = rueidis.NewLuaScript(`
local used = {}
local ok = 1
for i = 1, #KEYS do
  local kind = ARGV[3*i-2]
  local limit = tonumber(ARGV[3*i-1])
  local u = tonumber(redis.call('GET', KEYS[i]) or '0')
  used[i] = u
  if kind == 'r' then
    if u + 1 > limit then ok = 0 end
  elseif u >= limit then
    ok = 0
  end
end
if ok == 1 then
  for i = 1, #KEYS do
    if ARGV[3*i-2] == 'r' then
      redis.call('INCR', KEYS[i])
      redis.call('PEXPIRE', KEYS[i], ARGV[3*i])
    end
  end
end
used[#KEYS+1] = ok
return used
`)

// addScript adds ARGV[1] to every counter, each with its ttl ARGV[i+1].
var addScript = rueidis.NewLuaScript(`
for i = 1, #KEYS do
  redis.call('INCRBY', KEYS[i], ARGV[1])
  redis.call('PEXPIRE', KEYS[i], ARGV[i+1])
end
return 0
`)

// redisKey names a slot's count for the window containing now.
func (l *Redis) redisKey(sl slot, now time.Time) string {
	start := now.Truncate(sl.rule.Window()).Unix()
	return l.prefix + sl.key + ":" + sl.rule.Type + ":" + sl.rule.Unit + ":" + strconv.FormatInt(start, 10)
}

// ttl keeps a count a little past its window's end.
func ttl(r Rule) string { return strconv.FormatInt((r.Window() + time.Minute).Milliseconds(), 10) }

// Allow implements Limiter.
func (l *Redis) Allow(ctx context.Context, counters ...Counter) (Decision, error) {
	sls, err := slots(counters)
	if err != nil || len(sls) == 0 {
		return Decision{Allowed: true, Remaining: -1}, err
	}
	cp := l.client.Load()
	if cp == nil {
		return l.fallback.Allow(ctx, counters...)
	}
	now := l.now()
	keys := make([]string, len(sls))
	args := make([]string, 0, 3*len(sls))
	for i, sl := range sls {
		kind := "t"
		if sl.rule.Type == TypeRequests {
			kind = "r"
		}
		keys[i] = l.redisKey(sl, now)
		args = append(args, kind, strconv.FormatInt(sl.rule.Value, 10), ttl(sl.rule))
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
	defer cancel()
	vals, err := allowScript.Exec(cctx, *cp, keys, args).AsIntSlice()
	if err == nil && len(vals) != len(sls)+1 {
		err = errors.New("limits: unexpected answer from the rate-limit script")
	}
	if err != nil {
		l.failed(err)
		return l.fallback.Allow(ctx, counters...)
	}
	d := decide(sls, vals[:len(sls)], now)
	d.Allowed = vals[len(sls)] == 1 // the script's verdict is what was counted
	return d, nil
}

// AddTokens implements Limiter.
func (l *Redis) AddTokens(ctx context.Context, n int64, counters ...Counter) error {
	sls, err := slots(counters)
	if err != nil || n <= 0 {
		return err
	}
	now := l.now()
	var keys []string
	args := []string{strconv.FormatInt(n, 10)}
	for _, sl := range sls {
		if sl.rule.Type == TypeTokens {
			keys = append(keys, l.redisKey(sl, now))
			args = append(args, ttl(sl.rule))
		}
	}
	if len(keys) == 0 {
		return nil
	}
	cp := l.client.Load()
	if cp == nil {
		return l.fallback.AddTokens(ctx, n, counters...)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
	defer cancel()
	if err := addScript.Exec(cctx, *cp, keys, args).Error(); err != nil {
		l.failed(err)
		return l.fallback.AddTokens(ctx, n, counters...)
	}
	return nil
}

func (l *Redis) failed(err error) {
	l.logMu.Lock()
	defer l.logMu.Unlock()
	if time.Since(l.lastLog) < time.Minute {
		return
	}
	l.lastLog = time.Now()
	l.log.Warn("rate-limit counters in Redis unavailable; using this process's own counters", "err", err)
}
