package store

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ai-gateway/gateway/internal/auth"
)

func TestVirtualKeyProviders(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		org, ws1 := res.OrganisationID, res.WorkspaceID
		ws2, err := s.CreateWorkspace(ctx, org, "team-b", "Team B")
		if err != nil {
			t.Fatal(err)
		}
		past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		for _, v := range []*auth.VirtualKey{
			{Slug: "oa-1", WorkspaceID: ws1, Provider: "openai"},
			{Slug: "oa-2", WorkspaceID: ws1, Provider: "openai", ExpiresAt: &future},
			{Slug: "ant", WorkspaceID: ws1, Provider: "anthropic"},
			{Slug: "revoked", WorkspaceID: ws1, Provider: "cohere", Status: auth.StatusRevoked},
			{Slug: "expired-status", WorkspaceID: ws1, Provider: "mistral-ai", Status: auth.StatusExpired},
			{Slug: "past-expiry", WorkspaceID: ws1, Provider: "groq", ExpiresAt: &past},
			{Slug: "gem", WorkspaceID: ws2, Provider: "google"},
		} {
			v.OrganisationID, v.Name, v.SealedKey = org, v.Slug, []byte("k")
			if err := s.CreateVirtualKey(ctx, v); err != nil {
				t.Fatalf("CreateVirtualKey(%s): %v", v.Slug, err)
			}
		}
		for _, tc := range []struct {
			name, org, ws string
			want          []string
		}{
			{"organisation", org, "", []string{"anthropic", "google", "openai"}},
			{"default workspace", org, ws1, []string{"anthropic", "openai"}},
			{"second workspace", org, ws2, []string{"google"}},
			{"other organisation", "no-such-org", "", []string{}},
			{"other organisation's workspace", "no-such-org", ws1, []string{}},
		} {
			got, err := s.VirtualKeyProviders(ctx, tc.org, tc.ws)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: VirtualKeyProviders (-want +got):\n%s", tc.name, diff)
			}
		}
	})
}
