package reqlog

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ai-gateway/gateway/internal/httpx"
)

// Adder and Observer are the metric shapes the writer reports to
// (prometheus.Counter and prometheus.Histogram satisfy them).
type (
	Adder    interface{ Add(float64) }
	Observer interface{ Observe(float64) }
)

// Counters receives the writer's figures. Nil fields are not reported.
type Counters struct {
	Waits        Adder    // enqueues that found the queue full
	WaitSeconds  Adder    // time spent waiting for room
	Written      Adder    // records stored
	Dropped      Adder    // records neither stored nor spilled
	WriteErrors  Adder    // failed batch attempts
	BatchSeconds Observer // time per stored batch
}

// Options tune a Writer. Zero values take the defaults.
type Options struct {
	QueueSize     int           // default 16384
	BatchSize     int           // default 512
	FlushInterval time.Duration // default 100ms
	// Attempts is how many times a batch is tried before it is spilled to
	// SpillDir (default 3).
	Attempts int
	// SpillDir receives batches the sink refused (JSON lines), replayed
	// into the sink later; empty disables spilling, so failed batches are
	// retried until Close.
	SpillDir string
	Counters Counters
	Logger   *slog.Logger
}

// Writer is the bounded queue in front of the sink. Enqueue never drops a
// record: when the queue is full the caller waits for room.
//
// Records collect in a buffer under a mutex; the writer goroutine is woken
// only when a batch is full or on its flush tick, so handing over a record
// costs a lock and an append, not a goroutine wake-up per request.
type Writer struct {
	sink Sink
	opt  Options
	log  *slog.Logger

	mu      sync.Mutex
	room    *sync.Cond // signalled when the writer takes the buffer
	buf     []*Record
	spare   []*Record
	closed  bool
	waiting int // producers blocked for room

	kick  chan struct{} // a full batch, or Close
	done  chan struct{}
	depth atomic.Int64 // records accepted and not yet stored
}

// NewWriter starts a writer draining into sink. Call Close to flush.
func NewWriter(sink Sink, opt Options) *Writer {
	if opt.QueueSize <= 0 {
		opt.QueueSize = 16384
	}
	if opt.BatchSize <= 0 {
		opt.BatchSize = 512
	}
	opt.BatchSize = min(opt.BatchSize, opt.QueueSize)
	if opt.FlushInterval <= 0 {
		opt.FlushInterval = 100 * time.Millisecond
	}
	if opt.Attempts <= 0 {
		opt.Attempts = 3
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	w := &Writer{
		sink: sink, opt: opt, log: opt.Logger,
		buf: make([]*Record, 0, opt.BatchSize), spare: make([]*Record, 0, opt.BatchSize),
		kick: make(chan struct{}, 1), done: make(chan struct{}),
	}
	w.room = sync.NewCond(&w.mu)
	go w.run()
	return w
}

// ErrClosed is returned by Enqueue after Close.
var ErrClosed = errors.New("reqlog: writer closed")

// Enqueue hands rec to the writer. It returns at once when the queue has
// room; otherwise it waits (backpressure) and the wait is counted.
func (w *Writer) Enqueue(rec *Record) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	if len(w.buf) >= w.opt.QueueSize {
		start := time.Now()
		w.waiting++
		for len(w.buf) >= w.opt.QueueSize {
			w.wake()
			w.room.Wait()
		}
		w.waiting--
		add(w.opt.Counters.Waits, 1)
		add(w.opt.Counters.WaitSeconds, time.Since(start).Seconds())
	}
	w.buf = append(w.buf, rec)
	full := len(w.buf) == w.opt.BatchSize
	w.mu.Unlock()
	w.depth.Add(1)
	if full {
		w.wake()
	}
	return nil
}

func (w *Writer) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Depth is the number of records not yet stored.
func (w *Writer) Depth() int { return int(w.depth.Load()) }

// Close stops accepting records and returns once every queued record is
// stored or spilled, or when ctx ends.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.wake()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("reqlog: %d records still queued at shutdown deadline: %w", w.Depth(), ctx.Err())
	}
}

func (w *Writer) run() {
	defer close(w.done)
	tick := time.NewTicker(w.opt.FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-w.kick:
		case <-tick.C:
		}
		for {
			w.mu.Lock()
			batch := w.buf
			w.buf, w.spare = w.spare[:0], nil
			last := w.closed && len(batch) == 0 && w.waiting == 0
			w.mu.Unlock()
			w.room.Broadcast()
			if last {
				return
			}
			if len(batch) == 0 {
				break
			}
			for i := 0; i < len(batch); i += w.opt.BatchSize {
				part := batch[i:min(i+w.opt.BatchSize, len(batch))]
				w.store(part)
				w.depth.Add(-int64(len(part)))
			}
			clear(batch)
			w.mu.Lock()
			w.spare = batch[:0]
			w.mu.Unlock()
		}
	}
}

// store writes one batch, retrying with backoff, then spills it to disk.
// Without a spill directory it retries until it succeeds, so the queue
// fills and requests wait rather than lose records.
func (w *Writer) store(batch []*Record) {
	backoff := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := w.sink.InsertLogs(ctx, batch)
		cancel()
		if err == nil {
			observe(w.opt.Counters.BatchSeconds, time.Since(start).Seconds())
			add(w.opt.Counters.Written, float64(len(batch)))
			return
		}
		add(w.opt.Counters.WriteErrors, 1)
		w.log.Warn("request log batch not stored", "records", len(batch), "attempt", attempt, "err", err)
		if attempt >= w.opt.Attempts && w.opt.SpillDir != "" {
			if serr := Spill(w.opt.SpillDir, batch); serr != nil {
				w.log.Error("request log batch lost: neither stored nor spilled", "records", len(batch), "err", serr)
				add(w.opt.Counters.Dropped, float64(len(batch)))
			} else {
				w.log.Warn("request log batch spilled to disk for later replay", "records", len(batch), "dir", w.opt.SpillDir)
			}
			return
		}
		time.Sleep(backoff)
		backoff = min(backoff*2, 5*time.Second)
	}
}

const spillPrefix, spillSuffix = "reqlog-", ".jsonl"

// Spill writes recs as JSON lines to a new file in dir (atomically: temp
// file, fsync, rename).
func Spill(dir string, recs []*Record) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".spill-*")
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	enc := json.NewEncoder(bw)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			f.Close()
			os.Remove(f.Name())
			return err
		}
	}
	if err := bw.Flush(); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	name := filepath.Join(dir, fmt.Sprintf("%s%020d%s", spillPrefix, time.Now().UnixNano(), spillSuffix))
	return os.Rename(f.Name(), name)
}

// Replay stores every spilled file in dir into sink, oldest first, removing
// each file once stored. It returns how many records it stored.
func Replay(ctx context.Context, dir string, sink Sink) (int, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); strings.HasPrefix(n, spillPrefix) && strings.HasSuffix(n, spillSuffix) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	total := 0
	for _, n := range names {
		path := filepath.Join(dir, n)
		recs, err := readSpill(path)
		if err != nil {
			return total, fmt.Errorf("reqlog: read %s: %w", path, err)
		}
		n, err := insertSkippingStored(ctx, sink, recs)
		if err != nil {
			return total, fmt.Errorf("reqlog: replay %s: %w", path, err)
		}
		total += n
		if err := os.Remove(path); err != nil {
			return total, err
		}
	}
	return total, nil
}

// insertSkippingStored inserts recs; when the batch conflicts with records
// already stored (a replay that stored a file but could not remove it), it
// inserts them one by one and skips those that are there.
func insertSkippingStored(ctx context.Context, sink Sink, recs []*Record) (int, error) {
	err := sink.InsertLogs(ctx, recs)
	if err == nil {
		return len(recs), nil
	}
	if !errors.Is(err, httpx.ErrConflict) {
		return 0, err
	}
	n := 0
	for _, r := range recs {
		err := sink.InsertLogs(ctx, []*Record{r})
		switch {
		case err == nil:
			n++
		case errors.Is(err, httpx.ErrConflict):
		default:
			return n, err
		}
	}
	return n, nil
}

func readSpill(path string) ([]*Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var recs []*Record
	dec := json.NewDecoder(bufio.NewReader(f))
	for dec.More() {
		r := new(Record)
		if err := dec.Decode(r); err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

func add(a Adder, v float64) {
	if a != nil {
		a.Add(v)
	}
}

func observe(o Observer, v float64) {
	if o != nil {
		o.Observe(v)
	}
}
