// Package limits enforces rate limits (requests or tokens per minute, hour
// or day) for whatever a caller names by key: a provider, an integration,
// a deployment. One interface, an in-process implementation and a Redis one
// shared by every gateway process.
//
// limits imports only httpx.
package limits

import (
	"context"
	"fmt"
	"time"
)

// Rule is one rate limit: at most Value requests or tokens per unit
// (API.md §6: type requests|tokens, unit rpm|rph|rpd).
type Rule struct {
	Type  string `json:"type"`
	Unit  string `json:"unit"`
	Value int64  `json:"value"`
}

// Rule types and units.
const (
	TypeRequests = "requests"
	TypeTokens   = "tokens"
	UnitMinute   = "rpm"
	UnitHour     = "rph"
	UnitDay      = "rpd"
)

// Window is the length of a rule's unit (0 for an unknown unit).
func (r Rule) Window() time.Duration {
	switch r.Unit {
	case UnitMinute:
		return time.Minute
	case UnitHour:
		return time.Hour
	case UnitDay:
		return 24 * time.Hour
	}
	return 0
}

// Counter is the rules counted under one key, for example a provider's
// ("provider:<id>") or a deployment's.
type Counter struct {
	Key   string
	Rules []Rule
}

// Decision is the outcome of Allow: whether the request may proceed and,
// for the tightest rule (the refusing one when refused), the figures of
// the x-ratelimit-* headers.
type Decision struct {
	Allowed bool
	// Key is the counter of Rule.
	Key       string
	Rule      Rule
	Remaining int64
	// Reset is how long until the rule's window ends.
	Reset time.Duration
}

// Limiter counts against rate limits. Each rule of each counter has its
// own count.
type Limiter interface {
	// Allow counts one request against every counter's requests rules and
	// checks their tokens rules (tokens used so far in the window below
	// the limit), all or nothing: a request refused by any rule is counted
	// by none, so one limit cannot use up another's budget.
	Allow(ctx context.Context, counters ...Counter) (Decision, error)
	// AddTokens adds n used tokens to every counter's tokens rules.
	AddTokens(ctx context.Context, n int64, counters ...Counter) error
}

// slot is one rule of one counter.
type slot struct {
	key  string
	rule Rule
}

// slots flattens counters, checking each rule.
func slots(counters []Counter) ([]slot, error) {
	var out []slot
	for _, c := range counters {
		for _, r := range c.Rules {
			if r.Window() == 0 || r.Value <= 0 || (r.Type != TypeRequests && r.Type != TypeTokens) {
				return nil, fmt.Errorf("limits: invalid rule %+v of %q", r, c.Key)
			}
			out = append(out, slot{c.Key, r})
		}
	}
	return out, nil
}
