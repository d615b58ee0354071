// Package limits enforces rate limits (requests or tokens per minute, hour
// or day) for whatever a caller names by key: a provider, an integration,
// a deployment. One interface, an in-process implementation and a Redis one
// shared by every gateway process.
//
// limits imports only httpx.
package limits

import (
	"context"
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

// Decision is the outcome of Allow: whether the request may proceed and,
// for the tightest rule, the figures of the x-ratelimit-* headers.
type Decision struct {
	Allowed   bool
	Rule      Rule
	Remaining int64
	// Reset is how long until the tightest rule's window ends.
	Reset time.Duration
}

// Limiter counts against rate limits. Keys are the caller's (for example
// "provider:<id>"); each rule of a key is counted separately.
type Limiter interface {
	// Allow counts one request against key's requests rules and checks its
	// tokens rules (tokens used so far in the window below the limit). A
	// refused request is not counted.
	Allow(ctx context.Context, key string, rules []Rule) (Decision, error)
	// AddTokens adds n used tokens to key's tokens rules.
	AddTokens(ctx context.Context, key string, rules []Rule, n int64) error
}
