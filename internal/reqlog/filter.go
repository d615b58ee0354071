package reqlog

import (
	"context"
	"time"
)

// Filter selects records for GET /v1/logs. Zero fields do not filter.
type Filter struct {
	OrganisationID string
	WorkspaceID    string
	From, To       time.Time
	TraceID        string
	StatusCode     int
	Provider       string
	Model          string
	// Metadata matches records having every key with exactly that value.
	Metadata map[string]string
	// Page is 0-based; PageSize defaults to 50 and is at most 1000.
	Page, PageSize int
}

// Sink stores batches of records. The store satisfies it.
type Sink interface {
	InsertLogs(ctx context.Context, recs []*Record) error
}

// Reader reads stored records. Get returns an error wrapping
// httpx.ErrNotFound when no record has that id in the organisation.
type Reader interface {
	Log(ctx context.Context, organisationID, id string) (*Record, error)
	ListLogs(ctx context.Context, f Filter) (recs []*Record, total int, err error)
}
