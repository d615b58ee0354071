package store

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/registry"
)

func TestMCPIntegrationCRUD(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		never := registry.MCPMetadata{SyncStatus: registry.MCPSyncNever, Icons: []registry.MCPIcon{}}
		i := &registry.MCPIntegration{
			OrganisationID: res.OrganisationID, Slug: "weather", Name: "Weather", Description: "forecasts",
			URL: "https://mcp.example/mcp", Transport: registry.MCPTransportHTTP, AuthType: registry.MCPAuthHeaders,
			HeaderNames: []string{"Authorization"}, SealedHeaders: []byte{0, 1, 0xff},
			WorkspaceIDs: []string{res.WorkspaceID}, Tags: map[string]string{"team": "a"}, Metadata: never,
		}
		if err := s.CreateMCPIntegration(ctx, i); err != nil {
			t.Fatal(err)
		}
		if i.ID == "" || i.CreatedAt.IsZero() {
			t.Fatalf("CreateMCPIntegration did not fill defaults: %+v", i)
		}
		for _, key := range []string{i.Slug, i.ID} {
			got, err := s.MCPIntegration(ctx, res.OrganisationID, key)
			if err != nil {
				t.Fatalf("MCPIntegration(%q): %v", key, err)
			}
			if diff := cmp.Diff(i, got); diff != "" {
				t.Errorf("MCPIntegration(%q) (-want +got):\n%s", key, diff)
			}
		}
		if _, err := s.MCPIntegration(ctx, "other-org", i.Slug); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("MCPIntegration in another organisation = %v, want ErrNotFound", err)
		}
		dup := &registry.MCPIntegration{OrganisationID: res.OrganisationID, Slug: i.Slug, Transport: "http", AuthType: "none"}
		if err := s.CreateMCPIntegration(ctx, dup); !errors.Is(err, httpx.ErrConflict) {
			t.Fatalf("duplicate slug: %v, want ErrConflict", err)
		}

		// Sharing decides what a workspace's list shows.
		all := &registry.MCPIntegration{OrganisationID: res.OrganisationID, Slug: "everyone", Name: "Everyone",
			URL: "http://x", Transport: "sse", AuthType: "none", AllWorkspaces: true}
		other := &registry.MCPIntegration{OrganisationID: res.OrganisationID, Slug: "other", Name: "Other",
			URL: "http://y", Transport: "http", AuthType: "none", WorkspaceIDs: []string{"00000000-0000-0000-0000-000000000001"}}
		for _, x := range []*registry.MCPIntegration{all, other} {
			if err := s.CreateMCPIntegration(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
		slugs := func(ws string) []string {
			list, total, err := s.ListMCPIntegrations(ctx, res.OrganisationID, ws, 0, 50)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, x := range list {
				out = append(out, x.Slug)
			}
			if total != len(out) {
				t.Errorf("total %d for %d rows", total, len(out))
			}
			return out
		}
		if diff := cmp.Diff([]string{"other", "everyone", "weather"}, slugs("")); diff != "" {
			t.Errorf("organisation list (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"everyone", "weather"}, slugs(res.WorkspaceID)); diff != "" {
			t.Errorf("workspace list (-want +got):\n%s", diff)
		}

		i.Name, i.AllWorkspaces, i.WorkspaceIDs, i.Tags, i.HeaderNames, i.SealedHeaders = "Weather 2", true, []string{}, nil, []string{}, nil
		i.AuthType = registry.MCPAuthNone
		if err := s.UpdateMCPIntegration(ctx, i); err != nil {
			t.Fatal(err)
		}
		got, err := s.MCPIntegration(ctx, res.OrganisationID, i.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(i, got); diff != "" {
			t.Errorf("after update (-want +got):\n%s", diff)
		}
		other.Slug = "weather"
		if err := s.UpdateMCPIntegration(ctx, other); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("update to a taken slug: %v, want ErrConflict", err)
		}
		ghost := *i
		ghost.ID = "missing"
		if err := s.UpdateMCPIntegration(ctx, &ghost); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("update of a missing integration: %v, want ErrNotFound", err)
		}

		del, err := s.DeleteMCPIntegration(ctx, res.OrganisationID, "everyone")
		if err != nil || del.ID != all.ID {
			t.Fatalf("DeleteMCPIntegration = %v, %v", del, err)
		}
		if _, err := s.DeleteMCPIntegration(ctx, res.OrganisationID, "everyone"); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("second delete: %v, want ErrNotFound", err)
		}
	})
}

func TestMCPServerCRUDAndSync(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		i := &registry.MCPIntegration{OrganisationID: res.OrganisationID, Slug: "weather", Name: "Weather",
			URL: "http://mcp", Transport: "http", AuthType: "none", AllWorkspaces: true}
		if err := s.CreateMCPIntegration(ctx, i); err != nil {
			t.Fatal(err)
		}
		v := &registry.MCPServer{OrganisationID: res.OrganisationID, Slug: "weather-ws", Name: "Weather here",
			Description: "d", IntegrationID: i.ID, Metadata: registry.MCPMetadata{SyncStatus: registry.MCPSyncNever, Icons: []registry.MCPIcon{}}}
		if err := s.CreateMCPServer(ctx, v); err != nil {
			t.Fatal(err)
		}
		if v.ID == "" || v.WorkspaceID != res.WorkspaceID {
			t.Fatalf("CreateMCPServer did not fill defaults: %+v", v)
		}
		for _, key := range []string{v.Slug, v.ID} {
			got, err := s.MCPServer(ctx, res.OrganisationID, key)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(v, got); diff != "" {
				t.Errorf("MCPServer(%q) (-want +got):\n%s", key, diff)
			}
		}
		if err := s.CreateMCPServer(ctx, &registry.MCPServer{OrganisationID: res.OrganisationID, Slug: v.Slug, IntegrationID: i.ID}); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("duplicate slug: %v, want ErrConflict", err)
		}
		if _, err := s.DeleteMCPIntegration(ctx, res.OrganisationID, i.Slug); !errors.Is(err, httpx.ErrConflict) || !strings.Contains(err.Error(), "1 MCP server") {
			t.Errorf("deleting an integration in use: %v, want ErrConflict", err)
		}

		at := time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)
		md := registry.MCPMetadata{
			Title: "Weather", Description: "Forecasts", ServerName: "weather", ServerVersion: "1.0.0", ProtocolVersion: "2025-06-18",
			Icons:        []registry.MCPIcon{{Src: "data:image/png;base64," + strings.Repeat("A", 70<<10), MIMEType: "image/png", Sizes: []string{"48x48"}}},
			Capabilities: registry.MCPCapabilityFlags{Tools: true, Prompts: true},
			SyncStatus:   registry.MCPSyncSynced, LastSyncedAt: &at,
		}
		if err := s.RecordMCPSync(ctx, res.OrganisationID, v.ID, md); err != nil {
			t.Fatal(err)
		}
		got, err := s.MCPServer(ctx, res.OrganisationID, v.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(md, got.Metadata); diff != "" {
			t.Errorf("server metadata (-want +got):\n%s", diff)
		}
		if !got.UpdatedAt.Equal(v.UpdatedAt) {
			t.Errorf("a sync changed updated_at")
		}
		gi, err := s.MCPIntegration(ctx, res.OrganisationID, i.ID)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(md, gi.Metadata); diff != "" {
			t.Errorf("integration metadata (-want +got):\n%s", diff)
		}
		failed := md.Failed(at.Add(time.Minute), "connection refused")
		if err := s.RecordMCPSync(ctx, res.OrganisationID, v.ID, failed); err != nil {
			t.Fatal(err)
		}
		list, total, err := s.ListMCPServers(ctx, res.OrganisationID, res.WorkspaceID, 0, 10)
		if err != nil || total != 1 || len(list) != 1 {
			t.Fatalf("ListMCPServers = %v, %d, %v", list, total, err)
		}
		if diff := cmp.Diff(failed, list[0].Metadata); diff != "" {
			t.Errorf("listed metadata (-want +got):\n%s", diff)
		}
		if list, total, err := s.ListMCPServers(ctx, res.OrganisationID, "another-workspace", 0, 10); err != nil || total != 0 || len(list) != 0 {
			t.Errorf("another workspace's list = %v, %d, %v", list, total, err)
		}
		if err := s.RecordMCPSync(ctx, "other-org", v.ID, md); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("sync in another organisation: %v, want ErrNotFound", err)
		}

		got.Name, got.Description = "Renamed", ""
		if err := s.UpdateMCPServer(ctx, got); err != nil {
			t.Fatal(err)
		}
		again, err := s.MCPServer(ctx, res.OrganisationID, v.Slug)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(got, again); diff != "" {
			t.Errorf("after update (-want +got):\n%s", diff)
		}
		del, err := s.DeleteMCPServer(ctx, res.OrganisationID, v.Slug)
		if err != nil || del.ID != v.ID {
			t.Fatalf("DeleteMCPServer = %v, %v", del, err)
		}
		if _, err := s.MCPServer(ctx, res.OrganisationID, v.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("deleted server: %v, want ErrNotFound", err)
		}
		if _, err := s.DeleteMCPIntegration(ctx, res.OrganisationID, i.Slug); err != nil {
			t.Errorf("deleting an unused integration: %v", err)
		}
	})
}
