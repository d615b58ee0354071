package app_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ai-gateway/gateway/internal/app"
	"github.com/ai-gateway/gateway/internal/config"
)

var benchAnswer = []byte(`{"id":"chatcmpl-b","object":"chat.completion","created":1767225600,"model":"gpt-4.1-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, how can I help you today?","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":24,"completion_tokens":10,"total_tokens":34}}`)

var benchRequest = []byte(`{"model":"gpt-4.1-mini","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Write one friendly greeting for a customer who just signed up."}],"temperature":0.7,"max_tokens":64}`)

// BenchmarkChat compares a client calling a fixed upstream directly with
// the same client going through the gateway (auth, validation, routing,
// logging with bodies into SQLite). The difference per op is the gateway's
// cost on this machine; see the README for the load command's figures.
func BenchmarkChat(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(benchAnswer)
	}))
	defer up.Close()

	cfg := config.Defaults()
	cfg.DataDir = b.TempDir()
	a, err := app.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go a.Serve(ln)
	defer a.Shutdown(context.Background())

	// A stuck request fails the benchmark instead of hanging it.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	run := func(b *testing.B, url string, hdr http.Header) {
		b.ReportAllocs()
		b.SetBytes(int64(len(benchRequest)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req, _ := http.NewRequest("POST", url, bytes.NewReader(benchRequest))
				req.Header = hdr.Clone()
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		})
	}
	b.Run("direct", func(b *testing.B) {
		run(b, up.URL+"/v1/chat/completions", http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer k"}})
	})
	b.Run("gateway", func(b *testing.B) {
		run(b, "http://"+ln.Addr().String()+"/v1/chat/completions", http.Header{
			"Content-Type": {"application/json"}, "Authorization": {"Bearer k"}, "X-Gateway-Api-Key": {a.AdminKey},
			"X-Gateway-Provider": {"openai"}, "X-Gateway-Custom-Host": {up.URL + "/v1"},
		})
	})
}
