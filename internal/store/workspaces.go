package store

import (
	"context"
	"fmt"

	"github.com/ai-gateway/gateway/internal/httpx"
)

// CreateWorkspace adds a (non-default) workspace to the organisation and
// returns its id. A taken slug wraps httpx.ErrConflict. Full workspace
// management (members, settings) arrives with the control-plane store.
func (s *Store) CreateWorkspace(ctx context.Context, organisationID, slug, name string) (string, error) {
	id := newID()
	now := micros(s.stamp())
	_, err := s.w.ExecContext(ctx, s.q(`INSERT INTO workspaces (id, organisation_id, slug, name, is_default, created_at, updated_at) VALUES (?, ?, ?, ?, 0, ?, ?)`),
		id, organisationID, slug, name, now, now)
	if isUniqueViolation(err) {
		return "", fmt.Errorf("workspace slug %q is taken: %w", slug, httpx.ErrConflict)
	}
	if err != nil {
		return "", fmt.Errorf("store: create workspace: %w", err)
	}
	return id, nil
}
