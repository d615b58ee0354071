package auth

import "context"

// KeyStore is what auth needs from storage. Lookups that find nothing return
// an error wrapping httpx.ErrNotFound.
type KeyStore interface {
	// APIKeyByHash returns the key whose SHA-256 hex hash is hash.
	APIKeyByHash(ctx context.Context, hash string) (*APIKey, error)
	// DefaultWorkspaceID returns the organisation's default workspace.
	DefaultWorkspaceID(ctx context.Context, organisationID string) (string, error)
	// VirtualKeyBySlug returns the organisation's virtual key by slug or id.
	VirtualKeyBySlug(ctx context.Context, organisationID, slugOrID string) (*VirtualKey, error)
}
