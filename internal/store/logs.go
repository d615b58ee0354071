package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/reqlog"
)

// Widths of the request-log VARCHAR columns (see the migration). Values are
// clipped to them on insert, and filter values the same way, because a
// record must never be lost: PostgreSQL and strict MySQL would reject the
// whole batch over one long trace id, and SQLite would silently keep it,
// so without clipping the dialects would disagree.
const (
	widthID        = 36
	widthShort     = 255
	widthMethod    = 16
	widthStatus    = 32
	widthMetaKey   = 255
	widthMetaValue = 512
)

// logColumns are the request_logs columns in insert order; logArgs must
// follow it.
var logColumns = []string{
	"id", "organisation_id", "workspace_id", "api_key_id", "virtual_key", "config",
	"trace_id", "span_id", "parent_span_id", "span_name", "metadata",
	"provider", "model", "model_served", "request_path", "method",
	"status_code", "is_success", "is_streaming", "error_message",
	"latency_us", "upstream_latency_us", "overhead_us", "ttft_us",
	"prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens", "reasoning_tokens", "cache_write_tokens",
	"cost", "cache_status", "retry_count", "last_used_option_index", "attempts",
	"request_body", "response_body", "created_at",
}

var logColumnList = strings.Join(logColumns, ", ")

// logArgs appends r's column values to args, in logColumns order. Every
// string is made valid for every dialect: VARCHAR values are clipped to
// their width, TEXT values to maxText bytes (0: unclipped), and all are
// valid UTF-8 without NUL bytes (see cleanText).
func logArgs(args []any, r *reqlog.Record, metadata string, maxText int) []any {
	long := func(v string) string { return clipBytes(cleanText(v), maxText) }
	return append(args,
		r.ID, short(r.OrganisationID, widthID), short(r.WorkspaceID, widthID), short(r.APIKeyID, widthID),
		short(r.VirtualKey, widthShort), long(r.Config),
		short(r.TraceID, widthShort), short(r.SpanID, widthShort), short(r.ParentSpanID, widthShort), long(r.SpanName), metadata,
		short(r.Provider, widthShort), short(r.Model, widthShort), short(r.ModelServed, widthShort), long(r.RequestPath),
		short(r.Method, widthMethod),
		r.StatusCode, boolInt(r.IsSuccess), boolInt(r.Stream), long(r.ErrorMessage),
		msToMicros(r.LatencyMS), msToMicros(r.UpstreamLatencyMS), msToMicros(r.OverheadMS), msToMicros(r.TTFTMS),
		r.Usage.PromptTokens, r.Usage.CompletionTokens, r.Usage.TotalTokens, r.Usage.CachedTokens, r.Usage.ReasoningTokens, r.Usage.CacheWriteTokens,
		r.Cost, short(r.CacheStatus, widthStatus), r.RetryCount, short(r.LastUsedOptionIndex, widthShort), attemptsJSON(r.Attempts),
		long(r.RequestBody), long(r.ResponseBody), micros(r.CreatedAt),
	)
}

// short prepares a value for a VARCHAR(n) column or a comparison with one.
func short(v string, n int) string { return clip(cleanText(v), n) }

// cleanText returns s as valid UTF-8 without NUL bytes, replacing each
// invalid sequence and each NUL with U+FFFD. PostgreSQL rejects both in
// text, MySQL rejects invalid UTF-8, and SQLite would keep them: cleaning on
// every dialect keeps one record from failing a batch on some databases and
// the stored values the same on all. Bodies of requests the gateway logs
// are JSON, so this touches only what was not text to begin with.
func cleanText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// cleanMeta returns m with its keys and values cleaned (cleanText); m
// itself when that changes nothing. Keys that clean to the same key keep
// the first in byte order.
func cleanMeta(m map[string]string) map[string]string {
	clean := true
	for k, v := range m {
		if cleanText(k) != k || cleanText(v) != v {
			clean = false
			break
		}
	}
	if clean {
		return m
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(map[string]string, len(m))
	for _, k := range keys {
		ck := cleanText(k)
		if _, dup := out[ck]; !dup {
			out[ck] = cleanText(m[k])
		}
	}
	return out
}

// clipBytes shortens s to at most n bytes (n <= 0: no limit), cutting on a
// rune boundary.
func clipBytes(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// metaRow is one request_log_metadata row.
type metaRow struct{ logID, key, value string }

// InsertLogs stores a batch of records in one transaction, with multi-row
// INSERT statements chunked under the dialect's placeholder limit. Records
// without an ID get a UUIDv7 and records without CreatedAt get the current
// time; both are written back into the records.
func (s *Store) InsertLogs(ctx context.Context, recs []*reqlog.Record) error {
	if len(recs) == 0 {
		return nil
	}
	now := s.stamp()
	metadata := make([]string, len(recs))
	var meta []metaRow
	for i, r := range recs {
		if r.ID == "" {
			r.ID = newID()
		}
		if r.CreatedAt.IsZero() {
			r.CreatedAt = now
		}
		if len(r.Metadata) == 0 {
			continue
		}
		md := cleanMeta(r.Metadata)
		b, err := json.Marshal(md)
		if err != nil {
			return fmt.Errorf("store: insert logs: metadata: %w", err)
		}
		metadata[i] = string(b)
		meta = appendMetaRows(meta, r.ID, md)
	}

	args := make([]any, 0, len(recs)*len(logColumns))
	for i, r := range recs {
		args = logArgs(args, r, metadata[i], s.d.maxText)
	}
	metaArgs := make([]any, 0, 3*len(meta))
	for _, m := range meta {
		metaArgs = append(metaArgs, m.logID, m.key, m.value)
	}

	// The statements are prepared before the transaction starts: the
	// writer has one connection, and the transaction holds it.
	logStmts, err := s.bulkStmts(ctx, logInsert, len(recs))
	if err != nil {
		return fmt.Errorf("store: insert logs: prepare: %w", err)
	}
	metaStmts, err := s.bulkStmts(ctx, logMetaInsert, len(meta))
	if err != nil {
		return fmt.Errorf("store: insert logs: prepare: %w", err)
	}

	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: insert logs: %w", err)
	}
	defer rollback(tx)
	if err := execBulk(ctx, tx, logStmts, len(logColumns), args); err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("log record id: %w", httpx.ErrConflict)
		}
		return fmt.Errorf("store: insert logs: %w", err)
	}
	if err := execBulk(ctx, tx, metaStmts, 3, metaArgs); err != nil {
		return fmt.Errorf("store: insert logs: metadata: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: insert logs: commit: %w", err)
	}
	return nil
}

// bulkInsert describes a multi-row INSERT into one table.
type bulkInsert struct {
	table   string
	columns []string
}

var (
	logInsert     = bulkInsert{"request_logs", logColumns}
	logMetaInsert = bulkInsert{"request_log_metadata", []string{"log_id", "meta_key", "meta_value"}}
)

// maxBulkRows caps the rows of one INSERT statement. Larger statements
// save little and their prepared programs grow with every row.
const maxBulkRows = 256

// bulkStmt is one prepared multi-row INSERT and its number of rows.
type bulkStmt struct {
	stmt *sql.Stmt
	rows int
}

// bulkStmts returns the statements that insert rows rows into b.table, in
// order. Every statement has a power-of-two number of rows, at most
// maxBulkRows and within the dialect's placeholder limit, so that a batch of
// any size needs only a few distinct statements; these are prepared once on
// the writer connection and reused, because parsing a statement with
// thousands of placeholders costs about as much as running it.
func (s *Store) bulkStmts(ctx context.Context, b bulkInsert, rows int) ([]bulkStmt, error) {
	chunk := 1
	for chunk*2 <= maxBulkRows && chunk*2*len(b.columns) <= s.d.maxParams {
		chunk *= 2
	}
	var out []bulkStmt
	for left := rows; left > 0; left -= chunk {
		for chunk > left {
			chunk /= 2
		}
		st, err := s.bulkStmt(ctx, b, chunk)
		if err != nil {
			return nil, err
		}
		out = append(out, bulkStmt{st, chunk})
	}
	return out, nil
}

// bulkKey names a cached multi-row INSERT statement.
type bulkKey struct {
	table string
	rows  int
}

// bulkStmt returns the prepared INSERT of n rows into b.table.
func (s *Store) bulkStmt(ctx context.Context, b bulkInsert, n int) (*sql.Stmt, error) {
	key := bulkKey{b.table, n}
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st, ok := s.stmts[key]; ok {
		return st, nil
	}
	st, err := s.w.PrepareContext(ctx, s.q(multiRowInsert(b.table, b.columns, n)))
	if err != nil {
		return nil, err
	}
	if s.stmts == nil {
		s.stmts = make(map[bulkKey]*sql.Stmt)
	}
	s.stmts[key] = st
	return st, nil
}

// execBulk runs stmts in tx over args, ncol values per row.
func execBulk(ctx context.Context, tx *sqlx.Tx, stmts []bulkStmt, ncol int, args []any) error {
	off := 0
	for _, b := range stmts {
		n := b.rows * ncol
		if _, err := tx.StmtContext(ctx, b.stmt).ExecContext(ctx, args[off:off+n]...); err != nil {
			return err
		}
		off += n
	}
	return nil
}

// appendMetaRows appends the metadata md of record id as rows, clipped to
// the column widths. Two long keys that clip to the same prefix keep the
// first (in key order), so the primary key (log_id, meta_key) cannot fail
// the batch.
func appendMetaRows(rows []metaRow, id string, md map[string]string) []metaRow {
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	start := len(rows)
	for _, k := range keys {
		ck := clip(k, widthMetaKey)
		if ck != k && slices.ContainsFunc(rows[start:], func(m metaRow) bool { return m.key == ck }) {
			continue
		}
		rows = append(rows, metaRow{logID: id, key: ck, value: clip(md[k], widthMetaValue)})
	}
	return rows
}

// multiRowInsert builds "INSERT INTO table (columns) VALUES (?, ...), ..."
// with n rows.
func multiRowInsert(table string, columns []string, n int) string {
	group := "(" + strings.Repeat("?, ", len(columns)-1) + "?)"
	var b strings.Builder
	b.Grow(64 + len(table) + 24*len(columns) + n*(len(group)+2))
	b.WriteString("INSERT INTO ")
	b.WriteString(table)
	b.WriteString(" (")
	b.WriteString(strings.Join(columns, ", "))
	b.WriteString(") VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(group)
	}
	return b.String()
}

// logRow is a request_logs row as stored.
type logRow struct {
	ID                  string  `db:"id"`
	OrganisationID      string  `db:"organisation_id"`
	WorkspaceID         string  `db:"workspace_id"`
	APIKeyID            string  `db:"api_key_id"`
	VirtualKey          string  `db:"virtual_key"`
	Config              string  `db:"config"`
	TraceID             string  `db:"trace_id"`
	SpanID              string  `db:"span_id"`
	ParentSpanID        string  `db:"parent_span_id"`
	SpanName            string  `db:"span_name"`
	Metadata            string  `db:"metadata"`
	Provider            string  `db:"provider"`
	Model               string  `db:"model"`
	ModelServed         string  `db:"model_served"`
	RequestPath         string  `db:"request_path"`
	Method              string  `db:"method"`
	StatusCode          int     `db:"status_code"`
	IsSuccess           int     `db:"is_success"`
	IsStreaming         int     `db:"is_streaming"`
	ErrorMessage        string  `db:"error_message"`
	LatencyUS           int64   `db:"latency_us"`
	UpstreamLatencyUS   int64   `db:"upstream_latency_us"`
	OverheadUS          int64   `db:"overhead_us"`
	TTFTUS              int64   `db:"ttft_us"`
	PromptTokens        int     `db:"prompt_tokens"`
	CompletionTokens    int     `db:"completion_tokens"`
	TotalTokens         int     `db:"total_tokens"`
	CachedTokens        int     `db:"cached_tokens"`
	ReasoningTokens     int     `db:"reasoning_tokens"`
	CacheWriteTokens    int     `db:"cache_write_tokens"`
	Cost                float64 `db:"cost"`
	CacheStatus         string  `db:"cache_status"`
	RetryCount          int     `db:"retry_count"`
	LastUsedOptionIndex string  `db:"last_used_option_index"`
	RequestBody         string  `db:"request_body"`
	ResponseBody        string  `db:"response_body"`
	CreatedAt           int64   `db:"created_at"`

	// Attempts is JSON (see attemptsJSON); NULL in older rows.
	Attempts sql.NullString `db:"attempts"`
}

func (r *logRow) record() (*reqlog.Record, error) {
	rec := &reqlog.Record{
		ID:                r.ID,
		TraceID:           r.TraceID,
		SpanID:            r.SpanID,
		ParentSpanID:      r.ParentSpanID,
		SpanName:          r.SpanName,
		OrganisationID:    r.OrganisationID,
		WorkspaceID:       r.WorkspaceID,
		APIKeyID:          r.APIKeyID,
		VirtualKey:        r.VirtualKey,
		Config:            r.Config,
		Provider:          r.Provider,
		Model:             r.Model,
		ModelServed:       r.ModelServed,
		RequestPath:       r.RequestPath,
		Method:            r.Method,
		StatusCode:        r.StatusCode,
		IsSuccess:         r.IsSuccess != 0,
		Stream:            r.IsStreaming != 0,
		ErrorMessage:      r.ErrorMessage,
		LatencyMS:         microsToMS(r.LatencyUS),
		UpstreamLatencyMS: microsToMS(r.UpstreamLatencyUS),
		OverheadMS:        microsToMS(r.OverheadUS),
		TTFTMS:            microsToMS(r.TTFTUS),
		Usage: llm.Usage{
			PromptTokens:     r.PromptTokens,
			CompletionTokens: r.CompletionTokens,
			TotalTokens:      r.TotalTokens,
			CachedTokens:     r.CachedTokens,
			ReasoningTokens:  r.ReasoningTokens,
			CacheWriteTokens: r.CacheWriteTokens,
		},
		Cost:                r.Cost,
		CacheStatus:         r.CacheStatus,
		RetryCount:          r.RetryCount,
		LastUsedOptionIndex: r.LastUsedOptionIndex,
		RequestBody:         r.RequestBody,
		ResponseBody:        r.ResponseBody,
		CreatedAt:           fromMicros(r.CreatedAt),
	}
	if r.Metadata != "" {
		if err := json.Unmarshal([]byte(r.Metadata), &rec.Metadata); err != nil {
			return nil, fmt.Errorf("log %s: metadata: %w", r.ID, err)
		}
	}
	if r.Attempts.Valid && r.Attempts.String != "" {
		if err := json.Unmarshal([]byte(r.Attempts.String), &rec.Attempts); err != nil {
			return nil, fmt.Errorf("log %s: attempts: %w", r.ID, err)
		}
	}
	return rec, nil
}

// maxLoggedAttempts bounds the attempts stored with one record, so that the
// column stays within MySQL's TEXT; a plan makes far fewer in practice.
const maxLoggedAttempts = 64

// attemptsJSON encodes a record's attempts for the attempts column (NULL
// when there are none). Error texts are cleaned like every other string.
func attemptsJSON(as []reqlog.Attempt) sql.NullString {
	if len(as) == 0 {
		return sql.NullString{}
	}
	as = as[:min(len(as), maxLoggedAttempts)]
	clean := make([]reqlog.Attempt, len(as))
	for i, a := range as {
		a.Target, a.Provider, a.Error = short(a.Target, widthShort), short(a.Provider, widthShort), short(a.Error, widthShort)
		clean[i] = a
	}
	b, err := json.Marshal(clean)
	if err != nil {
		return sql.NullString{}
	}
	return sql.NullString{String: string(b), Valid: true}
}

// Log returns the organisation's record with id, or an error wrapping
// httpx.ErrNotFound.
func (s *Store) Log(ctx context.Context, organisationID, id string) (*reqlog.Record, error) {
	var rows []logRow
	err := s.r.SelectContext(ctx, &rows, s.q(`SELECT `+logColumnList+` FROM request_logs
		WHERE id = ? AND organisation_id = ?`), id, organisationID)
	if err != nil {
		return nil, fmt.Errorf("store: get log: %w", err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("log %q: %w", id, httpx.ErrNotFound)
	}
	rec, err := rows[0].record()
	if err != nil {
		return nil, fmt.Errorf("store: get log: %w", err)
	}
	return rec, nil
}

// ListLogs returns a page of the records matching f, newest first, and how
// many match in all.
func (s *Store) ListLogs(ctx context.Context, f reqlog.Filter) ([]*reqlog.Record, int, error) {
	where, args := logWhere(f)
	var total int
	if err := s.r.GetContext(ctx, &total, s.q(`SELECT COUNT(*) FROM request_logs l`+where), args...); err != nil {
		return nil, 0, fmt.Errorf("store: list logs: %w", err)
	}
	limit, offset := pageBounds(f.Page, f.PageSize)
	var rows []logRow
	err := s.r.SelectContext(ctx, &rows, s.q(`SELECT `+logColumnList+` FROM request_logs l`+where+`
		ORDER BY l.created_at DESC, l.id DESC LIMIT ? OFFSET ?`), append(args, limit, offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list logs: %w", err)
	}
	out, err := convertRows(rows, (*logRow).record)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list logs: %w", err)
	}
	return out, total, nil
}

// logWhere renders f as a WHERE clause over request_logs aliased l. Filter
// values are cleaned and clipped like the stored values they are compared
// with.
func logWhere(f reqlog.Filter) (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, a ...any) {
		conds = append(conds, cond)
		args = append(args, a...)
	}
	if f.OrganisationID != "" {
		add("l.organisation_id = ?", short(f.OrganisationID, widthID))
	}
	if f.WorkspaceID != "" {
		add("l.workspace_id = ?", short(f.WorkspaceID, widthID))
	}
	if !f.From.IsZero() {
		add("l.created_at >= ?", micros(f.From))
	}
	if !f.To.IsZero() {
		add("l.created_at < ?", micros(f.To))
	}
	if f.TraceID != "" {
		add("l.trace_id = ?", short(f.TraceID, widthShort))
	}
	if f.StatusCode != 0 {
		add("l.status_code = ?", f.StatusCode)
	}
	if f.Provider != "" {
		add("l.provider = ?", short(f.Provider, widthShort))
	}
	if f.Model != "" {
		m := short(f.Model, widthShort)
		add("(l.model = ? OR l.model_served = ?)", m, m)
	}
	// Sorted keys give the same SQL text for the same filter.
	keys := make([]string, 0, len(f.Metadata))
	for k := range f.Metadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		add("EXISTS (SELECT 1 FROM request_log_metadata m WHERE m.log_id = l.id AND m.meta_key = ? AND m.meta_value = ?)",
			short(k, widthMetaKey), short(f.Metadata[k], widthMetaValue))
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}
