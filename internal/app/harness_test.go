package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/ai-gateway/gateway/internal/app"
	"github.com/ai-gateway/gateway/internal/config"
	"github.com/ai-gateway/gateway/internal/provider/providertest"
)

// harness is a gateway served on loopback in front of a fake OpenAI.
type harness struct {
	t       *testing.T
	app     *app.App
	cfg     config.Config
	base    string // http://127.0.0.1:port
	key     string // admin API key
	up      *providertest.OpenAI
	stopped bool
}

func start(t *testing.T, mutate ...func(*config.Config)) *harness {
	t.Helper()
	cfg := config.Defaults()
	cfg.DataDir = t.TempDir()
	cfg.Addr = "127.0.0.1:0"
	for _, m := range mutate {
		m(&cfg)
	}
	a, err := app.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go a.Serve(ln)
	h := &harness{t: t, app: a, cfg: cfg, base: "http://" + ln.Addr().String(), key: a.AdminKey, up: providertest.NewOpenAI(t)}
	if h.key == "" {
		h.key = cfg.AdminAPIKey
	}
	t.Cleanup(func() { h.shutdown() })
	return h
}

func (h *harness) shutdown() {
	if h.stopped {
		return
	}
	h.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.app.Shutdown(ctx); err != nil {
		h.t.Errorf("shutdown: %v", err)
	}
}

// client is the official OpenAI SDK pointed at the gateway, routing to the
// fake upstream with provider + Authorization + custom host.
func (h *harness) client(opts ...option.RequestOption) *openai.Client {
	base := []option.RequestOption{
		option.WithBaseURL(h.base + "/v1"),
		option.WithAPIKey("sk-provider-test"),
		option.WithHeader("x-gateway-api-key", h.key),
		option.WithHeader("x-gateway-provider", "openai"),
		option.WithHeader("x-gateway-custom-host", h.up.BaseURL()),
		option.WithMaxRetries(0),
	}
	c := openai.NewClient(append(base, opts...)...)
	return &c
}

// routing are the headers that send a raw request to the fake upstream.
func (h *harness) routing() map[string]string {
	return map[string]string{
		"x-gateway-api-key":     h.key,
		"x-gateway-provider":    "openai",
		"Authorization":         "Bearer sk-provider-test",
		"x-gateway-custom-host": h.up.BaseURL(),
	}
}

// do sends a raw request; body may be nil, a string, []byte or a value to
// encode as JSON.
func (h *harness) do(method, path string, body any, headers map[string]string) (*http.Response, []byte) {
	h.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, h.base+path, r)
	if err != nil {
		h.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp, out
}

func (h *harness) admin() map[string]string { return map[string]string{"x-gateway-api-key": h.key} }

// logRecord waits for the request-log record id to be stored and returns it.
func (h *harness) logRecord(id string) map[string]any {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		resp, body := h.do("GET", "/v1/logs/"+id, nil, h.admin())
		if resp.StatusCode == 200 {
			var rec map[string]any
			if err := json.Unmarshal(body, &rec); err != nil {
				h.t.Fatal(err)
			}
			return rec
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("log record %s not stored: %d %s", id, resp.StatusCode, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return m
}

// errorField returns body.error.<name>.
func errorField(t *testing.T, body []byte, name string) any {
	t.Helper()
	e, ok := decode(t, body)["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object in %s", body)
	}
	return e[name]
}
