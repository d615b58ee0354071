package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/ai-gateway/gateway/internal/app"
	"github.com/ai-gateway/gateway/internal/config"
)

// completion is the fake upstream's answer: a realistic non-streamed
// chat.completion of about 600 bytes, usage included, as OpenAI sends it.
var completion = []byte(`{"id":"chatcmpl-BkQ7x2LmS3bN0pT4vWnYz1aCdEf","object":"chat.completion","created":1767225600,"model":"gpt-4o-mini-2024-07-18","choices":[{"index":0,"message":{"role":"assistant","content":"The capital of France is Paris. About 2.1 million people live in the city proper, and roughly 12 million in the wider metropolitan area.","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":61,"completion_tokens":31,"total_tokens":92,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}},"service_tier":"default","system_fingerprint":"fp_560af6e559"}`)

// chatRequest is what the load generator sends: a realistic request of
// about 400 bytes with a system and a user message.
var chatRequest = []byte(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a concise assistant for a travel company. Answer in at most two sentences, in plain English, without lists or markdown."},{"role":"user","content":"What is the capital of France, and roughly how many people live there? Please give the city proper and the metropolitan area."}],"temperature":0.2,"max_tokens":256,"user":"loadtest-user-0001"}`)

// withRole runs f with the pprof label role=name. Goroutines inherit
// labels from the goroutine that starts them, so every connection an
// http.Server started inside f serves, and every background worker an
// app.New called inside f starts, is charged to name in a CPU profile
// (go tool pprof -tagfocus=role=gateway).
func withRole(name string, f func()) {
	pprof.Do(context.Background(), pprof.Labels("role", name), func(context.Context) { f() })
}

// server is one loopback HTTP server of the bench.
type server struct {
	name string
	url  string // base URL, no trailing slash
	srv  *http.Server
	done chan error
}

func listen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }

func serve(name string, h http.Handler, errLog *log.Logger) (*server, error) {
	ln, err := listen()
	if err != nil {
		return nil, fmt.Errorf("%s: listen: %w", name, err)
	}
	s := &server{
		name: name, url: "http://" + ln.Addr().String(), done: make(chan error, 1),
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second, ErrorLog: errLog},
	}
	withRole(name, func() {
		go func() { s.done <- s.srv.Serve(ln) }()
	})
	return s, nil
}

func (s *server) shutdown(ctx context.Context) error {
	if err := s.srv.Shutdown(ctx); err != nil {
		s.srv.Close()
		return fmt.Errorf("%s: shutdown: %w", s.name, err)
	}
	if err := <-s.done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	return nil
}

// startUpstream serves the fake OpenAI API: POST /v1/chat/completions
// answers completion after delay. Everything it writes is computed once.
func startUpstream(delay time.Duration, errLog *log.Logger) (*server, error) {
	contentType := []string{"application/json"}
	contentLength := []string{strconv.Itoa(len(completion))}
	requestID := []string{"req_7f3c2a9b1e4d4c0fa8b6e2d1c9a0b3f4"}
	processing := []string{strconv.FormatInt(max(delay.Milliseconds(), 1), 10)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		if delay > 0 {
			time.Sleep(delay)
		}
		h := w.Header()
		h["Content-Type"] = contentType
		h["Content-Length"] = contentLength
		h["X-Request-Id"] = requestID
		h["Openai-Processing-Ms"] = processing
		w.WriteHeader(http.StatusOK)
		w.Write(completion)
	})
	return serve("upstream", mux, errLog)
}

// newTransport is the tuned client transport used by the load generator and
// the bare proxy: many idle keep-alive connections per host, as the
// gateway's own provider client keeps.
func newTransport(idlePerHost int) *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		DialContext:         d.DialContext,
		MaxIdleConns:        4 * idlePerHost,
		MaxIdleConnsPerHost: idlePerHost,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ReadBufferSize:      32 << 10,
		WriteBufferSize:     32 << 10,
	}
}

// startProxy serves a bare httputil.ReverseProxy to the upstream: the
// baseline a gateway is compared with.
func startProxy(upstream string, errLog *log.Logger) (*server, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = newTransport(1024)
	rp.ErrorLog = errLog
	return serve("proxy", rp, errLog)
}

// gatewayServer is the gateway running in this process.
type gatewayServer struct {
	app      *app.App
	url      string
	adminKey string
	dataDir  string
	done     chan error
}

// startGateway builds the gateway with app.New on a fresh data directory
// (embedded SQLite, request logging with bodies: the defaults) and serves
// it on a loopback port.
func startGateway(ctx context.Context, log *slog.Logger) (*gatewayServer, error) {
	dir, err := os.MkdirTemp("", "gateway-loadtest-")
	if err != nil {
		return nil, err
	}
	cfg := config.Defaults()
	cfg.DataDir = dir
	ln, err := listen()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("gateway: listen: %w", err)
	}
	cfg.Addr = ln.Addr().String()
	g := &gatewayServer{url: "http://" + cfg.Addr, dataDir: dir, done: make(chan error, 1)}
	withRole("gateway", func() {
		g.app, err = app.New(ctx, cfg, log)
		if err != nil {
			return
		}
		go func() { g.done <- g.app.Serve(ln) }()
	})
	if err != nil {
		ln.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g.adminKey = g.app.AdminKey
	if g.adminKey == "" {
		g.shutdown(ctx)
		return nil, errors.New("gateway: no admin key was generated on a fresh data directory")
	}
	return g, nil
}

func (g *gatewayServer) shutdown(ctx context.Context) error {
	defer os.RemoveAll(g.dataDir)
	err := g.app.Shutdown(ctx)
	select {
	case serr := <-g.done:
		err = errors.Join(err, serr)
	case <-ctx.Done():
	}
	return err
}

// storedLogs asks the admin API how many request-log records are stored.
func (g *gatewayServer) storedLogs(ctx context.Context, hc *http.Client) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.url+"/v1/logs?page_size=1", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("x-gateway-api-key", g.adminKey)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /v1/logs: HTTP %d: %s", resp.StatusCode, snippet(body))
	}
	var list struct {
		Object string `json:"object"`
		Total  *int   `json:"total"`
	}
	if err := json.Unmarshal(body, &list); err != nil || list.Total == nil {
		return 0, fmt.Errorf("GET /v1/logs: unexpected answer: %s", snippet(body))
	}
	return *list.Total, nil
}

// drainLogs polls the stored record count until it reaches want or stops
// growing (unchanged for a second: the writer flushes every 100 ms), for at
// most limit. settled is false when the limit came first.
func (g *gatewayServer) drainLogs(ctx context.Context, hc *http.Client, want int64, limit time.Duration) (total int, settled bool, err error) {
	deadline := time.Now().Add(limit)
	last, lastChange := -1, time.Now()
	for {
		n, err := g.storedLogs(ctx, hc)
		if err != nil {
			return last, false, err
		}
		if int64(n) >= want {
			return n, true, nil
		}
		if n != last {
			last, lastChange = n, time.Now()
		} else if time.Since(lastChange) >= time.Second {
			return n, true, nil
		}
		if time.Now().After(deadline) {
			return n, false, nil
		}
		select {
		case <-ctx.Done():
			return n, false, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// writerStats reads the request-log writer's counters from the gateway's
// Prometheus endpoint.
func (g *gatewayServer) writerStats(ctx context.Context, hc *http.Client) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.url+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: HTTP %d", resp.StatusCode)
	}
	return promValues(body, "gateway_log_queue_waits_total", "gateway_log_queue_wait_seconds_total",
		"gateway_log_records_written_total", "gateway_log_records_dropped_total", "gateway_log_write_errors_total",
		"gateway_log_batch_seconds_sum", "gateway_log_batch_seconds_count"), nil
}

func snippet(b []byte) string {
	const n = 300
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
