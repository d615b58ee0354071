package store

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"
)

// slugged is a row with a slug column.
type slugged interface{ slugValue() string }

func (r *configRow) slugValue() string     { return r.Slug }
func (r *virtualKeyRow) slugValue() string { return r.Slug }
func (r *workspaceRow) slugValue() string  { return r.Slug }

// bySlugOrID reads the organisation's row of table whose slug or id is
// key. Resources addressed by slug accept the id too (API.md §2); when one
// row's slug equals another's id, the slug match wins. It returns
// sql.ErrNoRows when neither matches.
func bySlugOrID[R any, P interface {
	*R
	slugged
}](ctx context.Context, s *Store, db sqlx.QueryerContext, table, columns, organisationID, key string) (*R, error) {
	var rows []R
	err := sqlx.SelectContext(ctx, db, &rows, s.q(`SELECT `+columns+` FROM `+table+`
		WHERE organisation_id = ? AND (slug = ? OR id = ?) LIMIT 2`), organisationID, key, key)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, sql.ErrNoRows
	}
	pick := &rows[0]
	for i := range rows {
		if P(&rows[i]).slugValue() == key {
			pick = &rows[i]
		}
	}
	return pick, nil
}

// selectPage counts the rows of table matching where and reads one page of
// them (Page 0-based; PageSize bounded by pageBounds) in order into rows.
func selectPage[R any](ctx context.Context, s *Store, rows *[]R, table, columns, where string, args []any, order string, page, pageSize int) (total int, err error) {
	if err := s.r.GetContext(ctx, &total, s.q(`SELECT COUNT(*) FROM `+table+` WHERE `+where), args...); err != nil {
		return 0, err
	}
	limit, offset := pageBounds(page, pageSize)
	err = s.r.SelectContext(ctx, rows, s.q(`SELECT `+columns+` FROM `+table+` WHERE `+where+`
		ORDER BY `+order+` LIMIT ? OFFSET ?`), append(args, limit, offset)...)
	return total, err
}

// convertRows turns scanned rows into records with conv, stopping at the
// first row that does not convert.
func convertRows[R, T any](rows []R, conv func(*R) (T, error)) ([]T, error) {
	out := make([]T, 0, len(rows))
	for i := range rows {
		v, err := conv(&rows[i])
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// inWorkspace is the WHERE clause and arguments that select an
// organisation's rows, of one workspace unless workspaceID is empty.
func inWorkspace(organisationID, workspaceID string) (string, []any) {
	if workspaceID == "" {
		return `organisation_id = ?`, []any{organisationID}
	}
	return `organisation_id = ? AND workspace_id = ?`, []any{organisationID, workspaceID}
}
