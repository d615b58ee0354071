package reqlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ai-gateway/gateway/internal/httpx"
)

// memSink stores records in memory; it can be made slow or failing.
type memSink struct {
	mu    sync.Mutex
	byID  map[string]*Record
	calls int
	delay time.Duration
	fail  atomic.Bool
}

func newMemSink() *memSink { return &memSink{byID: map[string]*Record{}} }

func (s *memSink) InsertLogs(ctx context.Context, recs []*Record) error {
	if s.delay > 0 {
		time.Sleep(s.delay)
	}
	if s.fail.Load() {
		return errors.New("database is down")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	for _, r := range recs {
		if _, dup := s.byID[r.ID]; dup {
			return fmt.Errorf("duplicate id %s: %w", r.ID, httpx.ErrConflict)
		}
		s.byID[r.ID] = r
	}
	return nil
}

func (s *memSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

type counter struct{ v atomic.Int64 }

func (c *counter) Add(f float64) { c.v.Add(int64(f * 1e6)) }

// TestWriterLosesNothingUnderBackpressure floods a small queue in front of
// a slow sink from many goroutines: every record is stored exactly once and
// the waits are counted.
func TestWriterLosesNothingUnderBackpressure(t *testing.T) {
	sink := newMemSink()
	sink.delay = 2 * time.Millisecond
	var waits, written counter
	w := NewWriter(sink, Options{QueueSize: 64, BatchSize: 32, FlushInterval: time.Millisecond, Counters: Counters{Waits: &waits, Written: &written}})
	const producers, each = 16, 500
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				if err := w.Enqueue(&Record{ID: fmt.Sprintf("%d-%d", p, i)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sink.count(); got != producers*each {
		t.Fatalf("stored %d records, want %d", got, producers*each)
	}
	if waits.v.Load() == 0 {
		t.Error("no backpressure wait was counted although the queue was far smaller than the load")
	}
	if written.v.Load()/1e6 != producers*each {
		t.Errorf("written counter = %d", written.v.Load()/1e6)
	}
	if w.Depth() != 0 {
		t.Errorf("depth after close = %d", w.Depth())
	}
	if err := w.Enqueue(&Record{ID: "late"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Enqueue after Close = %v, want ErrClosed", err)
	}
}

// TestWriterSpillsWhenSinkFailsAndReplays: a database outage does not block
// the data plane nor lose records: batches go to disk and are replayed.
func TestWriterSpillsWhenSinkFailsAndReplays(t *testing.T) {
	dir := t.TempDir()
	sink := newMemSink()
	sink.fail.Store(true)
	var dropped, errs counter
	w := NewWriter(sink, Options{BatchSize: 10, FlushInterval: time.Millisecond, Attempts: 2, SpillDir: dir, Counters: Counters{Dropped: &dropped, WriteErrors: &errs}})
	for i := range 25 {
		if err := w.Enqueue(&Record{ID: fmt.Sprint(i), Model: "m", CreatedAt: time.Unix(int64(i), 0).UTC()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sink.count() != 0 || dropped.v.Load() != 0 || errs.v.Load() == 0 {
		t.Fatalf("stored %d, dropped %d, errors %d", sink.count(), dropped.v.Load(), errs.v.Load())
	}
	files, _ := os.ReadDir(dir)
	if len(files) == 0 {
		t.Fatal("nothing spilled")
	}

	// Still down: replay keeps the files.
	if _, err := Replay(context.Background(), dir, sink); err == nil {
		t.Fatal("replay into a failing sink reported success")
	}
	sink.fail.Store(false)
	n, err := Replay(context.Background(), dir, sink)
	if err != nil || n != 25 || sink.count() != 25 {
		t.Fatalf("replay = %d, %v; stored %d", n, err, sink.count())
	}
	if got := sink.byID["7"]; got.Model != "m" || !got.CreatedAt.Equal(time.Unix(7, 0)) {
		t.Errorf("replayed record = %+v", got)
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("%d spill files left after replay", len(files))
	}

	// A file whose records are partly stored already (a replay that could
	// not remove its file) is replayed without duplicates.
	if err := Spill(dir, []*Record{{ID: "3"}, {ID: "new"}}); err != nil {
		t.Fatal(err)
	}
	if n, err := Replay(context.Background(), dir, sink); n != 1 || err != nil || sink.count() != 26 {
		t.Errorf("replay over stored records = %d, %v; stored %d", n, err, sink.count())
	}
	if n, err := Replay(context.Background(), t.TempDir()+"/absent", sink); n != 0 || err != nil {
		t.Errorf("replay of an absent dir = %d, %v", n, err)
	}
}

// TestWriterRetriesWithoutSpillDir: with no spill directory a failing batch
// is retried until the sink recovers.
func TestWriterRetriesWithoutSpillDir(t *testing.T) {
	sink := newMemSink()
	sink.fail.Store(true)
	w := NewWriter(sink, Options{BatchSize: 5, FlushInterval: time.Millisecond})
	for i := range 5 {
		w.Enqueue(&Record{ID: fmt.Sprint(i)})
	}
	time.Sleep(150 * time.Millisecond)
	sink.fail.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if sink.count() != 5 {
		t.Fatalf("stored %d of 5 after the sink recovered", sink.count())
	}
}

type discardSink struct{ n atomic.Int64 }

func (d *discardSink) InsertLogs(_ context.Context, recs []*Record) error {
	d.n.Add(int64(len(recs)))
	return nil
}

// BenchmarkEnqueue measures what a request pays to hand its record over.
func BenchmarkEnqueue(b *testing.B) {
	w := NewWriter(&discardSink{}, Options{})
	rec := &Record{ID: "x"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			w.Enqueue(rec)
		}
	})
	b.StopTimer()
	w.Close(context.Background())
}
