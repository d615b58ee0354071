package store

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/registry"
)

func TestIntegrationCRUD(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		org := res.OrganisationID
		in := &registry.Integration{
			OrganisationID: org, Slug: "openai-prod", Name: "OpenAI prod", Description: "team budget",
			AIProvider: "openai", SealedKey: []byte{0, 1, 2, 0xff}, CustomHost: "https://proxy.example/v1",
			Options:     map[string]string{"azure_resource_name": "r1"},
			Tags:        map[string]string{"team": "search", "env": "prod"},
			RateLimits:  json.RawMessage(`[{"type":"requests","unit":"rpm","value":5}]`),
			UsageLimits: json.RawMessage(`{"type":"cost","credit_limit":10,"current_usage":0.5}`),
			Models:      []registry.IntegrationModel{{Slug: "gpt-4o", Enabled: true}, {Slug: "gpt-3.5", Enabled: false}},
			Access:      registry.WorkspaceAccess{Global: true},
		}
		if err := s.CreateIntegration(ctx, in); err != nil {
			t.Fatal(err)
		}
		if in.ID == "" || in.Status != registry.StatusActive || in.CreatedAt.IsZero() {
			t.Fatalf("CreateIntegration did not fill defaults: %+v", in)
		}
		for _, key := range []string{in.Slug, in.ID} {
			got, err := s.Integration(ctx, org, key)
			if err != nil {
				t.Fatalf("Integration(%q): %v", key, err)
			}
			if diff := cmp.Diff(in, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Integration(%q) (-want +got):\n%s", key, diff)
			}
		}
		if _, err := s.Integration(ctx, "other-org", in.Slug); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("Integration in another organisation = %v, want ErrNotFound", err)
		}
		dup := &registry.Integration{OrganisationID: org, Slug: in.Slug, AIProvider: "anthropic"}
		if err := s.CreateIntegration(ctx, dup); !errors.Is(err, httpx.ErrConflict) {
			t.Fatalf("duplicate slug: %v, want ErrConflict", err)
		}

		upd, _ := s.Integration(ctx, org, in.ID)
		upd.Name, upd.Tags, upd.RateLimits, upd.Status = "renamed", map[string]string{"team": "ads"}, nil, registry.StatusDisabled
		if err := s.UpdateIntegration(ctx, upd); err != nil {
			t.Fatal(err)
		}
		got, err := s.Integration(ctx, org, in.Slug)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(upd, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("after update (-want +got):\n%s", diff)
		}

		// Allow-list and sharing.
		ws2, err := s.CreateWorkspace(ctx, org, "team-b", "Team B")
		if err != nil {
			t.Fatal(err)
		}
		models := []registry.IntegrationModel{{Slug: "b", Enabled: true}, {Slug: "a", Enabled: false}}
		got, err = s.SetIntegrationModels(ctx, org, in.ID, models)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(models, got.Models); diff != "" {
			t.Errorf("models (-want +got):\n%s", diff)
		}
		if _, err := s.SetIntegrationModels(ctx, org, in.ID, []registry.IntegrationModel{{Slug: "x"}, {Slug: "x"}}); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("a model listed twice: %v, want ErrConflict", err)
		}
		got, err = s.SetIntegrationAccess(ctx, org, in.ID, registry.WorkspaceAccess{WorkspaceIDs: []string{ws2}})
		if err != nil {
			t.Fatal(err)
		}
		if got.Access.Global || !got.SharedWith(ws2) || got.SharedWith(res.WorkspaceID) {
			t.Errorf("access = %+v, want only %s", got.Access, ws2)
		}
		if _, err := s.SetIntegrationModels(ctx, org, "no-such-id", nil); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("models of unknown integration: %v, want ErrNotFound", err)
		}

		// A provider blocks deletion until it is gone.
		p := &registry.Provider{OrganisationID: org, WorkspaceID: ws2, IntegrationID: in.ID, Slug: "p1", Name: "P1"}
		if err := s.CreateProvider(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DeleteIntegration(ctx, org, in.Slug); !errors.Is(err, httpx.ErrConflict) {
			t.Fatalf("delete a used integration: %v, want ErrConflict", err)
		}
		if _, err := s.DeleteProvider(ctx, org, p.ID); err != nil {
			t.Fatal(err)
		}
		del, err := s.DeleteIntegration(ctx, org, in.Slug)
		if err != nil || del.ID != in.ID {
			t.Fatalf("DeleteIntegration = %v, %v", del, err)
		}
		if _, err := s.Integration(ctx, org, in.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("after delete: %v, want ErrNotFound", err)
		}
		if _, err := s.DeleteIntegration(ctx, org, in.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("second delete: %v, want ErrNotFound", err)
		}
	})
}

func TestProviderCRUD(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		org, ws1 := res.OrganisationID, res.WorkspaceID
		ws2, err := s.CreateWorkspace(ctx, org, "team-b", "Team B")
		if err != nil {
			t.Fatal(err)
		}
		in := &registry.Integration{OrganisationID: org, Slug: "i", Name: "I", AIProvider: "openai", Access: registry.WorkspaceAccess{Global: true}}
		if err := s.CreateIntegration(ctx, in); err != nil {
			t.Fatal(err)
		}
		p := &registry.Provider{
			OrganisationID: org, WorkspaceID: ws1, IntegrationID: in.ID, Slug: "openai-main", Name: "Main", Note: "n",
			Tags:        map[string]string{"team": "x"},
			RateLimits:  json.RawMessage(`[{"type":"tokens","unit":"rph","value":1000}]`),
			UsageLimits: json.RawMessage(`{"type":"tokens","credit_limit":5,"current_usage":1.25}`),
		}
		if err := s.CreateProvider(ctx, p); err != nil {
			t.Fatal(err)
		}
		// The same slug in another workspace is another provider.
		p2 := &registry.Provider{OrganisationID: org, WorkspaceID: ws2, IntegrationID: in.ID, Slug: "openai-main", Name: "Other"}
		if err := s.CreateProvider(ctx, p2); err != nil {
			t.Fatal(err)
		}
		dup := &registry.Provider{OrganisationID: org, WorkspaceID: ws1, IntegrationID: in.ID, Slug: "openai-main"}
		if err := s.CreateProvider(ctx, dup); !errors.Is(err, httpx.ErrConflict) {
			t.Fatalf("duplicate slug in a workspace: %v, want ErrConflict", err)
		}
		for _, tt := range []struct{ ws, key, want string }{
			{ws1, "openai-main", p.ID}, {ws2, "openai-main", p2.ID}, {ws1, p2.ID, p2.ID}, {ws2, p.ID, p.ID},
		} {
			got, err := s.Provider(ctx, org, tt.ws, tt.key)
			if err != nil || got.ID != tt.want {
				t.Errorf("Provider(%s, %s) = %v, %v; want %s", tt.ws, tt.key, got, err, tt.want)
			}
		}
		got, err := s.Provider(ctx, org, ws1, p.Slug)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(p, got); diff != "" {
			t.Errorf("Provider (-want +got):\n%s", diff)
		}
		for _, ws := range []string{ws1, "default"} {
			got, err := s.ProviderBySlug(ctx, org, ws, p.Slug)
			if err != nil || got.ID != p.ID {
				t.Errorf("ProviderBySlug(%s) = %v, %v", ws, got, err)
			}
		}
		if _, err := s.ProviderBySlug(ctx, org, "no-such-ws", p.Slug); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("ProviderBySlug in unknown workspace: %v", err)
		}
		if _, err := s.Provider(ctx, org, ws1, "nope"); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("unknown provider: %v", err)
		}

		got.Name, got.Tags, got.Status = "renamed", map[string]string{"team": "y", "env": "prod"}, registry.StatusDisabled
		if err := s.UpdateProvider(ctx, got); err != nil {
			t.Fatal(err)
		}
		again, _ := s.Provider(ctx, org, ws1, p.ID)
		if diff := cmp.Diff(got, again); diff != "" {
			t.Errorf("after update (-want +got):\n%s", diff)
		}
		if _, err := s.DeleteProvider(ctx, org, p.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DeleteProvider(ctx, org, p.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("second delete: %v", err)
		}
	})
}

func TestCatalogTagFilters(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		org, ws := res.OrganisationID, res.WorkspaceID
		ws2, err := s.CreateWorkspace(ctx, org, "team-b", "Team B")
		if err != nil {
			t.Fatal(err)
		}
		tags := map[string]map[string]string{
			"a": {"team": "x", "env": "prod"},
			"b": {"team": "x", "env": "dev"},
			"c": {"team": "y", "env": "prod"},
			"d": nil,
		}
		for _, slug := range []string{"a", "b", "c", "d"} {
			in := &registry.Integration{OrganisationID: org, Slug: slug, Name: slug, AIProvider: "openai", Tags: tags[slug],
				Access: registry.WorkspaceAccess{Global: slug != "c", WorkspaceIDs: []string{ws2}}}
			if err := s.CreateIntegration(ctx, in); err != nil {
				t.Fatal(err)
			}
			p := &registry.Provider{OrganisationID: org, WorkspaceID: ws, IntegrationID: in.ID, Slug: slug, Name: slug, Tags: tags[slug]}
			if err := s.CreateProvider(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		for _, tt := range []struct {
			name string
			f    registry.Filter
			want string
		}{
			{"none", registry.Filter{}, "a b c d"},
			{"one pair", registry.Filter{Tags: map[string]string{"team": "x"}}, "a b"},
			{"two pairs", registry.Filter{Tags: map[string]string{"team": "x", "env": "prod"}}, "a"},
			{"no match", registry.Filter{Tags: map[string]string{"team": "z"}}, ""},
			{"value of another key", registry.Filter{Tags: map[string]string{"env": "x"}}, ""},
			{"case matters", registry.Filter{Tags: map[string]string{"team": "X"}}, ""},
			{"paged", registry.Filter{Tags: map[string]string{"env": "prod"}, PageSize: 1, Page: 1}, "a"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				f := tt.f
				f.OrganisationID = org
				ins, total, err := s.ListIntegrations(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				if got := slugsOf(ins, func(i *registry.Integration) string { return i.Slug }); got != tt.want {
					t.Errorf("integrations = %q, want %q", got, tt.want)
				}
				ps, ptotal, err := s.ListProviders(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				if got := slugsOf(ps, func(p *registry.Provider) string { return p.Slug }); got != tt.want {
					t.Errorf("providers = %q, want %q", got, tt.want)
				}
				if total != ptotal || (f.PageSize == 0 && total != len(ins)) {
					t.Errorf("totals %d, %d for %d rows", total, ptotal, len(ins))
				}
			})
		}
		// Sharing narrows the integrations a workspace sees.
		ins, _, err := s.ListIntegrations(ctx, registry.Filter{OrganisationID: org, WorkspaceID: ws})
		if err != nil {
			t.Fatal(err)
		}
		if got := slugsOf(ins, func(i *registry.Integration) string { return i.Slug }); got != "a b d" {
			t.Errorf("integrations shared with the default workspace = %q", got)
		}
		ps, _, err := s.ListProviders(ctx, registry.Filter{OrganisationID: org, WorkspaceID: ws2})
		if err != nil || len(ps) != 0 {
			t.Errorf("providers of an empty workspace = %v, %v", ps, err)
		}
	})
}

// slugsOf joins the slugs of xs sorted by slug.
func slugsOf[T any](xs []T, slug func(T) string) string {
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		out = append(out, slug(x))
	}
	slices.Sort(out) // lists are newest first; compare as sets
	return strings.Join(out, " ")
}
