// Package loadtest generates HTTP load and summarises the latencies it
// sees: an open-loop schedule (requests are due at fixed times whatever
// happened to earlier ones, so a slow server cannot slow the generator down
// and hide its own queueing, the "coordinated omission" wrk2 avoids), a
// closed loop of back-to-back workers for maximum throughput, and
// nearest-rank percentiles.
//
// loadtest imports no other internal package: it knows nothing about the
// gateway, only about a function that sends one request.
package loadtest

import (
	"context"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Summary describes a set of latencies.
type Summary struct {
	Count              int
	Mean               time.Duration
	P50, P90, P99, Max time.Duration
}

// Percentile returns the nearest-rank p-th percentile (0 ≤ p ≤ 100) of
// sorted, which must be in ascending order: the smallest sample such that
// at least p per cent of the samples are less than or equal to it. It is
// always one of the samples, never an interpolation, and 0 for no samples.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	// p*n before the division keeps whole ranks exact (90*10/100 is 9,
	// where 0.9*10 need not be).
	rank := int(math.Ceil(p * float64(n) / 100))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// Summarize sorts samples in place and summarises them.
func Summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, d := range samples {
		sum += d
	}
	return Summary{
		Count: len(samples),
		Mean:  sum / time.Duration(len(samples)),
		P50:   Percentile(samples, 50),
		P90:   Percentile(samples, 90),
		P99:   Percentile(samples, 99),
		Max:   samples[len(samples)-1],
	}
}

// Schedule is an open-loop send schedule: request i is due at
// Start + i×Interval.
type Schedule struct {
	Start    time.Time
	Interval time.Duration
}

// NewSchedule returns the schedule of rate requests per second from start.
func NewSchedule(start time.Time, rate float64) Schedule {
	return Schedule{Start: start, Interval: max(time.Duration(float64(time.Second)/rate), 1)}
}

// At is the time request i is due.
func (s Schedule) At(i int64) time.Time { return s.Start.Add(time.Duration(i) * s.Interval) }

// Due is how many requests are due at now (At(i) ≤ now): the index of the
// first request still in the future.
func (s Schedule) Due(now time.Time) int64 {
	if now.Before(s.Start) {
		return 0
	}
	return int64(now.Sub(s.Start)/s.Interval) + 1
}

// Before is how many requests are due strictly before t.
func (s Schedule) Before(t time.Time) int64 {
	d := t.Sub(s.Start)
	if d <= 0 {
		return 0
	}
	return int64((d + s.Interval - 1) / s.Interval)
}

// Result is what one run measured, warm-up excluded.
type Result struct {
	// Latency summarises successful requests: from the scheduled send time
	// (open loop) or the actual send time (closed loop) to the last byte
	// of the response body.
	Latency Summary
	// Lag summarises, in an open loop, how late requests actually left
	// compared with their schedule: the generator's own accuracy, and the
	// queueing when every in-flight slot is taken.
	Lag Summary
	// OK and Errors count measured requests; Missed counts scheduled
	// requests never sent because the run's deadline came first.
	OK, Errors, Missed int
	// Window is the measurement time: the run's duration, or longer when
	// answers to requests sent within it trailed past its end.
	Window time.Duration
	// Rate is successful responses per second over Window.
	Rate float64
	// ErrorSamples holds the first few distinct error messages.
	ErrorSamples []string
}

// Do sends one request and returns nil when the answer is a success.
type Do func(ctx context.Context) error

// OpenLoop tunes RunOpenLoop.
type OpenLoop struct {
	Rate     float64       // requests per second
	Warmup   time.Duration // sent at the same rate but not measured
	Duration time.Duration // measured
	// MaxInFlight bounds the requests outstanding at once (default 512):
	// when all are taken, due requests wait and the wait counts in their
	// latency.
	MaxInFlight int
	// Grace is how long past the end of the schedule due requests may
	// still be sent (default 5 s); later ones are counted as Missed.
	Grace time.Duration
}

// RunOpenLoop sends requests on a fixed schedule. A dispatcher sleeps on a
// high-resolution timer until each due time and hands every due request,
// stamped with its scheduled time, to a pool of MaxInFlight workers;
// latency is measured from the scheduled time, so a server that stalls is
// charged for every request it delayed.
func RunOpenLoop(ctx context.Context, o OpenLoop, do Do) Result {
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 512
	}
	if o.Grace <= 0 {
		o.Grace = 5 * time.Second
	}
	sched := NewSchedule(time.Now().Add(time.Millisecond), o.Rate)
	from := sched.Start.Add(o.Warmup)
	end := from.Add(o.Duration)
	first, total := sched.Before(from), sched.Before(end)

	type job struct {
		i  int64
		at time.Time
	}
	jobs := make(chan job)
	errs := newErrorLog(5)
	var wg sync.WaitGroup
	workers := make([]worker, o.MaxInFlight)
	for w := range workers {
		wk := &workers[w]
		wg.Go(func() {
			for j := range jobs {
				sent := time.Now()
				err := do(ctx)
				done := time.Now()
				if j.i < first {
					continue
				}
				wk.last = max(wk.last, done.Sub(from))
				if err != nil {
					wk.errors++
					errs.note(err)
					continue
				}
				wk.lat = append(wk.lat, done.Sub(j.at))
				wk.lag = append(wk.lag, sent.Sub(j.at))
			}
		})
	}

	var missed int64
	hardStop := end.Add(o.Grace)
	next := int64(0)
dispatch:
	for next < total {
		if ctx.Err() != nil || !time.Now().Before(hardStop) {
			break
		}
		if d := time.Until(sched.At(next)); d > 0 {
			// Slices of at most 20 ms keep ctx and the deadline checked
			// at low rates.
			sleep(min(d, 20*time.Millisecond))
			continue
		}
		due := min(sched.Due(time.Now()), total)
		sent := next
		for ; next < due; next++ {
			j := job{i: next, at: sched.At(next)}
			select {
			case jobs <- j:
				continue
			default:
			}
			// No worker is free: wait for one, still within bounds.
			// The wait is charged to the request, whose latency counts
			// from j.at.
			wait := time.NewTimer(time.Until(hardStop))
			select {
			case jobs <- j:
				wait.Stop()
			case <-wait.C:
				break dispatch
			case <-ctx.Done():
				wait.Stop()
				break dispatch
			}
		}
		if next > sent {
			// The workers just handed requests are queued on this
			// goroutine's P, which a sleep in a system call would hold:
			// let them start first.
			runtime.Gosched()
		}
	}
	if next < total {
		missed = total - max(next, first)
	}
	close(jobs)
	wg.Wait()

	r := finish(workers, errs, o.Duration)
	r.Missed = int(missed)
	return r
}

// ClosedLoop tunes RunClosedLoop.
type ClosedLoop struct {
	Concurrency int           // workers, each with one request outstanding
	Warmup      time.Duration // not measured
	Duration    time.Duration // measured
}

// RunClosedLoop runs Concurrency workers that each send the next request as
// soon as the previous one is answered, for Warmup+Duration. Requests sent
// within the measured window count, however long they take: a stall past
// the end of the window lengthens Window (and so lowers Rate) and shows in
// the latency, instead of hiding in requests nobody counted.
func RunClosedLoop(ctx context.Context, o ClosedLoop, do Do) Result {
	start := time.Now()
	from := start.Add(o.Warmup)
	end := from.Add(o.Duration)
	errs := newErrorLog(5)
	var wg sync.WaitGroup
	workers := make([]worker, max(o.Concurrency, 1))
	for w := range workers {
		wk := &workers[w]
		wg.Go(func() {
			for ctx.Err() == nil {
				sent := time.Now()
				if !sent.Before(end) {
					return
				}
				err := do(ctx)
				done := time.Now()
				if sent.Before(from) {
					continue
				}
				wk.last = max(wk.last, done.Sub(from))
				if err != nil {
					wk.errors++
					errs.note(err)
					continue
				}
				wk.lat = append(wk.lat, done.Sub(sent))
			}
		})
	}
	wg.Wait()
	return finish(workers, errs, o.Duration)
}

// worker holds one goroutine's samples, merged when the run ends so that
// recording needs no lock.
type worker struct {
	lat, lag []time.Duration
	errors   int
	last     time.Duration // latest completion, from the start of the window
}

// finish merges the workers' samples. The window is the run's duration, or
// longer when the last measured answer came after its end.
func finish(ws []worker, errs *errorLog, duration time.Duration) Result {
	var lat, lag []time.Duration
	var r Result
	for _, w := range ws {
		lat = append(lat, w.lat...)
		lag = append(lag, w.lag...)
		r.Errors += w.errors
	}
	r.OK = len(lat)
	r.Latency = Summarize(lat)
	r.Lag = Summarize(lag)
	r.ErrorSamples = errs.samples()
	r.Window = duration
	for _, w := range ws {
		r.Window = max(r.Window, w.last)
	}
	r.Rate = float64(r.OK) / r.Window.Seconds()
	return r
}

// errorLog keeps the first few distinct error messages of a run.
type errorLog struct {
	mu    sync.Mutex
	limit int
	full  atomic.Bool
	msgs  []string
}

func newErrorLog(limit int) *errorLog { return &errorLog{limit: limit} }

func (l *errorLog) note(err error) {
	if l.full.Load() {
		return
	}
	msg := err.Error()
	l.mu.Lock()
	defer l.mu.Unlock()
	if slices.Contains(l.msgs, msg) || len(l.msgs) >= l.limit {
		return
	}
	l.msgs = append(l.msgs, msg)
	l.full.Store(len(l.msgs) >= l.limit)
}

func (l *errorLog) samples() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.msgs)
}
