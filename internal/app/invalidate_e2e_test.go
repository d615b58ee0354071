package app_test

import (
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/ai-gateway/gateway/internal/config"
)

// TestInvalidationAcrossProcesses: two gateway processes over one database
// and one Redis, with key caches that would otherwise live for an hour. A
// key revoked through one process stops working on the other within about
// a second, and so does a deleted virtual key.
func TestInvalidationAcrossProcesses(t *testing.T) {
	addr := os.Getenv("GATEWAY_TEST_REDIS_ADDR")
	if addr == "" {
		t.Skip("GATEWAY_TEST_REDIS_ADDR not set: skipping the cross-process invalidation test")
	}
	dir := t.TempDir()
	shared := func(c *config.Config) {
		c.DataDir, c.AdminAPIKey, c.RedisURL, c.KeyCacheTTL = dir, "gw-invalidation-test-admin-0123456789", "redis://"+addr, time.Hour
	}
	h1 := start(t, shared)
	h2 := start(t, shared)
	h2.up = h1.up // one fake upstream for both

	// revokedOnOther creates something through h1, uses it through h2 (so
	// h2 caches it), removes it through h1, and reports whether h2 refuses
	// it within two seconds. The processes subscribe in the background, so
	// the first rounds may be lost; a later round must succeed.
	within := func(name string, round func() (use func() int, remove func())) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			use, remove := round()
			if st := use(); st != 200 {
				t.Fatalf("%s: before removal: %d", name, st)
			}
			remove()
			until := time.Now().Add(2 * time.Second)
			for time.Now().Before(until) {
				if use() == 401 {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		t.Fatalf("%s: process 2 kept accepting what process 1 removed", name)
	}

	within("API key", func() (func() int, func()) {
		raw, id := h1.newKey(h1.key, "organisation", "service", nil)
		return func() int { return h2.chat(raw) }, func() { h1.must(h1.key, "DELETE", "/v1/api-keys/"+id, nil) }
	})
	within("virtual key", func() (func() int, func()) {
		ws := h1.must(h1.key, "GET", "/v1/admin/workspaces", nil)["data"].([]any)[0].(map[string]any)["id"].(string)
		slug := h1.newVirtualKey(ws)
		use := func() int {
			hdr := map[string]string{"x-gateway-api-key": h2.key, "x-gateway-virtual-key": slug, "x-gateway-custom-host": h1.up.BaseURL()}
			resp, _ := h2.do("POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, hdr)
			return resp.StatusCode
		}
		return use, func() { h1.must(h1.key, "DELETE", "/v1/virtual-keys/"+slug, nil) }
	})
}

// TestLogoutAcrossProcesses: a console session logged out through one
// gateway process stops working on another that had it cached.
func TestLogoutAcrossProcesses(t *testing.T) {
	addr := os.Getenv("GATEWAY_TEST_REDIS_ADDR")
	if addr == "" {
		t.Skip("GATEWAY_TEST_REDIS_ADDR not set: skipping the cross-process logout test")
	}
	dir := t.TempDir()
	shared := func(c *config.Config) {
		c.DataDir, c.AdminAPIKey, c.RedisURL, c.KeyCacheTTL = dir, "gw-invalidation-test-admin-0123456789", "redis://"+addr, time.Hour
	}
	idp := newFakeIDP(t)
	h1 := startSSO(t, idp, "reject", shared)
	h2 := startSSO(t, idp, "reject", shared)
	h1.key = "gw-invalidation-test-admin-0123456789"
	h1.addUser("boss@example.com", "owner", nil)
	idp.as("boss@example.com")
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		b := newBrowser(t, h1)
		if resp, body := b.login(""); resp.StatusCode != http.StatusFound {
			t.Fatalf("login: %d %s", resp.StatusCode, body)
		}
		token := b.sessionCookie()
		if status, m := h2.call(token, "GET", "/v1/admin/users", nil); status != 200 {
			t.Fatalf("session on process 2: %d %v", status, m)
		}
		if resp, body := b.send("POST", h1.base+"/v1/auth/logout"); resp.StatusCode != 200 {
			t.Fatalf("logout: %d %s", resp.StatusCode, body)
		}
		until := time.Now().Add(2 * time.Second)
		for time.Now().Before(until) {
			if status, _ := h2.call(token, "GET", "/v1/admin/users", nil); status == 401 {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Fatal("process 2 kept accepting a session logged out through process 1")
}
