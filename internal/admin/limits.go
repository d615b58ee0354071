package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/mail"
	"strings"
	"time"

	"github.com/ai-gateway/gateway/internal/httpx"
)

// The shapes below are validated strictly (SPEC.md: rate_limits and
// usage_limits "are validated strictly on api-keys, providers,
// integrations and workspaces"): unknown fields, wrong types and values out
// of range are 400s naming the field, and what is stored is re-encoded, so
// nothing but the documented fields ever reaches the database.

// rateLimit is one entry of rate_limits (API.md §6 rate-limit policies:
// type requests|tokens, unit rpm|rph|rpd, value).
type rateLimit struct {
	Type  string `json:"type"`
	Unit  string `json:"unit"`
	Value int64  `json:"value"`
}

// usageLimits is usage_limits (API.md §6 usage-limit policies).
// CurrentUsage may be fractional (SPEC.md).
type usageLimits struct {
	Type           string   `json:"type"`
	CreditLimit    float64  `json:"credit_limit"`
	AlertThreshold *float64 `json:"alert_threshold,omitempty"`
	PeriodicReset  string   `json:"periodic_reset,omitempty"`
	CurrentUsage   float64  `json:"current_usage"`
}

// keyDefaults is an API key's defaults: the config its requests use when
// they name none, metadata merged into theirs, and whether a request may
// name another config.
type keyDefaults struct {
	ConfigID            string            `json:"config_id,omitempty"`
	Metadata            map[string]string `json:"metadata,omitempty"`
	AllowConfigOverride *bool             `json:"allow_config_override,omitempty"`
}

const (
	maxRateLimits  = 16
	maxAlertEmails = 20
	maxMetadata    = 64
)

// isNull reports whether raw is absent or the JSON null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// decodeField decodes raw strictly into v, with errors naming param.
func decodeField(raw json.RawMessage, v any, param string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		he := httpx.As(jsonFieldError(err))
		if he.Param != "" {
			he.Param = param + "." + he.Param
			he.Message = param + "." + he.Message
		} else {
			he.Param = param
			he.Message = param + ": " + he.Message
		}
		return he
	}
	return nil
}

// jsonFieldError words a decoding error of a field's value like
// httpx.DecodeStrict does for a whole body.
func jsonFieldError(err error) error {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te):
		return httpx.BadRequest("invalid_type", te.Field, "%s: must be %s, got %s", te.Field, te.Type.String(), te.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		f := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return httpx.BadRequest("unknown_field", f, "%s: unknown field", f)
	}
	return httpx.BadRequest("invalid_value", "", "malformed value: %v", err)
}

// validRateLimits checks rate_limits and returns it re-encoded; null (or
// absent) gives nil.
func validRateLimits(raw json.RawMessage, param string) (json.RawMessage, error) {
	if isNull(raw) {
		return nil, nil
	}
	var rls []rateLimit
	if err := decodeField(raw, &rls, param); err != nil {
		return nil, err
	}
	if len(rls) > maxRateLimits {
		return nil, httpx.BadRequest("invalid_value", param, "%s: at most %d entries", param, maxRateLimits)
	}
	seen := map[string]bool{}
	for i, rl := range rls {
		at := fmt.Sprintf("%s[%d]", param, i)
		if rl.Type != "requests" && rl.Type != "tokens" {
			return nil, httpx.BadRequest("invalid_value", at+".type", "%s.type: must be requests or tokens, got %q", at, rl.Type)
		}
		if rl.Unit != "rpm" && rl.Unit != "rph" && rl.Unit != "rpd" {
			return nil, httpx.BadRequest("invalid_value", at+".unit", "%s.unit: must be rpm, rph or rpd, got %q", at, rl.Unit)
		}
		if rl.Value < 1 {
			return nil, httpx.BadRequest("invalid_value", at+".value", "%s.value: must be an integer ≥ 1", at)
		}
		if seen[rl.Type+rl.Unit] {
			return nil, httpx.BadRequest("invalid_value", at, "%s: a second %s limit per %s", at, rl.Type, rl.Unit)
		}
		seen[rl.Type+rl.Unit] = true
	}
	if rls == nil {
		rls = []rateLimit{}
	}
	b, err := json.Marshal(rls)
	return b, err
}

// validUsageLimits checks usage_limits and returns it re-encoded; null (or
// absent) gives nil.
func validUsageLimits(raw json.RawMessage, param string) (json.RawMessage, error) {
	if isNull(raw) {
		return nil, nil
	}
	var ul usageLimits
	if err := decodeField(raw, &ul, param); err != nil {
		return nil, err
	}
	if ul.Type == "" {
		ul.Type = "cost"
	}
	if ul.Type != "cost" && ul.Type != "tokens" {
		return nil, httpx.BadRequest("invalid_value", param+".type", "%s.type: must be cost or tokens, got %q", param, ul.Type)
	}
	if !(ul.CreditLimit > 0) || math.IsInf(ul.CreditLimit, 0) {
		return nil, httpx.BadRequest("invalid_value", param+".credit_limit", "%s.credit_limit: is required and must be > 0", param)
	}
	if t := ul.AlertThreshold; t != nil && (!(*t > 0) || *t > ul.CreditLimit) {
		return nil, httpx.BadRequest("invalid_value", param+".alert_threshold", "%s.alert_threshold: must be > 0 and at most credit_limit", param)
	}
	switch ul.PeriodicReset {
	case "", "weekly", "monthly":
	default:
		return nil, httpx.BadRequest("invalid_value", param+".periodic_reset", "%s.periodic_reset: must be weekly or monthly, got %q", param, ul.PeriodicReset)
	}
	if ul.CurrentUsage < 0 || math.IsInf(ul.CurrentUsage, 0) || math.IsNaN(ul.CurrentUsage) {
		return nil, httpx.BadRequest("invalid_value", param+".current_usage", "%s.current_usage: must be ≥ 0", param)
	}
	return json.Marshal(ul)
}

// validDefaults checks an API key's defaults and returns them re-encoded;
// null (or absent) gives nil.
func validDefaults(raw json.RawMessage) (json.RawMessage, error) {
	const param = "defaults"
	if isNull(raw) {
		return nil, nil
	}
	var d keyDefaults
	if err := decodeField(raw, &d, param); err != nil {
		return nil, err
	}
	if len(d.ConfigID) > maxNameLen {
		return nil, httpx.BadRequest("invalid_value", param+".config_id", "%s.config_id: at most %d characters", param, maxNameLen)
	}
	if len(d.Metadata) > maxMetadata {
		return nil, httpx.BadRequest("invalid_value", param+".metadata", "%s.metadata: at most %d keys", param, maxMetadata)
	}
	for k, v := range d.Metadata {
		if k == "" || len(k) > 128 || len(v) > 512 {
			return nil, httpx.BadRequest("invalid_value", param+".metadata", "%s.metadata: keys of 1 to 128 characters, values of at most 512", param)
		}
	}
	return json.Marshal(d)
}

// validEmails checks alert_emails: at most maxAlertEmails plain addresses.
func validEmails(emails []string) ([]string, error) {
	if len(emails) > maxAlertEmails {
		return nil, httpx.BadRequest("invalid_value", "alert_emails", "alert_emails: at most %d addresses", maxAlertEmails)
	}
	out := make([]string, 0, len(emails))
	for i, e := range emails {
		if err := validEmail(e); err != nil {
			return nil, httpx.BadRequest("invalid_value", fmt.Sprintf("alert_emails[%d]", i), "alert_emails[%d]: %v", i, err)
		}
		out = append(out, strings.ToLower(e))
	}
	return out, nil
}

// validEmail accepts a bare address (no display name) of at most 255
// characters.
func validEmail(e string) error {
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || a.Name != "" || len(e) > 255 {
		return fmt.Errorf("%q is not an email address", e)
	}
	return nil
}

// parseExpiry reads an optional RFC 3339 expires_at: absent gives set ==
// false, null gives (nil, true), a time must be after now.
func parseExpiry(raw json.RawMessage, now time.Time) (t *time.Time, set bool, err error) {
	if len(raw) == 0 {
		return nil, false, nil
	}
	if isNull(raw) {
		return nil, true, nil
	}
	var v time.Time
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, true, httpx.BadRequest("invalid_value", "expires_at", "expires_at: must be an RFC 3339 time")
	}
	if !v.After(now) {
		return nil, true, httpx.BadRequest("invalid_value", "expires_at", "expires_at: must be in the future")
	}
	v = v.UTC().Truncate(time.Microsecond)
	return &v, true, nil
}
