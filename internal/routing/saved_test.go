package routing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ai-gateway/gateway/internal/httpx"
)

type memConfigs struct {
	mu    sync.Mutex
	m     map[string]*StoredConfig
	reads int
	fail  error
}

func (s *memConfigs) Config(_ context.Context, org, slugOrID string) (*StoredConfig, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.fail != nil {
		return nil, s.fail
	}
	for _, c := range s.m {
		if c.OrganisationID == org && (c.Slug == slugOrID || c.ID == slugOrID) {
			cp := *c
			return &cp, nil
		}
	}
	return nil, fmt.Errorf("config %q: %w", slugOrID, httpx.ErrNotFound)
}

func (s *memConfigs) put(c *StoredConfig) {
	s.mu.Lock()
	s.m[c.ID] = c
	s.mu.Unlock()
}

func TestSavedConfigs(t *testing.T) {
	st := &memConfigs{m: map[string]*StoredConfig{}}
	st.put(&StoredConfig{ID: "id1", Slug: "pc-a", OrganisationID: "org", Version: 1, Config: []byte(`{"provider":"openai","api_key":"k1"}`)})
	clock := time.Unix(1_767_225_600, 0)
	opened := 0
	sc := NewSavedConfigs(st, 30*time.Second, ParseOptions{}, func(c *StoredConfig) ([]byte, error) { opened++; return c.Config, nil })
	sc.now = func() time.Time { return clock }
	ctx := context.Background()

	p1, c1, err := sc.Plan(ctx, "org", "pc-a", "x-gateway-config")
	if err != nil || c1.Version != 1 || p1.Targets()[0].APIKey != "k1" || p1.Key() != "saved:id1:1" {
		t.Fatalf("%v %+v", err, c1)
	}
	if p2, _, _ := sc.Plan(ctx, "org", "pc-a", "x-gateway-config"); p2 != p1 || st.reads != 1 {
		t.Errorf("not cached: reads %d", st.reads)
	}
	// A new version arrives after the TTL, or at once on Invalidate.
	st.put(&StoredConfig{ID: "id1", Slug: "pc-a", OrganisationID: "org", Version: 2, Config: []byte(`{"provider":"openai","api_key":"k2"}`)})
	if p, _, _ := sc.Plan(ctx, "org", "pc-a", "x-gateway-config"); p.Targets()[0].APIKey != "k1" {
		t.Error("reloaded before the TTL")
	}
	sc.Invalidate("org", "pc-a")
	p3, c3, _ := sc.Plan(ctx, "org", "pc-a", "x-gateway-config")
	if c3.Version != 2 || p3.Targets()[0].APIKey != "k2" || p3.Key() != "saved:id1:2" {
		t.Errorf("after invalidate: v%d", c3.Version)
	}
	// A re-read after the TTL that finds the same version keeps the plan.
	clock = clock.Add(31 * time.Second)
	before := opened
	if p, _, _ := sc.Plan(ctx, "org", "pc-a", "x-gateway-config"); p != p3 || opened != before {
		t.Error("same version parsed again")
	}
	// By id too; unknown is AB01_CONFIG_NOT_FOUND naming the param.
	if _, c, err := sc.Plan(ctx, "org", "id1", "x-gateway-config"); err != nil || c.Slug != "pc-a" {
		t.Errorf("by id: %v", err)
	}
	_, _, err = sc.Plan(ctx, "org", "pc-none", "defaults.config_id")
	if he := httpx.As(err); he.Status != 400 || he.Code != CodeConfigNotFound || he.Param != "defaults.config_id" {
		t.Errorf("unknown: %v", err)
	}
	if _, _, err := sc.Plan(ctx, "other-org", "pc-a", "x-gateway-config"); httpx.As(err).Code != CodeConfigNotFound {
		t.Errorf("other organisation: %v", err)
	}
	// A stored config that no longer validates answers AB01; a store
	// outage answers 503.
	st.put(&StoredConfig{ID: "id2", Slug: "pc-bad", OrganisationID: "org", Version: 1, Config: []byte(`{"provider":"gone"}`)})
	strict := NewSavedConfigs(st, time.Second, ParseOptions{KnownProvider: func(s string) bool { return s == "openai" }}, nil)
	if _, _, err := strict.Plan(ctx, "org", "pc-bad", "x-gateway-config"); httpx.As(err).Code != CodeUnknownProvider {
		t.Errorf("invalid stored config: %v", err)
	}
	st.fail = errors.New("db down")
	if _, _, err := strict.Plan(ctx, "org", "pc-a", "x-gateway-config"); httpx.As(err).Status != 503 {
		t.Errorf("store outage: %v", err)
	}
}
