// Command loadtest measures, in one run, the latency the gateway adds to a
// chat completion compared with a bare httputil.ReverseProxy, against the
// same fake OpenAI upstream, everything on loopback in this one process:
//
//	go run ./cmd/loadtest [-rate 1000] [-duration 10s] [-concurrency 64] [-markdown]
//
// Each phase runs against each target in turn, direct to the upstream,
// through the proxy, through the gateway: first an open loop at a fixed
// rate (latency measured from each request's scheduled send time), then a
// closed loop of back-to-back workers (maximum throughput). The gateway runs
// with its defaults: embedded SQLite, every request logged with bodies; the
// run ends by checking that every answered request left a log record.
//
// It exits non-zero only when the bench cannot be set up, never because a
// target was missed.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"sync/atomic"
	"time"

	"github.com/ai-gateway/gateway/internal/app"
	"github.com/ai-gateway/gateway/internal/loadtest"
)

// options are the command's flags.
type options struct {
	rate          float64
	duration      time.Duration
	warmup        time.Duration
	concurrency   int
	maxInFlight   int
	upstreamDelay time.Duration
	markdown      bool
	quietLogs     bool
	cpuProfile    string
	// rounds repeats the whole measurement, each round running the three
	// targets one after another, so that a burst of machine noise lands on
	// one round rather than on one target; the medians of the rounds'
	// ratios are reported with every round's.
	rounds int
}

func main() {
	var o options
	flag.Float64Var(&o.rate, "rate", 1000, "open-loop request rate per target, requests per second")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "measured time of each phase per target")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured load before each phase per target")
	flag.IntVar(&o.concurrency, "concurrency", 64, "closed-loop workers")
	flag.IntVar(&o.maxInFlight, "max-in-flight", 512, "open-loop bound on outstanding requests")
	flag.DurationVar(&o.upstreamDelay, "upstream-delay", 0, "fixed delay before the fake upstream answers")
	flag.BoolVar(&o.markdown, "markdown", false, "also print the results as markdown tables")
	flag.BoolVar(&o.quietLogs, "quiet-logs", true, "discard the gateway's, proxy's and upstream's process logs")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file (gateway samples carry the label role=gateway)")
	flag.IntVar(&o.rounds, "rounds", 1, "repeat the measurement this many times (targets interleaved per round) and report the median ratios")
	flag.Parse()
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(2)
	}
	// Everything below is bounded, but a hang must still end the process.
	budget := time.Duration(o.rounds)*2*3*(o.warmup+o.duration+20*time.Second) + 2*time.Minute
	watchdog := time.AfterFunc(budget, func() {
		fmt.Fprintf(os.Stderr, "loadtest: still running after %v; giving up\n", budget)
		os.Exit(3)
	})
	defer watchdog.Stop()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest:", err)
		os.Exit(1)
	}
}

func (o options) validate() error {
	var errs []error
	if o.rate <= 0 {
		errs = append(errs, errors.New("-rate: must be positive"))
	}
	if o.duration <= 0 {
		errs = append(errs, errors.New("-duration: must be positive"))
	}
	if o.warmup < 0 {
		errs = append(errs, errors.New("-warmup: must not be negative"))
	}
	if o.concurrency < 1 {
		errs = append(errs, errors.New("-concurrency: must be at least 1"))
	}
	if o.rounds < 1 {
		errs = append(errs, errors.New("-rounds: must be at least 1"))
	}
	if o.maxInFlight < 1 {
		errs = append(errs, errors.New("-max-in-flight: must be at least 1"))
	}
	if o.upstreamDelay < 0 {
		errs = append(errs, errors.New("-upstream-delay: must not be negative"))
	}
	return errors.Join(errs...)
}

// target is one destination of the load: the same request and headers go
// to each, only the base URL differs.
type target struct {
	name    string
	url     string
	header  http.Header
	hc      *http.Client
	answers atomic.Int64 // responses received, any status, warm-up included
}

// do sends one chat completion and reads the whole answer. Anything but a
// 200 is an error that says what came back.
func (t *target) do(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(chatRequest))
	if err != nil {
		return err
	}
	req.Header = t.header.Clone()
	resp, err := t.hc.Do(req)
	if err != nil {
		return err
	}
	t.answers.Add(1)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, snippet(bytes.TrimSpace(body)))
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if n == 0 {
		return errors.New("HTTP 200 with an empty body")
	}
	return nil
}

func run(o options) (err error) {
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return err
		}
		defer func() {
			pprof.StopCPUProfile()
			err = errors.Join(err, f.Close())
			fmt.Fprintf(os.Stderr, "CPU profile written to %s; gateway side: go tool pprof -tagfocus=role=gateway -top %s\n", o.cpuProfile, o.cpuProfile)
		}()
	}

	ctx := context.Background()
	gwLog := app.NewLogger(os.Stderr, "info", "text")
	errLog := log.New(os.Stderr, "", log.LstdFlags)
	if o.quietLogs {
		gwLog = slog.New(slog.DiscardHandler)
		errLog = log.New(io.Discard, "", 0)
	}

	up, err := startUpstream(o.upstreamDelay, errLog)
	if err != nil {
		return err
	}
	proxy, err := startProxy(up.url, errLog)
	if err != nil {
		return err
	}
	gw, err := startGateway(ctx, gwLog)
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		err = errors.Join(err, gw.shutdown(sctx), proxy.shutdown(sctx), up.shutdown(sctx))
	}()

	hc := &http.Client{Transport: newTransport(max(1024, o.concurrency, o.maxInFlight)), Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	// Every target gets the same bytes: the gateway's headers are dead
	// weight to the upstream and the proxy, but sending them everywhere
	// keeps the only difference between the three what sits in the path.
	header := http.Header{
		"Content-Type":          {"application/json"},
		"Authorization":         {"Bearer sk-loadtest-not-a-real-key"},
		"X-Gateway-Api-Key":     {gw.adminKey},
		"X-Gateway-Provider":    {"openai"},
		"X-Gateway-Custom-Host": {up.url + "/v1"},
	}
	targets := []*target{
		{name: "direct", url: up.url + "/v1/chat/completions"},
		{name: "proxy", url: proxy.url + "/v1/chat/completions"},
		{name: "gateway", url: gw.url + "/v1/chat/completions"},
	}
	// base is the count before the gateway answered anything (0 on a
	// fresh data directory, but counting it costs nothing).
	base, err := gw.storedLogs(ctx, hc)
	if err != nil {
		return fmt.Errorf("gateway: counting log records: %w", err)
	}
	for _, t := range targets {
		t.header, t.hc = header, hc
		// One request each before any load: a target that cannot answer
		// at all is a setup error, not a result.
		if err := t.do(ctx); err != nil {
			return fmt.Errorf("%s: first request failed: %w", t.name, err)
		}
	}

	fmt.Fprintf(os.Stderr, "loadtest: GOMAXPROCS=%d, upstream %s, proxy %s, gateway %s (data dir %s)\n",
		runtime.GOMAXPROCS(0), up.url, proxy.url, gw.url, gw.dataDir)
	var rounds []*report
	// The gateway's log writer may still be storing the last phase's
	// records when the next target starts: let it finish first, so each
	// measurement sees only its own target's work.
	settle := func() {
		if _, _, err := gw.drainLogs(ctx, hc, gw.expected(targets[2], base), 10*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, "loadtest: waiting for the log writer:", err)
		}
		runtime.GC()
	}
	withRole("loadgen", func() {
		for i := range o.rounds {
			rep := &report{opt: o, env: environment(o.upstreamDelay)}
			for _, t := range targets {
				settle()
				fmt.Fprintf(os.Stderr, "loadtest: round %d/%d, open loop, %s, %.0f req/s for %v + %v warm-up…\n", i+1, o.rounds, t.name, o.rate, o.duration, o.warmup)
				r := loadtest.RunOpenLoop(ctx, loadtest.OpenLoop{Rate: o.rate, Warmup: o.warmup, Duration: o.duration, MaxInFlight: o.maxInFlight}, t.do)
				rep.open = append(rep.open, row{target: t.name, res: r})
			}
			for _, t := range targets {
				settle()
				fmt.Fprintf(os.Stderr, "loadtest: round %d/%d, closed loop, %s, %d workers for %v + %v warm-up…\n", i+1, o.rounds, t.name, o.concurrency, o.duration, o.warmup)
				r := loadtest.RunClosedLoop(ctx, loadtest.ClosedLoop{Concurrency: o.concurrency, Warmup: o.warmup, Duration: o.duration}, t.do)
				rep.closed = append(rep.closed, row{target: t.name, res: r})
			}
			rounds = append(rounds, rep)
		}
	})
	rep := rounds[len(rounds)-1]

	gwt := targets[2]
	answered := gwt.answers.Load()
	stored, settled, lerr := gw.drainLogs(ctx, hc, gw.expected(gwt, base), 10*time.Second)
	rep.logs = logCheck{answered: answered, stored: int64(stored - base), settled: settled, err: lerr}
	rep.writer, _ = gw.writerStats(ctx, hc)
	rep.print(os.Stdout)
	if len(rounds) > 1 {
		printRounds(os.Stdout, rounds)
	}
	return nil
}

// expected is the number of log records the gateway should hold once its
// writer has caught up: one per answer, on top of base.
func (g *gatewayServer) expected(t *target, base int) int64 { return int64(base) + t.answers.Load() }
