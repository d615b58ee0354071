package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/registry"
	"github.com/ai-gateway/gateway/internal/secret"
)

// catalog is an in-memory ProviderStore that counts its reads.
type catalog struct {
	mu           sync.Mutex
	providers    map[string]*registry.Provider // workspace+"/"+slug
	integrations map[string]*registry.Integration
	reads        int
}

func (c *catalog) ProviderBySlug(_ context.Context, _, workspace, slug string) (*registry.Provider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	p, ok := c.providers[workspace+"/"+slug]
	if !ok {
		return nil, fmt.Errorf("provider: %w", httpx.ErrNotFound)
	}
	cp := *p
	return &cp, nil
}

func (c *catalog) Integration(_ context.Context, _, id string) (*registry.Integration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	in, ok := c.integrations[id]
	if !ok {
		return nil, fmt.Errorf("integration: %w", httpx.ErrNotFound)
	}
	cp := *in
	return &cp, nil
}

func testBox(t *testing.T) *secret.Box {
	t.Helper()
	b, err := secret.NewBox(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestProvidersResolve(t *testing.T) {
	box := testBox(t)
	in := &registry.Integration{ID: "int-1", Slug: "openai", AIProvider: "openai", CustomHost: "https://up.example/v1",
		Options: map[string]string{"aws_region": "eu-west-1"}, Status: registry.StatusActive,
		RateLimits: json.RawMessage(`[{"type":"tokens","unit":"rpm","value":100}]`),
		Access:     registry.WorkspaceAccess{WorkspaceIDs: []string{"ws-a"}}}
	if err := SealIntegration(box, in, "sk-secret", map[string]string{"aws_secret_access_key": "aws-s"}); err != nil {
		t.Fatal(err)
	}
	st := &catalog{
		providers: map[string]*registry.Provider{
			"ws-a/prod": {ID: "p-1", Slug: "prod", WorkspaceID: "ws-a", IntegrationID: "int-1", Status: registry.StatusActive,
				RateLimits: json.RawMessage(`[{"type":"requests","unit":"rpd","value":2}]`)},
		},
		integrations: map[string]*registry.Integration{"int-1": in},
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v := NewProviders(st, box, time.Minute)
	v.now = func() time.Time { return now }
	ctx := t.Context()

	got, err := v.Resolve(ctx, "org", "ws-a", "prod")
	if err != nil {
		t.Fatal(err)
	}
	want := &ResolvedProvider{ID: "p-1", Slug: "prod", WorkspaceID: "ws-a", AIProvider: "openai", APIKey: "sk-secret",
		CustomHost: "https://up.example/v1", Options: map[string]string{"aws_region": "eu-west-1", "aws_secret_access_key": "aws-s"},
		RateLimits:            []registry.RateLimit{{Type: "requests", Unit: "rpd", Value: 2}},
		IntegrationRateLimits: []registry.RateLimit{{Type: "tokens", Unit: "rpm", Value: 100}}}
	if diff := cmp.Diff(want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Integration" }, cmp.Ignore())); diff != "" {
		t.Errorf("Resolve (-want +got):\n%s", diff)
	}
	if _, err := v.Resolve(ctx, "org", "ws-a", "prod"); err != nil || st.reads != 1 {
		t.Errorf("second Resolve read the store again (%d reads), err %v", st.reads, err)
	}
	if _, err := v.Resolve(ctx, "org", "ws-b", "prod"); !errors.Is(err, ErrUnknownProvider) {
		t.Errorf("another workspace: %v, want ErrUnknownProvider", err)
	}

	// Control-plane changes, seen after invalidation.
	for _, tt := range []struct {
		name       string
		change     func()
		invalidate func()
		code       string
	}{
		{"provider disabled", func() { st.providers["ws-a/prod"].Status = registry.StatusDisabled },
			func() { v.InvalidateProvider("org", "prod") }, "provider_disabled"},
		{"integration disabled", func() { st.providers["ws-a/prod"].Status = registry.StatusActive; in.Status = registry.StatusDisabled },
			func() { v.InvalidateIntegration("org", "int-1") }, "integration_disabled"},
		{"integration unshared", func() { in.Status = registry.StatusActive; in.Access.WorkspaceIDs = nil },
			func() { v.InvalidateIntegration("org", "int-1") }, "integration_not_shared"},
		{"shared with all", func() { in.Access.Global = true },
			func() { v.InvalidateIntegration("org", "int-1") }, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, before := v.Resolve(ctx, "org", "ws-a", "prod")
			tt.change()
			if _, err := v.Resolve(ctx, "org", "ws-a", "prod"); err != before {
				t.Fatalf("before invalidation the cached answer stands: %v, want %v", err, before)
			}
			tt.invalidate()
			_, err := v.Resolve(ctx, "org", "ws-a", "prod")
			if got := httpx.As(err).Code; (err == nil) != (tt.code == "") || (err != nil && got != tt.code) {
				t.Errorf("after invalidation: %v, want code %q", err, tt.code)
			}
		})
	}

	// A provider created after a miss is found once invalidated.
	if _, err := v.Resolve(ctx, "org", "ws-a", "new"); !errors.Is(err, ErrUnknownProvider) {
		t.Fatal(err)
	}
	st.providers["ws-a/new"] = &registry.Provider{ID: "p-2", Slug: "new", WorkspaceID: "ws-a", IntegrationID: "int-1", Status: registry.StatusActive}
	v.InvalidateProvider("org", "new")
	if _, err := v.Resolve(ctx, "org", "ws-a", "new"); err != nil {
		t.Errorf("new provider after invalidation: %v", err)
	}
	// The TTL bounds staleness without invalidation (other processes).
	delete(st.providers, "ws-a/new")
	now = now.Add(2 * time.Minute)
	if _, err := v.Resolve(ctx, "org", "ws-a", "new"); !errors.Is(err, ErrUnknownProvider) {
		t.Errorf("after the TTL: %v, want ErrUnknownProvider", err)
	}
}

func TestSealIntegrationBoundToID(t *testing.T) {
	box := testBox(t)
	a := &registry.Integration{ID: "a"}
	if err := SealIntegration(box, a, "sk", nil); err != nil {
		t.Fatal(err)
	}
	b := &registry.Integration{ID: "b", SealedKey: a.SealedKey}
	if _, _, err := OpenIntegration(box, b); err == nil {
		t.Error("a credential moved to another integration opened")
	}
	key, _, err := OpenIntegration(box, a)
	if err != nil || key != "sk" {
		t.Errorf("OpenIntegration = %q, %v", key, err)
	}
	if key, _, err := OpenIntegration(box, &registry.Integration{ID: "c"}); err != nil || key != "" {
		t.Errorf("no credential: %q, %v", key, err)
	}
}
