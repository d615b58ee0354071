package app_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ai-gateway/gateway/internal/store"
)

// TestShutdownDuringStream: SIGTERM-style shutdown lets an in-flight stream
// finish, refuses new work, and flushes the stream's log record.
func TestShutdownDuringStream(t *testing.T) {
	h := start(t)
	req, _ := http.NewRequest("POST", h.base+"/v1/chat/completions", strings.NewReader(`{"model":"slow","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`))
	for k, v := range h.routing() {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	id := resp.Header.Get("x-gateway-request-id")
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- h.app.Shutdown(ctx)
	}()
	h.stopped = true

	// New connections are refused once shutdown has begun.
	deadline := time.Now().Add(2 * time.Second)
	for {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		r, err := c.Get(h.base + "/health/live")
		if err != nil {
			break
		}
		r.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("new connections still accepted during shutdown")
		}
		time.Sleep(10 * time.Millisecond)
	}

	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("stream cut by shutdown: %v", err)
	}
	if !strings.HasSuffix(string(rest), "data: [DONE]\n\n") || !strings.Contains(string(rest), `"choices":[]`) {
		t.Fatalf("stream did not complete: ...%s", rest[max(0, len(rest)-300):])
	}
	if err := <-done; err != nil {
		t.Fatalf("shutdown: %v", err)
	}

	st, err := store.Open(context.Background(), "", h.cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec, err := st.Log(context.Background(), h.app.Bootstrap.OrganisationID, id)
	if err != nil {
		t.Fatalf("stream's record not flushed at shutdown: %v", err)
	}
	if rec.StatusCode != 200 || !rec.IsSuccess || rec.Usage.TotalTokens != 62 {
		t.Errorf("record = %+v", rec)
	}
}
