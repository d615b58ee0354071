package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ai-gateway/gateway/internal/loadtest"
)

// The project's targets (README): the gateway may add at most 30 % more
// median latency than a bare reverse proxy, and must keep 80 % of its
// throughput.
const (
	targetAddedP50Ratio    = 1.3
	targetThroughputRatio  = 0.8
	maxErrorSamplesPrinted = 5
)

type row struct {
	target string
	res    loadtest.Result
}

type logCheck struct {
	answered, stored int64
	settled          bool
	err              error
}

type report struct {
	opt          options
	env          string // the machine and how busy it was
	open, closed []row  // direct, proxy, gateway
	logs         logCheck
	writer       map[string]float64
}

// ms formats d in milliseconds with microsecond precision.
func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 3, 64) }

// added formats d as a latency added over the direct path.
func added(d time.Duration) string {
	if d >= 0 {
		return "+" + ms(d)
	}
	return "-" + ms(-d)
}

// table is a report table: a header row and data rows.
type table struct {
	title string
	head  []string
	rows  [][]string
}

func (r *report) openTable() table {
	t := table{
		title: fmt.Sprintf("Open loop: %s req/s per target, %v measured after %v warm-up, at most %d in flight; latency in ms from the scheduled send time, +pNN is added over direct, lag is how late the generator sent",
			strconv.FormatFloat(r.opt.rate, 'f', -1, 64), r.opt.duration, r.opt.warmup, r.opt.maxInFlight),
		head: []string{"target", "ok", "errors", "ok/s", "p50", "p90", "p99", "max", "+p50", "+p90", "+p99", "lag p50", "lag p99"},
	}
	d := r.open[0].res.Latency
	for i, x := range r.open {
		l := x.res.Latency
		plus := []string{"", "", ""}
		if i > 0 {
			plus = []string{added(l.P50 - d.P50), added(l.P90 - d.P90), added(l.P99 - d.P99)}
		}
		t.rows = append(t.rows, append([]string{
			x.target, strconv.Itoa(x.res.OK), strconv.Itoa(x.res.Errors + x.res.Missed), strconv.FormatFloat(x.res.Rate, 'f', 1, 64),
			ms(l.P50), ms(l.P90), ms(l.P99), ms(l.Max)}, append(plus, ms(x.res.Lag.P50), ms(x.res.Lag.P99))...))
	}
	return t
}

func (r *report) closedTable() table {
	t := table{
		title: fmt.Sprintf("Closed loop: %d workers back to back per target, %v measured after %v warm-up; latency in ms",
			r.opt.concurrency, r.opt.duration, r.opt.warmup),
		head: []string{"target", "ok", "errors", "req/s", "p50", "p99", "max", "vs proxy"},
	}
	proxy := r.closed[1].res.Rate
	for _, x := range r.closed {
		l := x.res.Latency
		vs := ""
		if proxy > 0 {
			vs = strconv.FormatFloat(x.res.Rate/proxy, 'f', 2, 64) + "×"
		}
		t.rows = append(t.rows, []string{x.target, strconv.Itoa(x.res.OK), strconv.Itoa(x.res.Errors), strconv.FormatFloat(x.res.Rate, 'f', 0, 64),
			ms(l.P50), ms(l.P99), ms(l.Max), vs})
	}
	return t
}

func (t table) text(w io.Writer) {
	fmt.Fprintln(w, t.title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(t.head, "\t")+"\t")
	for _, row := range t.rows {
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
}

func (t table) markdown(w io.Writer) {
	fmt.Fprintf(w, "%s\n\n", t.title)
	fmt.Fprintf(w, "| %s |\n", strings.Join(t.head, " | "))
	sep := make([]string, len(t.head))
	for i := range sep {
		sep[i] = "---:"
	}
	sep[0] = "---"
	fmt.Fprintf(w, "|%s|\n", strings.Join(sep, "|"))
	for _, row := range t.rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
}

// ratios are the project's two figures of merit.
func (r *report) ratios() []string {
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	var out []string
	d, p, g := r.open[0].res.Latency.P50, r.open[1].res.Latency.P50, r.open[2].res.Latency.P50
	pa, ga := p-d, g-d
	rate := strconv.FormatFloat(r.opt.rate, 'f', -1, 64)
	if pa > 0 {
		ratio := float64(ga) / float64(pa)
		out = append(out, fmt.Sprintf("gateway added p50 / proxy added p50 at %s req/s: %s / %s ms = %.2f (target ≤ %.1f): %s",
			rate, added(ga), added(pa), ratio, targetAddedP50Ratio, verdict(ratio <= targetAddedP50Ratio)))
	} else {
		out = append(out, fmt.Sprintf("gateway added p50 / proxy added p50 at %s req/s: %s / %s ms = n/a (the proxy added nothing measurable)",
			rate, added(ga), added(pa)))
	}
	pr, gr := r.closed[1].res.Rate, r.closed[2].res.Rate
	if pr > 0 {
		ratio := gr / pr
		out = append(out, fmt.Sprintf("gateway max req/s / proxy max req/s: %.0f / %.0f = %.2f (target ≥ %.1f): %s",
			gr, pr, ratio, targetThroughputRatio, verdict(ratio >= targetThroughputRatio)))
	}
	return out
}

func (r *report) logLines() []string {
	l := r.logs
	if l.err != nil {
		return []string{fmt.Sprintf("request log: gateway answered %d requests; counting the stored records failed: %v", l.answered, l.err)}
	}
	var out []string
	lost := l.answered - l.stored
	line := fmt.Sprintf("request log: gateway answered %d requests, %d records stored; lost log records: %d (target 0)", l.answered, l.stored, max(lost, 0))
	if lost < 0 {
		line += fmt.Sprintf("; %d more records than answers (requests the client gave up on)", -lost)
	}
	if !l.settled {
		line += "; the writer was still storing records after 10 s, so the count may be low"
	}
	out = append(out, line)
	if w := r.writer; w != nil {
		batches := w["gateway_log_batch_seconds_count"]
		avg := 0.0
		if batches > 0 {
			avg = w["gateway_log_batch_seconds_sum"] / batches * 1000
		}
		out = append(out, fmt.Sprintf("log writer: %.0f records written in %.0f batches (%.1f ms per batch), %.0f queue waits (%.3f s waited), %.0f write errors, %.0f dropped",
			w["gateway_log_records_written_total"], batches, avg, w["gateway_log_queue_waits_total"], w["gateway_log_queue_wait_seconds_total"],
			w["gateway_log_write_errors_total"], w["gateway_log_records_dropped_total"]))
	}
	return out
}

func (r *report) errorLines() []string {
	var out []string
	for _, phase := range []struct {
		name string
		rows []row
	}{{"open loop", r.open}, {"closed loop", r.closed}} {
		for _, x := range phase.rows {
			if x.res.Errors == 0 && x.res.Missed == 0 {
				continue
			}
			out = append(out, fmt.Sprintf("%s, %s: %d errors, %d scheduled requests not sent in time", phase.name, x.target, x.res.Errors, x.res.Missed))
			for i, m := range x.res.ErrorSamples {
				if i == maxErrorSamplesPrinted {
					break
				}
				out = append(out, "    "+m)
			}
		}
	}
	return out
}

// stalls notes runs whose answers trailed well past the end of the window:
// their rate is over the longer window.
func (r *report) stalls() []string {
	var out []string
	for _, phase := range []struct {
		name string
		rows []row
	}{{"open loop", r.open}, {"closed loop", r.closed}} {
		for _, x := range phase.rows {
			if late := x.res.Window - r.opt.duration; late > r.opt.duration/20 {
				out = append(out, fmt.Sprintf("%s, %s: the last answers came %v after the end of the window; its rate is over %v",
					phase.name, x.target, late.Round(time.Millisecond), x.res.Window.Round(time.Millisecond)))
			}
		}
	}
	return out
}

func (r *report) print(w io.Writer) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, r.env)
	fmt.Fprintln(w)
	r.openTable().text(w)
	fmt.Fprintln(w)
	r.closedTable().text(w)
	fmt.Fprintln(w)
	for _, l := range r.ratios() {
		fmt.Fprintln(w, l)
	}
	for _, l := range r.logLines() {
		fmt.Fprintln(w, l)
	}
	for _, l := range r.stalls() {
		fmt.Fprintln(w, l)
	}
	if errs := r.errorLines(); len(errs) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "errors (first distinct messages):")
		for _, l := range errs {
			fmt.Fprintln(w, "  "+l)
		}
	}
	if r.opt.markdown {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "%s\n\n", r.env)
		r.openTable().markdown(w)
		fmt.Fprintln(w)
		r.closedTable().markdown(w)
		fmt.Fprintln(w)
		for _, l := range r.ratios() {
			fmt.Fprintf(w, "- %s\n", l)
		}
		for _, l := range r.logLines()[:1] {
			fmt.Fprintf(w, "- %s\n", l)
		}
	}
}

// promValues picks unlabelled samples out of a Prometheus text exposition.
func promValues(body []byte, names ...string) map[string]float64 {
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want[n] = true
	}
	out := make(map[string]float64, len(names))
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || !want[name] {
			continue
		}
		if f, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[name] = f
		}
	}
	return out
}

// environment describes the machine the numbers come from. The load
// average matters: everything here shares the same cores, so another busy
// process on the machine shows up as latency.
func environment(upstreamDelay time.Duration) string {
	s := fmt.Sprintf("%s, %d CPUs, GOMAXPROCS %d; load generator, upstream (delay %v), proxy and gateway share this one process, on loopback",
		runtime.Version(), runtime.NumCPU(), runtime.GOMAXPROCS(0), upstreamDelay)
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			s += "; machine load average before the run " + strings.Join(f[:3], " ")
		}
	}
	return s
}

// figures returns a round's two ratios: gateway added p50 over proxy added
// p50 at the open-loop rate (NaN when the proxy added nothing measurable),
// and gateway over proxy closed-loop throughput.
func (r *report) figures() (latency, throughput float64) {
	d, p, g := r.open[0].res.Latency.P50, r.open[1].res.Latency.P50, r.open[2].res.Latency.P50
	latency = math.NaN()
	if p > d {
		latency = float64(g-d) / float64(p-d)
	}
	throughput = math.NaN()
	if pr := r.closed[1].res.Rate; pr > 0 {
		throughput = r.closed[2].res.Rate / pr
	}
	return latency, throughput
}

// printRounds prints every round's ratios and their medians. The tables
// above are the last round's.
func printRounds(w io.Writer, rounds []*report) {
	lat := make([]float64, 0, len(rounds))
	thr := make([]float64, 0, len(rounds))
	fmt.Fprintf(w, "\nRounds (targets interleaved; the tables above are round %d):\n", len(rounds))
	for i, r := range rounds {
		l, t := r.figures()
		d, p, g := r.open[0].res.Latency.P50, r.open[1].res.Latency.P50, r.open[2].res.Latency.P50
		fmt.Fprintf(w, "  round %d: added p50 proxy %s gateway %s ms, ratio %.2f; max req/s proxy %.0f gateway %.0f, ratio %.2f\n",
			i+1, added(p-d), added(g-d), l, r.closed[1].res.Rate, r.closed[2].res.Rate, t)
		if !math.IsNaN(l) {
			lat = append(lat, l)
		}
		if !math.IsNaN(t) {
			thr = append(thr, t)
		}
	}
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	ml, mt := median(lat), median(thr)
	fmt.Fprintf(w, "median over %d rounds: gateway/proxy added p50 = %.2f (target ≤ %.1f): %s; gateway/proxy max req/s = %.2f (target ≥ %.1f): %s\n",
		len(rounds), ml, targetAddedP50Ratio, verdict(ml <= targetAddedP50Ratio), mt, targetThroughputRatio, verdict(mt >= targetThroughputRatio))
}

// median of xs (NaN for none); xs is reordered.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
