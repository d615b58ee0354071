package main

import (
	"strings"
	"testing"
	"time"

	"github.com/ai-gateway/gateway/internal/loadtest"
)

func TestReportPrint(t *testing.T) {
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	res := func(p50, rate float64) loadtest.Result {
		return loadtest.Result{OK: 100, Rate: rate, Window: time.Second, Latency: loadtest.Summary{Count: 100, P50: ms(p50), P90: ms(p50 * 2), P99: ms(p50 * 3), Max: ms(p50 * 4)}}
	}
	gwOpen := res(0.5, 1000)
	gwOpen.Errors, gwOpen.ErrorSamples = 3, []string{`HTTP 502: {"error":{"message":"the provider could not be reached"}}`}
	r := &report{
		opt:    options{rate: 1000, duration: time.Second, warmup: time.Second, concurrency: 8, maxInFlight: 512, markdown: true},
		env:    "test machine",
		open:   []row{{"direct", res(0.3, 1000)}, {"proxy", res(0.4, 1000)}, {"gateway", gwOpen}},
		closed: []row{{"direct", res(1, 30000)}, {"proxy", res(2, 10000)}, {"gateway", res(3, 7000)}},
		logs:   logCheck{answered: 10, stored: 9, settled: true},
	}
	var b strings.Builder
	r.print(&b)
	out := b.String()
	for _, want := range []string{
		"gateway added p50 / proxy added p50 at 1000 req/s: +0.200 / +0.100 ms = 2.00 (target ≤ 1.3): MISSED",
		"gateway max req/s / proxy max req/s: 7000 / 10000 = 0.70 (target ≥ 0.8): MISSED",
		"lost log records: 1 (target 0)",
		"open loop, gateway: 3 errors",
		"the provider could not be reached",
		"| gateway | 100 | 3 | 1000.0 | 0.500 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
