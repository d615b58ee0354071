package store

import (
	"context"
	"fmt"

	"github.com/ai-gateway/gateway/internal/auth"
)

// VirtualKeyProviders returns the distinct providers, sorted, of the
// virtual keys of an organisation (of one of its workspaces when
// workspaceID is not "") that a request could use now: active and not past
// their expiry. GET /v1/models lists these providers' models.
func (s *Store) VirtualKeyProviders(ctx context.Context, organisationID, workspaceID string) ([]string, error) {
	query := `SELECT DISTINCT provider FROM virtual_keys
		WHERE organisation_id = ? AND status = ? AND (expires_at IS NULL OR expires_at > ?)`
	args := []any{organisationID, auth.StatusActive, micros(s.stamp())}
	if workspaceID != "" {
		query += ` AND workspace_id = ?`
		args = append(args, workspaceID)
	}
	out := []string{}
	if err := s.r.SelectContext(ctx, &out, s.q(query+` ORDER BY provider`), args...); err != nil {
		return nil, fmt.Errorf("store: virtual key providers: %w", err)
	}
	return out, nil
}
