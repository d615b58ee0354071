package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
)

func TestVirtualKeyCRUD(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		exp := time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)
		v := &auth.VirtualKey{
			Slug:           "openai-prod",
			OrganisationID: res.OrganisationID,
			Name:           "OpenAI prod",
			Note:           "team budget",
			Provider:       "openai",
			SealedKey:      []byte{0, 1, 2, 0xff, 'x'},
			CustomHost:     "https://proxy.example/v1",
			Options:        map[string]string{"azure_resource_name": "r1"},
			UsageLimits:    []byte(`{"credit_limit":10}`),
			RateLimits:     []byte(`[{"type":"requests","unit":"rpm","value":5}]`),
			ExpiresAt:      &exp,
		}
		if err := s.CreateVirtualKey(ctx, v); err != nil {
			t.Fatal(err)
		}
		if v.ID == "" || v.WorkspaceID != res.WorkspaceID || v.Status != auth.StatusActive || v.CreatedAt.IsZero() {
			t.Fatalf("CreateVirtualKey did not fill defaults: %+v", v)
		}
		for _, key := range []string{v.Slug, v.ID} {
			got, err := s.VirtualKey(ctx, res.OrganisationID, key)
			if err != nil {
				t.Fatalf("VirtualKey(%q): %v", key, err)
			}
			if diff := cmp.Diff(v, got); diff != "" {
				t.Errorf("VirtualKey(%q) (-want +got):\n%s", key, diff)
			}
		}
		got, err := s.VirtualKeyBySlug(ctx, res.OrganisationID, v.Slug)
		if err != nil || got.ID != v.ID {
			t.Errorf("VirtualKeyBySlug = %v, %v", got, err)
		}
		if _, err := s.VirtualKey(ctx, "other-org", v.Slug); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("VirtualKey in another organisation = %v, want ErrNotFound", err)
		}

		dup := &auth.VirtualKey{Slug: v.Slug, OrganisationID: res.OrganisationID, Provider: "anthropic", SealedKey: []byte("k")}
		err = s.CreateVirtualKey(ctx, dup)
		if !errors.Is(err, httpx.ErrConflict) || !strings.Contains(err.Error(), v.Slug) {
			t.Fatalf("duplicate slug: %v, want ErrConflict naming the slug", err)
		}

		// Update: change fields, clear others.
		upd := *got
		upd.Name = "renamed"
		upd.Slug = "openai-main"
		upd.Options = nil
		upd.RateLimits = nil
		upd.ExpiresAt = nil
		upd.Status = auth.StatusRevoked
		before := upd.UpdatedAt
		time.Sleep(time.Millisecond)
		if err := s.UpdateVirtualKey(ctx, &upd); err != nil {
			t.Fatal(err)
		}
		if !upd.UpdatedAt.After(before) {
			t.Errorf("UpdatedAt not advanced: %v -> %v", before, upd.UpdatedAt)
		}
		got, err = s.VirtualKey(ctx, res.OrganisationID, "openai-main")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&upd, got); diff != "" {
			t.Errorf("after update (-want +got):\n%s", diff)
		}
		if _, err := s.VirtualKey(ctx, res.OrganisationID, "openai-prod"); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("old slug still found: %v", err)
		}
		missing := upd
		missing.ID = "00000000-0000-0000-0000-000000000000"
		if err := s.UpdateVirtualKey(ctx, &missing); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("update of unknown id = %v, want ErrNotFound", err)
		}

		// Renaming onto a taken slug conflicts.
		other := &auth.VirtualKey{Slug: "other", OrganisationID: res.OrganisationID, Provider: "openai", SealedKey: []byte("k")}
		if err := s.CreateVirtualKey(ctx, other); err != nil {
			t.Fatal(err)
		}
		other.Slug = "openai-main"
		if err := s.UpdateVirtualKey(ctx, other); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("rename onto a taken slug = %v, want ErrConflict", err)
		}

		deleted, err := s.DeleteVirtualKey(ctx, res.OrganisationID, "openai-main")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&upd, deleted); diff != "" {
			t.Errorf("DeleteVirtualKey returned (-want +got):\n%s", diff)
		}
		if _, err := s.VirtualKey(ctx, res.OrganisationID, upd.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("deleted key still found: %v", err)
		}
		if _, err := s.DeleteVirtualKey(ctx, res.OrganisationID, "openai-main"); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("second delete = %v, want ErrNotFound", err)
		}
		if _, err := s.DeleteVirtualKey(ctx, res.OrganisationID, other.ID); err != nil {
			t.Errorf("delete by id: %v", err)
		}
	})
}

func TestListVirtualKeys(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		// A second workspace in the same organisation.
		now := micros(time.Now())
		ws2 := newID()
		if _, err := s.w.ExecContext(ctx, s.q(`INSERT INTO workspaces (id, organisation_id, slug, name, is_default, created_at, updated_at)
			VALUES (?, ?, ?, ?, 0, ?, ?)`), ws2, res.OrganisationID, "second", "Second", now, now); err != nil {
			t.Fatal(err)
		}
		base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		var all []string // slugs, newest first
		for i := range 7 {
			ws := res.WorkspaceID
			if i%3 == 0 {
				ws = ws2
			}
			v := &auth.VirtualKey{
				Slug: fmt.Sprintf("vk-%d", i), OrganisationID: res.OrganisationID, WorkspaceID: ws,
				Provider: "openai", SealedKey: []byte("k"), CreatedAt: base.Add(time.Duration(i) * time.Minute),
			}
			if err := s.CreateVirtualKey(ctx, v); err != nil {
				t.Fatal(err)
			}
			all = append([]string{v.Slug}, all...)
		}
		slugs := func(vs []*auth.VirtualKey) []string {
			var out []string
			for _, v := range vs {
				out = append(out, v.Slug)
			}
			return out
		}
		tests := []struct {
			ws         string
			page, size int
			want       []string
			wantTotal  int
		}{
			{"", 0, 0, all, 7},
			{"", 0, 3, all[:3], 7},
			{"", 1, 3, all[3:6], 7},
			{"", 2, 3, all[6:], 7},
			{"", 3, 3, nil, 7},
			{ws2, 0, 50, []string{"vk-6", "vk-3", "vk-0"}, 3},
			{res.WorkspaceID, 1, 2, []string{"vk-2", "vk-1"}, 4},
		}
		for _, tt := range tests {
			got, total, err := s.ListVirtualKeys(ctx, res.OrganisationID, tt.ws, tt.page, tt.size)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, slugs(got)); diff != "" || total != tt.wantTotal {
				t.Errorf("ListVirtualKeys(ws=%q, page=%d, size=%d): total %d (want %d), slugs (-want +got):\n%s",
					tt.ws, tt.page, tt.size, total, tt.wantTotal, diff)
			}
		}
		got, total, err := s.ListVirtualKeys(ctx, "other-org", "", 0, 50)
		if err != nil || total != 0 || len(got) != 0 {
			t.Errorf("other organisation: %d keys, total %d, %v", len(got), total, err)
		}
	})
}
