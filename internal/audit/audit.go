// Package audit owns the audit record of the control plane (API.md §2
// "Records", SPEC.md "Administrative keys"): its fields, its list filter,
// and the masking of secrets in the request bodies it keeps.
//
// audit is a leaf: it must not import any other internal package. The
// store persists records; the control plane writes and lists them.
package audit

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Actor types.
const (
	ActorUser   = "user"
	ActorAPIKey = "api_key"
)

// Record is one audited control-plane request.
type Record struct {
	ID             string    `json:"id"`
	OrganisationID string    `json:"organisation_id"`
	Timestamp      time.Time `json:"timestamp"`
	// ActorType is ActorUser for a user's key and ActorAPIKey for a service
	// key, or for a request whose key could not be authenticated (then
	// ActorID is empty).
	ActorType string `json:"actor_type"`
	ActorID   string `json:"actor_id"`
	// APIKeyID is the key the request authenticated with, also when the
	// actor is its user.
	APIKeyID     string `json:"api_key_id"`
	Method       string `json:"method"`
	URI          string `json:"uri"`
	Action       string `json:"action"`
	ResourceType string `json:"resource_type"`
	ResourceID   string `json:"resource_id"`
	WorkspaceID  string `json:"workspace_id"`
	StatusCode   int    `json:"status_code"`
	ClientIP     string `json:"client_ip"`
	RequestID    string `json:"request_id"`
	// RequestBody is the request body with secrets masked (MaskBody).
	RequestBody string `json:"request_body"`
}

// Filter narrows GET /v1/audit-logs; zero fields do not filter.
type Filter struct {
	OrganisationID string
	From, To       time.Time
	Method         string
	ActorType      string
	ActorID        string
	ResourceType   string
	ResourceID     string
	Action         string
	WorkspaceID    string
	StatusCode     int
	Page, PageSize int
}

// Masked replaces every secret value.
const Masked = "********"

// MaxBody bounds a stored request body in bytes; longer bodies are cut.
const MaxBody = 60_000

// maxParse bounds the bodies MaskBody parses; larger ones are not kept.
const maxParse = 1 << 20

// secretExact are field names whose values are always secret.
var secretExact = map[string]bool{
	"key": true, "api_key": true, "apikey": true, "password": true, "passwd": true, "token": true,
	"authorization": true, "credential": true, "credentials": true, "secrets": true, "secret": true,
	"raw_key": true, "access_token": true, "refresh_token": true, "id_token": true,
	// headers maps header names to values sent upstream (MCP integrations,
	// webhooks): any of them may be a credential.
	"headers": true,
}

// secretParts are substrings of field names whose values are secret
// (aws_secret_access_key, client_secret, vertex_service_account_json,
// private_key, openai_api_key, x-gateway-api-key…).
var secretParts = []string{"secret", "password", "service_account", "private_key", "api_key", "api-key", "apikey"}

// secretSuffixes end field names whose values are secret
// (aws_session_token), unlike max_tokens.
var secretSuffixes = []string{"_token", "-token"}

// rawKey matches a gateway API key (auth.KeyPrefix and 40 base62
// characters) anywhere in a value, as a last line of defence.
var rawKey = regexp.MustCompile(`gw-[A-Za-z0-9]{40}`)

// IsSecretField reports whether a JSON field of this name holds a secret.
func IsSecretField(name string) bool {
	n := strings.ToLower(name)
	if secretExact[n] {
		return true
	}
	if strings.HasSuffix(n, "_id") || strings.HasSuffix(n, "_ids") {
		// api_key_id and the like name a secret; they are not one.
		return false
	}
	for _, p := range secretParts {
		if strings.Contains(n, p) {
			return true
		}
	}
	for _, p := range secretSuffixes {
		if strings.HasSuffix(n, p) {
			return true
		}
	}
	return false
}

// MaskBody returns body as it may be stored: JSON with every secret field's
// value replaced by Masked (at any depth), any gateway API key inside other
// values masked too, cut to MaxBody bytes. A body that is not JSON is
// described, not stored, since its secrets cannot be found.
func MaskBody(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	if len(body) > maxParse {
		return "[body of " + strconv.Itoa(len(body)) + " bytes not recorded]"
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return "[non-JSON body of " + strconv.Itoa(len(body)) + " bytes not recorded]"
	}
	b, err := json.Marshal(mask(v))
	if err != nil {
		return "[body not recorded]"
	}
	s := rawKey.ReplaceAllString(string(b), Masked)
	if len(s) > MaxBody {
		n := MaxBody
		for n > 0 && s[n]&0xC0 == 0x80 {
			n--
		}
		s = s[:n] + "…[truncated]"
	}
	return s
}

func mask(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if IsSecretField(k) && e != nil {
				t[k] = Masked
				continue
			}
			t[k] = mask(e)
		}
	case []any:
		for i, e := range t {
			t[i] = mask(e)
		}
	}
	return v
}
