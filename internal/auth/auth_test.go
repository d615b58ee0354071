package auth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/secret"
)

// memKeys is an in-memory KeyStore counting lookups.
type memKeys struct {
	keys    map[string]*APIKey
	vks     map[string]*VirtualKey
	lookups int
	fail    error
}

func (m *memKeys) APIKeyByHash(_ context.Context, hash string) (*APIKey, error) {
	m.lookups++
	if m.fail != nil {
		return nil, m.fail
	}
	k, ok := m.keys[hash]
	if !ok {
		return nil, fmt.Errorf("key: %w", httpx.ErrNotFound)
	}
	return k, nil
}

func (m *memKeys) DefaultWorkspaceID(context.Context, string) (string, error) {
	return "ws-default", nil
}

func (m *memKeys) VirtualKeyBySlug(_ context.Context, _, slug string) (*VirtualKey, error) {
	m.lookups++
	vk, ok := m.vks[slug]
	if !ok {
		return nil, fmt.Errorf("vk: %w", httpx.ErrNotFound)
	}
	return vk, nil
}

func status(err error) int {
	var he *httpx.Error
	if errors.As(err, &he) {
		return he.Status
	}
	return 0
}

func TestAuthenticate(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	past, future := now.Add(-time.Second), now.Add(time.Hour)
	raw, expired, revoked, short := GenerateKey(), GenerateKey(), GenerateKey(), GenerateKey()
	store := &memKeys{keys: map[string]*APIKey{
		HashKey(raw):     {ID: "k1", OrganisationID: "org", Type: KeyTypeOrganisation, Status: StatusActive, Scopes: []string{"*"}},
		HashKey(expired): {ID: "k2", OrganisationID: "org", Status: StatusActive, ExpiresAt: &past},
		HashKey(revoked): {ID: "k3", OrganisationID: "org", Status: StatusRevoked},
		HashKey(short):   {ID: "k4", OrganisationID: "org", WorkspaceID: "ws-1", Status: StatusActive, ExpiresAt: &future},
	}}
	a := NewAuthenticator(store, 30*time.Second)
	a.now = func() time.Time { return now }
	ctx := context.Background()

	p, err := a.Authenticate(ctx, raw)
	if err != nil || p.APIKeyID != "k1" || p.WorkspaceID != "ws-default" || !p.Can("anything") {
		t.Fatalf("valid key: %+v, %v", p, err)
	}
	if _, err := a.Authenticate(ctx, raw); err != nil || store.lookups != 1 {
		t.Errorf("cached lookup hit the store: %d lookups, %v", store.lookups, err)
	}
	for name, k := range map[string]string{"missing": "", "unknown": "gw-nope", "expired": expired, "revoked": revoked} {
		if _, err := a.Authenticate(ctx, k); status(err) != 401 {
			t.Errorf("%s key: %v, want 401", name, err)
		}
	}
	// Unknown keys are remembered briefly, so a flood does not reach storage.
	before := store.lookups
	a.Authenticate(ctx, "gw-nope")
	if store.lookups != before {
		t.Error("negative cache not used")
	}
	// A cached key stops working the moment it expires.
	p, err = a.Authenticate(ctx, short)
	if err != nil || p.WorkspaceID != "ws-1" || p.Can("logs.list") {
		t.Fatalf("workspace key: %+v, %v", p, err)
	}
	a.now = func() time.Time { return future }
	if _, err := a.Authenticate(ctx, short); status(err) != 401 {
		t.Errorf("expired cached key: %v", err)
	}
	// Storage down: 503, not 401.
	store.fail = errors.New("database is down")
	a.Invalidate()
	if _, err := a.Authenticate(ctx, raw); status(err) != 503 {
		t.Errorf("store down: %v, want 503", err)
	}
	if MaskKey(raw) == raw || len(MaskKey(raw)) > 16 {
		t.Errorf("MaskKey(%s) = %s", raw, MaskKey(raw))
	}
}

func TestVirtualKeysResolve(t *testing.T) {
	box, _ := secret.NewBox(bytes.Repeat([]byte{3}, secret.KeySize))
	now := time.Unix(1_800_000_000, 0)
	soon := now.Add(time.Minute)
	vk := &VirtualKey{ID: "id-1", Slug: "prod", Provider: "openai", Status: StatusActive, WorkspaceID: "ws", Options: map[string]string{"aws_region": "eu-west-1"}, ExpiresAt: &soon}
	if err := SealCredentials(box, vk, "sk-secret", map[string]string{"aws_secret_access_key": "shh"}); err != nil {
		t.Fatal(err)
	}
	moved := *vk
	moved.ID, moved.Slug = "id-2", "moved" // a sealed value copied to another row
	store := &memKeys{vks: map[string]*VirtualKey{"prod": vk, "moved": &moved, "off": {ID: "id-3", Slug: "off", Status: StatusRevoked}}}
	v := NewVirtualKeys(store, box, time.Hour)
	v.now = func() time.Time { return now }
	ctx := context.Background()
	r, err := v.Resolve(ctx, "org", "prod")
	if err != nil || r.APIKey != "sk-secret" || r.Options["aws_secret_access_key"] != "shh" || r.Options["aws_region"] != "eu-west-1" || r.WorkspaceID != "ws" {
		t.Fatalf("resolve: %+v, %v", r, err)
	}
	if _, err := v.Resolve(ctx, "org", "moved"); status(err) != 500 {
		t.Errorf("credential moved to another row: %v, want 500 (AAD mismatch)", err)
	}
	for _, slug := range []string{"off", "absent"} {
		if _, err := v.Resolve(ctx, "org", slug); status(err) != 401 {
			t.Errorf("%s: %v, want 401", slug, err)
		}
	}
	// The cache entry lives no longer than the key.
	v.now = func() time.Time { return soon.Add(time.Second) }
	if _, err := v.Resolve(ctx, "org", "prod"); status(err) != 401 {
		t.Errorf("expired virtual key still resolves: %v", err)
	}
}
