package loadtest

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	ten := ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"single p0", ms(7), 0, 7 * time.Millisecond},
		{"single p50", ms(7), 50, 7 * time.Millisecond},
		{"single p100", ms(7), 100, 7 * time.Millisecond},
		{"ten p0 is the minimum", ten, 0, 1 * time.Millisecond},
		{"ten p10", ten, 10, 1 * time.Millisecond},
		{"ten p50", ten, 50, 5 * time.Millisecond},
		{"ten p51 rounds up", ten, 51, 6 * time.Millisecond},
		{"ten p90 is exact", ten, 90, 9 * time.Millisecond},
		{"ten p99", ten, 99, 10 * time.Millisecond},
		{"ten p100 is the maximum", ten, 100, 10 * time.Millisecond},
		{"two p50 is the lower", ms(1, 2), 50, 1 * time.Millisecond},
		{"repeated values", ms(1, 1, 1, 9), 75, 1 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}

func TestPercentileThousand(t *testing.T) {
	// 1..1000 µs: the nearest-rank p-th percentile of 1000 samples is
	// sample number 10p.
	s := make([]time.Duration, 1000)
	for i := range s {
		s[i] = time.Duration(i+1) * time.Microsecond
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 500 * time.Microsecond}, {90, 900 * time.Microsecond}, {99, 990 * time.Microsecond}, {99.9, 999 * time.Microsecond}} {
		if got := Percentile(s, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	s := make([]time.Duration, 100)
	for i := range s {
		s[i] = time.Duration(i+1) * time.Millisecond
	}
	rand.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	got := Summarize(s)
	want := Summary{Count: 100, Mean: 50500 * time.Microsecond, P50: 50 * time.Millisecond, P90: 90 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}
	if got != want {
		t.Errorf("Summarize = %+v, want %+v", got, want)
	}
	if !slices.IsSorted(s) {
		t.Error("Summarize did not sort its samples")
	}
	if (Summarize(nil) != Summary{}) {
		t.Error("Summarize(nil) is not the zero Summary")
	}
}

func TestSchedule(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := NewSchedule(start, 1000)
	if s.Interval != time.Millisecond {
		t.Fatalf("interval = %v, want 1ms", s.Interval)
	}
	if got := s.At(2500); !got.Equal(start.Add(2500 * time.Millisecond)) {
		t.Errorf("At(2500) = %v", got)
	}
	for _, c := range []struct {
		after       time.Duration
		due, before int64
	}{
		{-time.Second, 0, 0},
		{0, 1, 0},                        // request 0 is due at the start
		{999 * time.Microsecond, 1, 1},   // request 1 not yet
		{time.Millisecond, 2, 1},         // request 1 due exactly now
		{1001 * time.Microsecond, 2, 2},  // …and strictly before
		{10 * time.Second, 10001, 10000}, // a 10 s run at 1000/s sends 10000
	} {
		now := start.Add(c.after)
		if got := s.Due(now); got != c.due {
			t.Errorf("Due(start%+v) = %d, want %d", c.after, got, c.due)
		}
		if got := s.Before(now); got != c.before {
			t.Errorf("Before(start%+v) = %d, want %d", c.after, got, c.before)
		}
	}
}

func TestRunOpenLoop(t *testing.T) {
	var calls atomic.Int64
	boom := errors.New("boom")
	r := RunOpenLoop(context.Background(), OpenLoop{Rate: 2000, Warmup: 50 * time.Millisecond, Duration: 200 * time.Millisecond, MaxInFlight: 8},
		func(context.Context) error {
			if calls.Add(1)%100 == 0 {
				return boom
			}
			time.Sleep(100 * time.Microsecond)
			return nil
		})
	if calls.Load() != 500 {
		t.Errorf("sent %d requests, want 500 (2000/s for 250ms)", calls.Load())
	}
	if r.OK+r.Errors != 400 || r.Missed != 0 {
		t.Errorf("measured ok=%d errors=%d missed=%d, want 400 in all and none missed", r.OK, r.Errors, r.Missed)
	}
	if r.Errors == 0 || len(r.ErrorSamples) != 1 || r.ErrorSamples[0] != "boom" {
		t.Errorf("errors=%d samples=%q, want some and one distinct message", r.Errors, r.ErrorSamples)
	}
	if r.Latency.P50 < 100*time.Microsecond {
		t.Errorf("p50 %v is below the 100µs the server takes", r.Latency.P50)
	}
}

func TestRunOpenLoopChargesQueueing(t *testing.T) {
	// One slot and a server that takes 2 ms per request at 1000/s: the
	// generator falls behind, and the latency it reports must grow with
	// the queue instead of staying at the 2 ms service time.
	r := RunOpenLoop(context.Background(), OpenLoop{Rate: 1000, Duration: 100 * time.Millisecond, MaxInFlight: 1, Grace: time.Second},
		func(context.Context) error { time.Sleep(2 * time.Millisecond); return nil })
	if r.Latency.Max < 40*time.Millisecond {
		t.Errorf("max latency %v: queueing behind the slow server was not counted", r.Latency.Max)
	}
	if r.Rate > 700 {
		t.Errorf("achieved rate %.0f/s, want about 500/s", r.Rate)
	}
}

func TestRunClosedLoop(t *testing.T) {
	r := RunClosedLoop(context.Background(), ClosedLoop{Concurrency: 4, Warmup: 20 * time.Millisecond, Duration: 100 * time.Millisecond},
		func(context.Context) error { time.Sleep(time.Millisecond); return nil })
	// 4 workers × ~1 ms per request × 100 ms ≈ 400, less timer slack.
	if r.OK < 100 || r.OK > 420 || r.Errors != 0 {
		t.Errorf("ok=%d errors=%d, want 100..420 and none", r.OK, r.Errors)
	}
	if r.Latency.P50 < time.Millisecond {
		t.Errorf("p50 %v below the 1ms service time", r.Latency.P50)
	}
}
