package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/reqlog"
	"github.com/ai-gateway/gateway/internal/routing"
)

func TestConfigCRUDAndVersions(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := context.Background()
		org := res.OrganisationID
		c := &routing.StoredConfig{OrganisationID: org, Slug: "pc-main-abc123", Name: "Main", Config: []byte(`{"provider":"openai"}`)}
		if err := s.CreateConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
		if c.ID == "" || c.Version != 1 || c.VersionID == "" || c.WorkspaceID != res.WorkspaceID || c.CreatedAt.IsZero() {
			t.Fatalf("created %+v", c)
		}
		dup := &routing.StoredConfig{OrganisationID: org, Slug: c.Slug, Name: "Dup", Config: []byte(`{}`)}
		if err := s.CreateConfig(ctx, dup); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("duplicate slug: %v", err)
		}
		for _, key := range []string{c.Slug, c.ID} {
			got, err := s.Config(ctx, org, key)
			if err != nil || got.ID != c.ID || string(got.Config) != `{"provider":"openai"}` || got.Version != 1 || got.Name != "Main" {
				t.Errorf("Config(%s) = %+v, %v", key, got, err)
			}
		}
		if _, err := s.Config(ctx, "other-org", c.Slug); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("other organisation: %v", err)
		}

		// Each update is a new version; the latest is what Config returns.
		for i := 2; i <= 3; i++ {
			c.Name, c.Config = fmt.Sprintf("Main v%d", i), []byte(fmt.Sprintf(`{"provider":"openai","request_timeout":%d}`, i))
			if err := s.UpdateConfig(ctx, c); err != nil {
				t.Fatal(err)
			}
			if c.Version != i {
				t.Errorf("version %d, want %d", c.Version, i)
			}
		}
		got, _ := s.Config(ctx, org, c.Slug)
		if got.Version != 3 || got.Name != "Main v3" || string(got.Config) != `{"provider":"openai","request_timeout":3}` || got.UpdatedAt.Before(got.CreatedAt) || got.VersionID != c.VersionID {
			t.Errorf("latest %+v", got)
		}
		vs, total, err := s.ConfigVersions(ctx, org, c.Slug, 0, 2)
		if err != nil || total != 3 || len(vs) != 2 || vs[0].Version != 3 || vs[1].Version != 2 || vs[1].Name != "Main v2" || vs[0].ID != c.ID {
			t.Errorf("versions %v %d %+v", err, total, vs)
		}
		vs, _, _ = s.ConfigVersions(ctx, org, c.ID, 1, 2)
		if len(vs) != 1 || vs[0].Version != 1 || string(vs[0].Config) != `{"provider":"openai"}` || vs[0].VersionID == c.VersionID {
			t.Errorf("first version %+v", vs)
		}
		missing := &routing.StoredConfig{ID: "nope", OrganisationID: org, Name: "x", Config: []byte(`{}`)}
		if err := s.UpdateConfig(ctx, missing); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("update unknown: %v", err)
		}

		// Listing: newest first, by workspace.
		ws2, err := s.CreateWorkspace(ctx, org, "team-b", "Team B")
		if err != nil {
			t.Fatal(err)
		}
		other := &routing.StoredConfig{OrganisationID: org, WorkspaceID: ws2, Slug: "pc-b-xyz", Name: "B", Config: []byte(`{}`)}
		if err := s.CreateConfig(ctx, other); err != nil {
			t.Fatal(err)
		}
		all, total, err := s.ListConfigs(ctx, org, "", 0, 50)
		if err != nil || total != 2 || len(all) != 2 || all[0].Slug != "pc-b-xyz" {
			t.Errorf("list all: %v %d %+v", err, total, all)
		}
		mine, total, _ := s.ListConfigs(ctx, org, res.WorkspaceID, 0, 50)
		if total != 1 || mine[0].Slug != c.Slug || mine[0].Version != 3 {
			t.Errorf("list workspace: %d %+v", total, mine)
		}

		// Delete removes the config and its versions; the slug is free again.
		del, err := s.DeleteConfig(ctx, org, c.Slug)
		if err != nil || del.ID != c.ID {
			t.Fatalf("delete: %v", err)
		}
		if _, err := s.Config(ctx, org, c.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("after delete: %v", err)
		}
		if _, _, err := s.ConfigVersions(ctx, org, c.ID, 0, 10); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("versions after delete: %v", err)
		}
		var n int
		if err := s.r.GetContext(ctx, &n, s.q(`SELECT COUNT(*) FROM config_versions WHERE config_id = ?`), c.ID); err != nil || n != 0 {
			t.Errorf("%d versions left, %v", n, err)
		}
		if _, err := s.DeleteConfig(ctx, org, c.Slug); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("second delete: %v", err)
		}
		again := &routing.StoredConfig{OrganisationID: org, Slug: c.Slug, Name: "Again", Config: []byte(`{}`)}
		if err := s.CreateConfig(ctx, again); err != nil {
			t.Errorf("slug not freed: %v", err)
		}
	})
}

// TestConfigConcurrentUpdates: concurrent PUTs each get a version of their
// own.
func TestConfigConcurrentUpdates(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := context.Background()
		c := &routing.StoredConfig{OrganisationID: res.OrganisationID, Slug: "pc-race", Name: "R", Config: []byte(`{}`)}
		if err := s.CreateConfig(ctx, c); err != nil {
			t.Fatal(err)
		}
		const n = 8
		errs := make(chan error, n)
		for i := range n {
			go func() {
				u := *c
				u.Config = []byte(fmt.Sprintf(`{"i":%d}`, i))
				errs <- s.UpdateConfig(ctx, &u)
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		got, _ := s.Config(ctx, res.OrganisationID, c.ID)
		_, total, _ := s.ConfigVersions(ctx, res.OrganisationID, c.ID, 0, 100)
		if got.Version != n+1 || total != n+1 {
			t.Errorf("version %d, %d versions; want %d", got.Version, total, n+1)
		}
	})
}

// TestLogAttempts: a record's attempts are stored with it (the attempts
// column of request_logs, added with saved configs).
func TestLogAttempts(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := context.Background()
		rec := &reqlog.Record{ID: newID(), OrganisationID: res.OrganisationID, WorkspaceID: res.WorkspaceID, APIKeyID: "k",
			RequestPath: "/v1/chat/completions", Method: "POST", StatusCode: 200, CreatedAt: time.Now().UTC(),
			Attempts: []reqlog.Attempt{
				{Target: "config.targets[0]", Provider: "openai", Status: 503, LatencyMS: 12.5, Error: "overloaded"},
				{Target: "config.targets[1]", Provider: "anthropic", Retry: 1, Status: 200, LatencyMS: 80},
			}}
		plain := &reqlog.Record{ID: newID(), OrganisationID: res.OrganisationID, WorkspaceID: res.WorkspaceID, APIKeyID: "k",
			RequestPath: "/v1/models", Method: "GET", StatusCode: 200, CreatedAt: time.Now().UTC()}
		if err := s.InsertLogs(ctx, []*reqlog.Record{rec, plain}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Log(ctx, res.OrganisationID, rec.ID)
		if err != nil || len(got.Attempts) != 2 || got.Attempts[0] != rec.Attempts[0] || got.Attempts[1] != rec.Attempts[1] {
			t.Errorf("attempts %+v, %v", got, err)
		}
		if got, _ := s.Log(ctx, res.OrganisationID, plain.ID); got.Attempts != nil {
			t.Errorf("attempts of a record without: %+v", got.Attempts)
		}
	})
}
