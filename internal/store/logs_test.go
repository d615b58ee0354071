package store

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/reqlog"
)

// sampleRecord is a record with every field set.
func sampleRecord(org, ws string, at time.Time) *reqlog.Record {
	return &reqlog.Record{
		TraceID:        "trace-1",
		SpanID:         "span-2",
		ParentSpanID:   "span-1",
		SpanName:       "chat",
		Metadata:       map[string]string{"_user": "u-1", "team": "search"},
		OrganisationID: org,
		WorkspaceID:    ws,
		APIKeyID:       "0190f0f0-0000-7000-8000-000000000001",
		VirtualKey:     "openai-prod",
		Config:         "pc-routing",
		Provider:       "openai",
		Model:          "gpt-4o",
		ModelServed:    "gpt-4o-2024-08-06",
		RequestPath:    "/v1/chat/completions",
		Method:         "POST",
		StatusCode:     200,
		IsSuccess:      true,
		Stream:         true,
		ErrorMessage:   "",
		LatencyMS:      812.345,
		// Upstream + overhead = latency, as the gateway computes them.
		UpstreamLatencyMS: 800.001,
		OverheadMS:        12.344,
		TTFTMS:            150.5,
		Usage: llm.Usage{
			PromptTokens: 1200, CompletionTokens: 340, TotalTokens: 1540, CachedTokens: 1024, ReasoningTokens: 128, CacheWriteTokens: 64,
		},
		Cost:                0.0123456789,
		CacheStatus:         "MISS",
		RetryCount:          2,
		LastUsedOptionIndex: "config.targets[1]",
		RequestBody:         `{"model":"gpt-4o","messages":[{"role":"user","content":"hi ✓"}]}`,
		ResponseBody:        `{"id":"chatcmpl-1","choices":[]}`,
		CreatedAt:           at,
	}
}

func TestLogRoundTrip(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		at := time.Date(2025, 6, 7, 8, 9, 10, 123456789, time.FixedZone("CEST", 2*3600))
		rec := sampleRecord(res.OrganisationID, res.WorkspaceID, at)
		if err := s.InsertLogs(ctx, []*reqlog.Record{rec}); err != nil {
			t.Fatal(err)
		}
		if rec.ID == "" {
			t.Fatal("InsertLogs did not fill the id")
		}
		got, err := s.Log(ctx, res.OrganisationID, rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := *rec
		want.CreatedAt = at.UTC().Truncate(time.Microsecond)
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Errorf("Log (-want +got):\n%s", diff)
		}
		list, total, err := s.ListLogs(ctx, reqlog.Filter{OrganisationID: res.OrganisationID})
		if err != nil {
			t.Fatal(err)
		}
		if total != 1 || len(list) != 1 {
			t.Fatalf("ListLogs: %d records, total %d", len(list), total)
		}
		if diff := cmp.Diff(&want, list[0]); diff != "" {
			t.Errorf("ListLogs (-want +got):\n%s", diff)
		}

		// A minimal record: zero CreatedAt becomes now, empty metadata stays nil.
		bare := &reqlog.Record{OrganisationID: res.OrganisationID, TraceID: "t", RequestPath: "/v1/models", Method: "GET"}
		before := time.Now().Add(-time.Second)
		if err := s.InsertLogs(ctx, []*reqlog.Record{bare}); err != nil {
			t.Fatal(err)
		}
		got, err = s.Log(ctx, res.OrganisationID, bare.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.CreatedAt.Before(before) || got.Metadata != nil {
			t.Errorf("bare record read back as %+v", got)
		}

		if _, err := s.Log(ctx, "other-org", rec.ID); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("Log in another organisation = %v, want ErrNotFound", err)
		}
		if _, err := s.Log(ctx, res.OrganisationID, "nope"); !errors.Is(err, httpx.ErrNotFound) {
			t.Errorf("Log(unknown) = %v, want ErrNotFound", err)
		}
		// The same id twice is a conflict, and the failed batch leaves nothing.
		again := sampleRecord(res.OrganisationID, res.WorkspaceID, at)
		again.ID = rec.ID
		extra := sampleRecord(res.OrganisationID, res.WorkspaceID, at)
		if err := s.InsertLogs(ctx, []*reqlog.Record{extra, again}); !errors.Is(err, httpx.ErrConflict) {
			t.Errorf("duplicate id = %v, want ErrConflict", err)
		}
		if _, total, _ := s.ListLogs(ctx, reqlog.Filter{}); total != 2 {
			t.Errorf("after a failed batch: total %d, want 2", total)
		}
	})
}

func TestInsertLogsChunks(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		const n = 5000
		base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		recs := make([]*reqlog.Record, n)
		for i := range recs {
			recs[i] = &reqlog.Record{
				OrganisationID: res.OrganisationID, WorkspaceID: res.WorkspaceID, TraceID: fmt.Sprint("t-", i),
				Metadata:  map[string]string{"a": "1", "b": fmt.Sprint(i % 10), "c": "x"},
				CreatedAt: base.Add(time.Duration(i) * time.Millisecond),
			}
		}
		// Both tables need more than one statement, and more rows than one
		// statement may bind in SQLite, and a remainder that is not a power of
		// two.
		if n*len(logColumns) <= dialectSQLite.maxParams || n%maxBulkRows == 0 {
			t.Fatal("the test no longer exercises chunking")
		}
		if err := s.InsertLogs(ctx, recs); err != nil {
			t.Fatal(err)
		}
		// A power-of-two split keeps the statement cache small: at most one
		// statement per power of two up to maxBulkRows, per table.
		if got, limit := len(s.stmts), 2*(bits.Len(maxBulkRows)); got > limit {
			t.Errorf("%d cached statements, want at most %d", got, limit)
		}
		var logs, meta int
		if err := s.r.GetContext(ctx, &logs, "SELECT COUNT(*) FROM request_logs"); err != nil {
			t.Fatal(err)
		}
		if err := s.r.GetContext(ctx, &meta, "SELECT COUNT(*) FROM request_log_metadata"); err != nil {
			t.Fatal(err)
		}
		if logs != n || meta != 3*n {
			t.Errorf("rows: %d logs, %d metadata; want %d, %d", logs, meta, n, 3*n)
		}
		got, total, err := s.ListLogs(ctx, reqlog.Filter{OrganisationID: res.OrganisationID, Metadata: map[string]string{"b": "7"}, PageSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if total != n/10 || len(got) != n/10 {
			t.Errorf("metadata b=7: %d records, total %d; want %d", len(got), total, n/10)
		}
		if got[0].TraceID != "t-4997" {
			t.Errorf("newest b=7 record = %s, want t-4997", got[0].TraceID)
		}
	})
}

func TestListLogsFilters(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		org, ws := res.OrganisationID, res.WorkspaceID
		base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
		mk := func(name string, minute int, edit func(r *reqlog.Record)) *reqlog.Record {
			r := &reqlog.Record{
				ID: name, OrganisationID: org, WorkspaceID: ws, TraceID: "trace-a",
				Provider: "openai", Model: "gpt-4o", ModelServed: "gpt-4o-2024-08-06", StatusCode: 200,
				Metadata:  map[string]string{"env": "prod", "team": "search"},
				CreatedAt: base.Add(time.Duration(minute) * time.Minute),
			}
			if edit != nil {
				edit(r)
			}
			return r
		}
		recs := []*reqlog.Record{
			mk("r0", 0, nil),
			mk("r1", 1, func(r *reqlog.Record) { r.TraceID = "trace-b"; r.StatusCode = 429 }),
			mk("r2", 2, func(r *reqlog.Record) { r.Provider = "anthropic"; r.Model = "claude"; r.ModelServed = "claude-3-5" }),
			mk("r3", 3, func(r *reqlog.Record) {
				r.WorkspaceID = "ws-other"
				r.Metadata = map[string]string{"env": "dev", "team": "search"}
			}),
			mk("r4", 4, func(r *reqlog.Record) { r.Metadata = map[string]string{"env": "prod"} }),
			mk("r5", 5, func(r *reqlog.Record) { r.OrganisationID = "org-other" }),
			mk("r6", 6, func(r *reqlog.Record) { r.Model = "my-alias"; r.Metadata = nil }),
			mk("r7", 7, func(r *reqlog.Record) { r.TraceID = strings.Repeat("t", 300) }),
		}
		if err := s.InsertLogs(ctx, recs); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name string
			f    reqlog.Filter
			want []string
		}{
			{"all", reqlog.Filter{}, []string{"r7", "r6", "r5", "r4", "r3", "r2", "r1", "r0"}},
			{"organisation", reqlog.Filter{OrganisationID: org}, []string{"r7", "r6", "r4", "r3", "r2", "r1", "r0"}},
			{"workspace", reqlog.Filter{OrganisationID: org, WorkspaceID: "ws-other"}, []string{"r3"}},
			{"from", reqlog.Filter{OrganisationID: org, From: base.Add(4 * time.Minute)}, []string{"r7", "r6", "r4"}},
			{"to is exclusive", reqlog.Filter{OrganisationID: org, To: base.Add(2 * time.Minute)}, []string{"r1", "r0"}},
			{"range", reqlog.Filter{OrganisationID: org, From: base.Add(time.Minute), To: base.Add(3*time.Minute + time.Second)}, []string{"r3", "r2", "r1"}},
			{"trace", reqlog.Filter{OrganisationID: org, TraceID: "trace-b"}, []string{"r1"}},
			{"long trace is clipped alike", reqlog.Filter{TraceID: strings.Repeat("t", 300)}, []string{"r7"}},
			{"status", reqlog.Filter{OrganisationID: org, StatusCode: 429}, []string{"r1"}},
			{"provider", reqlog.Filter{OrganisationID: org, Provider: "anthropic"}, []string{"r2"}},
			{"model requested", reqlog.Filter{OrganisationID: org, Model: "claude"}, []string{"r2"}},
			{"model served", reqlog.Filter{OrganisationID: org, Model: "claude-3-5"}, []string{"r2"}},
			{"model alias", reqlog.Filter{OrganisationID: org, Model: "gpt-4o-2024-08-06"}, []string{"r7", "r6", "r4", "r3", "r1", "r0"}},
			{"metadata one key", reqlog.Filter{OrganisationID: org, Metadata: map[string]string{"env": "prod"}}, []string{"r7", "r4", "r2", "r1", "r0"}},
			{"metadata two keys", reqlog.Filter{OrganisationID: org, Metadata: map[string]string{"env": "prod", "team": "search"}}, []string{"r7", "r2", "r1", "r0"}},
			{"metadata no match", reqlog.Filter{OrganisationID: org, Metadata: map[string]string{"env": "staging"}}, nil},
			{"combined", reqlog.Filter{OrganisationID: org, Provider: "openai", StatusCode: 200, Metadata: map[string]string{"team": "search"},
				From: base.Add(time.Minute)}, []string{"r7", "r3"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, total, err := s.ListLogs(ctx, tt.f)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
					t.Errorf("ids (-want +got):\n%s", diff)
				}
				if total != len(tt.want) {
					t.Errorf("total = %d, want %d", total, len(tt.want))
				}
			})
		}
	})
}

func ids(recs []*reqlog.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.ID)
	}
	return out
}

func TestListLogsPagination(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
		var recs []*reqlog.Record
		var want []string // newest first
		for i := range 1100 {
			r := &reqlog.Record{ID: fmt.Sprintf("r%04d", i), OrganisationID: res.OrganisationID, CreatedAt: base.Add(time.Duration(i) * time.Second)}
			recs = append(recs, r)
			want = append([]string{r.ID}, want...)
		}
		// Two records with one timestamp are ordered by id, newest first.
		recs[1099].CreatedAt = recs[1098].CreatedAt
		if err := s.InsertLogs(ctx, recs); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			page, size int
			want       []string
		}{
			{0, 0, want[:50]},
			{1, 0, want[50:100]},
			{0, 10, want[:10]},
			{3, 10, want[30:40]},
			{-1, 10, want[:10]},
			{0, 5000, want[:1000]},
			{1, 1000, want[1000:]},
			{100, 50, nil},
		}
		for _, tt := range tests {
			got, total, err := s.ListLogs(ctx, reqlog.Filter{OrganisationID: res.OrganisationID, Page: tt.page, PageSize: tt.size})
			if err != nil {
				t.Fatal(err)
			}
			if total != 1100 {
				t.Errorf("page %d size %d: total %d, want 1100", tt.page, tt.size, total)
			}
			if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
				t.Errorf("page %d size %d: ids (-want +got):\n%s", tt.page, tt.size, diff)
			}
		}
	})
}

func TestMetadataClipping(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		long := strings.Repeat("k", 300)
		r := &reqlog.Record{OrganisationID: res.OrganisationID, Metadata: map[string]string{
			long + "a": "1", long + "b": "2", "v": strings.Repeat("é", 600),
		}}
		if err := s.InsertLogs(ctx, []*reqlog.Record{r}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Log(ctx, res.OrganisationID, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		// The JSON column keeps the metadata whole.
		if diff := cmp.Diff(r.Metadata, got.Metadata); diff != "" {
			t.Errorf("metadata (-want +got):\n%s", diff)
		}
		list, _, err := s.ListLogs(ctx, reqlog.Filter{Metadata: map[string]string{"v": strings.Repeat("é", 600)}})
		if err != nil || len(list) != 1 {
			t.Errorf("filter on a long value: %d records, %v", len(list), err)
		}
	})
}

// TestConcurrentInsertAndRead runs writers and readers at once: the single
// writer connection and WAL must keep "database is locked" away.
func TestConcurrentInsertAndRead(t *testing.T) {
	forEachBootstrapped(t, func(t *testing.T, s *Store, res BootstrapResult) {
		ctx := t.Context()
		const writers, batches, batchSize = 6, 15, 40
		var wg sync.WaitGroup
		errc := make(chan error, writers+4)
		done := make(chan struct{})
		for w := range writers {
			wg.Go(func() {
				for b := range batches {
					recs := make([]*reqlog.Record, batchSize)
					for i := range recs {
						recs[i] = sampleRecord(res.OrganisationID, res.WorkspaceID, time.Time{})
						recs[i].TraceID = fmt.Sprintf("w%d-b%d", w, b)
					}
					if err := s.InsertLogs(ctx, recs); err != nil {
						errc <- err
						return
					}
				}
			})
		}
		var readers sync.WaitGroup
		for range 4 {
			readers.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					if _, _, err := s.ListLogs(ctx, reqlog.Filter{OrganisationID: res.OrganisationID, Metadata: map[string]string{"team": "search"}}); err != nil {
						errc <- err
						return
					}
				}
			})
		}
		// A control-plane write in the middle of it.
		if _, err := s.Bootstrap(ctx, nil); err != nil {
			errc <- err
		}
		wg.Wait()
		close(done)
		readers.Wait()
		close(errc)
		for err := range errc {
			t.Error(err)
		}
		_, total, err := s.ListLogs(ctx, reqlog.Filter{OrganisationID: res.OrganisationID})
		if err != nil {
			t.Fatal(err)
		}
		if total != writers*batches*batchSize {
			t.Errorf("total = %d, want %d", total, writers*batches*batchSize)
		}
	})
}

// BenchmarkInsertLogs measures the log writer's hot path: batches of 256
// realistic records, on each database (a temp-file SQLite database, a
// PostgreSQL schema, a MySQL database).
func BenchmarkInsertLogs(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			s := migrate(b, be.open(b))
			res := bootstrap(b, s)
			ctx := b.Context()
			const batch = 256
			recs := make([]*reqlog.Record, batch)
			for i := range recs {
				recs[i] = sampleRecord(res.OrganisationID, res.WorkspaceID, time.Time{})
			}
			n := 0
			for b.Loop() {
				n++
				for _, r := range recs {
					r.ID = ""
					r.CreatedAt = time.Time{}
				}
				if err := s.InsertLogs(ctx, recs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*batch)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
