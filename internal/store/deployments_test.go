package store

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/registry"
)

// TestDeploymentCRUD is the store contract of deployments on every
// database: create, read by slug or id, update (slug included), conflicts,
// delete.
func TestDeploymentCRUD(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := context.Background()
		org := res.OrganisationID
		d := &registry.Deployment{
			OrganisationID: org, Slug: "prod-eu", Name: "Prod EU", Description: "Europe", Type: registry.DeploymentProduction,
			Config: []byte(`sealed:v1:abc`), WorkspaceIDs: []string{res.WorkspaceID},
			Limits: registry.DeploymentLimits{RateLimits: json.RawMessage(`[{"type":"requests","unit":"rpm","value":5}]`)},
		}
		if err := s.CreateDeployment(ctx, d); err != nil {
			t.Fatal(err)
		}
		if d.ID == "" || d.CreatedAt.IsZero() || !d.UpdatedAt.Equal(d.CreatedAt) {
			t.Fatalf("created %+v", d)
		}
		for _, key := range []string{d.Slug, d.ID} {
			got, err := s.Deployment(ctx, org, key)
			if err != nil {
				t.Fatalf("Deployment(%s): %v", key, err)
			}
			if diff := cmp.Diff(d, got); diff != "" {
				t.Errorf("Deployment(%s) (-want +got):\n%s", key, diff)
			}
		}
		if _, err := s.Deployment(ctx, "other-org", d.Slug); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("other organisation: %v", err)
		}
		dup := &registry.Deployment{OrganisationID: org, Slug: "prod-eu", Name: "Dup", Type: registry.DeploymentNonProduction}
		if err := s.CreateDeployment(ctx, dup); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("duplicate slug: %v", err)
		}
		// Another organisation may use the slug.
		if err := s.CreateDeployment(ctx, &registry.Deployment{OrganisationID: "org-2", Slug: "prod-eu", Name: "x", Type: registry.DeploymentProduction}); err != nil {
			t.Errorf("slug in another organisation: %v", err)
		}

		// A deployment without config, workspaces or limits reads back empty.
		dev := &registry.Deployment{OrganisationID: org, Slug: "dev", Name: "Dev", Type: registry.DeploymentNonProduction, ConfigRef: "pc-main"}
		if err := s.CreateDeployment(ctx, dev); err != nil {
			t.Fatal(err)
		}
		got, err := s.Deployment(ctx, org, "dev")
		if err != nil {
			t.Fatal(err)
		}
		if got.Config != nil || len(got.WorkspaceIDs) != 0 || got.Limits.RateLimits != nil || got.ConfigRef != "pc-main" {
			t.Errorf("empty fields read back as %+v", got)
		}

		// Update: every field, the slug included; a taken slug conflicts.
		upd := *d
		upd.Slug, upd.Name, upd.Description, upd.Type = "prod-europe", "Prod Europe", "", registry.DeploymentNonProduction
		upd.Config, upd.ConfigRef, upd.WorkspaceIDs = nil, "pc-other", nil
		upd.Limits = registry.DeploymentLimits{UsageLimits: json.RawMessage(`{"type":"cost","credit_limit":10,"current_usage":0}`)}
		if err := s.UpdateDeployment(ctx, &upd); err != nil {
			t.Fatal(err)
		}
		got, err = s.Deployment(ctx, org, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		upd.WorkspaceIDs = []string{}
		if diff := cmp.Diff(&upd, got); diff != "" {
			t.Errorf("after update (-want +got):\n%s", diff)
		}
		if _, err := s.Deployment(ctx, org, "prod-eu"); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("old slug still found: %v", err)
		}
		taken := *got
		taken.Slug = "dev"
		if err := s.UpdateDeployment(ctx, &taken); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("update to a taken slug: %v", err)
		}
		missing := registry.Deployment{ID: "nope", OrganisationID: org, Slug: "nope", Type: registry.DeploymentProduction}
		if err := s.UpdateDeployment(ctx, &missing); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("update unknown: %v", err)
		}

		// Delete returns the deployment and frees its slug.
		del, err := s.DeleteDeployment(ctx, org, "prod-europe")
		if err != nil || del.ID != d.ID {
			t.Fatalf("delete: %+v %v", del, err)
		}
		if _, err := s.Deployment(ctx, org, d.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("after delete: %v", err)
		}
		if _, err := s.DeleteDeployment(ctx, org, d.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("second delete: %v", err)
		}
		if err := s.CreateDeployment(ctx, &registry.Deployment{OrganisationID: org, Slug: "prod-europe", Name: "again", Type: registry.DeploymentProduction}); err != nil {
			t.Errorf("slug not freed: %v", err)
		}
	})
}

// TestDeploymentList: newest first, paginated, filtered by type and by
// the workspace served.
func TestDeploymentList(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := context.Background()
		org := res.OrganisationID
		ws2, err := s.CreateWorkspace(ctx, org, "team-b", "Team B")
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []*registry.Deployment{
			{Slug: "all-prod", Type: registry.DeploymentProduction},
			{Slug: "a-dev", Type: registry.DeploymentNonProduction, WorkspaceIDs: []string{res.WorkspaceID}},
			{Slug: "b-prod", Type: registry.DeploymentProduction, WorkspaceIDs: []string{ws2}},
			{Slug: "ab-prod", Type: registry.DeploymentProduction, WorkspaceIDs: []string{ws2, res.WorkspaceID}},
		} {
			d.OrganisationID, d.Name = org, d.Slug
			if err := s.CreateDeployment(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.CreateDeployment(ctx, &registry.Deployment{OrganisationID: "org-2", Slug: "elsewhere", Name: "x", Type: registry.DeploymentProduction}); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name      string
			f         registry.DeploymentFilter
			page      int
			size      int
			want      []string
			wantTotal int
		}{
			{"all", registry.DeploymentFilter{}, 0, 50, []string{"ab-prod", "b-prod", "a-dev", "all-prod"}, 4},
			{"page", registry.DeploymentFilter{}, 1, 3, []string{"all-prod"}, 4},
			{"production", registry.DeploymentFilter{Type: registry.DeploymentProduction}, 0, 50, []string{"ab-prod", "b-prod", "all-prod"}, 3},
			{"non-production", registry.DeploymentFilter{Type: registry.DeploymentNonProduction}, 0, 50, []string{"a-dev"}, 1},
			{"workspace b", registry.DeploymentFilter{WorkspaceID: ws2}, 0, 50, []string{"ab-prod", "b-prod", "all-prod"}, 3},
			{"default workspace, production", registry.DeploymentFilter{Type: registry.DeploymentProduction, WorkspaceID: res.WorkspaceID}, 0, 50, []string{"ab-prod", "all-prod"}, 2},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, total, err := s.ListDeployments(ctx, org, tt.f, tt.page, tt.size)
				if err != nil {
					t.Fatal(err)
				}
				slugs := make([]string, 0, len(got))
				for _, d := range got {
					slugs = append(slugs, d.Slug)
				}
				if diff := cmp.Diff(tt.want, slugs); diff != "" || total != tt.wantTotal {
					t.Errorf("total %d (want %d), slugs (-want +got):\n%s", total, tt.wantTotal, diff)
				}
			})
		}
	})
}
