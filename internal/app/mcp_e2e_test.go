package app_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpSecret is the header value the test MCP servers require; it must
// never come back from the gateway nor sit in clear in its database.
const mcpSecret = "mcp-hdr-secret-5d1c0e7a"

// newMCPServer serves an MCP server built with the official SDK (a tool
// and a prompt, so that it declares those capabilities) over streamable
// HTTP and over SSE, both behind a check of the X-Api-Key header, and
// returns the two endpoints.
func newMCPServer(t *testing.T) (streamable, sse string) {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{
		Name: "weather-mcp", Title: "Weather", Version: "2.0.1", Description: "Forecasts, for tests",
		Icons: []sdk.Icon{{Source: "https://icons.example/weather.svg", MIMEType: "image/svg+xml", Sizes: []string{"any"}}},
	}, nil)
	type args struct {
		City string `json:"city"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "forecast", Description: "forecast for a city"},
		func(context.Context, *sdk.CallToolRequest, args) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "sunny"}}}, nil, nil
		})
	s.AddPrompt(&sdk.Prompt{Name: "greet"}, func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "hi"}}}}, nil
	})
	guard := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Api-Key") != mcpSecret {
				http.Error(w, "unauthorised", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	get := func(*http.Request) *sdk.Server { return s }
	hs := httptest.NewServer(guard(sdk.NewStreamableHTTPHandler(get, nil)))
	t.Cleanup(hs.Close)
	ss := httptest.NewServer(guard(sdk.NewSSEHandler(get, nil)))
	t.Cleanup(ss.Close)
	return hs.URL + "/mcp", ss.URL + "/sse"
}

// metadataFields are the fields of a fetched metadata record that do not
// depend on time or on the SDK's protocol version.
func metadataFields(m map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"title", "description", "icons", "server_name", "server_version", "capability_flags", "sync_status", "sync_error"} {
		out[k] = m[k]
	}
	return out
}

var wantMCPMetadata = map[string]any{
	"title": "Weather", "description": "Forecasts, for tests", "server_name": "weather-mcp", "server_version": "2.0.1",
	"icons": []any{map[string]any{"src": "https://icons.example/weather.svg", "mime_type": "image/svg+xml", "sizes": []any{"any"}}},
	"capability_flags": map[string]any{
		"tools": true, "tools_list_changed": true, "prompts": true, "prompts_list_changed": true,
		"resources": false, "resources_subscribe": false, "resources_list_changed": false,
		"logging": true, "completions": false, "experimental": false,
	},
	"sync_status": "synced", "sync_error": "",
}

func TestMCPMetadataBothTransports(t *testing.T) {
	h := start(t)
	streamable, sse := newMCPServer(t)
	for _, tc := range []struct{ transport, url string }{{"http", streamable}, {"sse", sse}} {
		t.Run(tc.transport, func(t *testing.T) {
			integ := h.must(h.key, "POST", "/v1/mcp-integrations", map[string]any{
				"name": "Weather " + tc.transport, "url": tc.url, "transport": tc.transport,
				"headers": map[string]string{"X-Api-Key": mcpSecret}, "tags": map[string]string{"team": "a"},
			})
			if integ["object"] != "mcp-integration" || integ["auth_type"] != "headers" || integ["all_workspaces"] != true {
				t.Fatalf("integration: %v", integ)
			}
			if diff := cmp.Diff([]any{"X-Api-Key"}, integ["header_names"]); diff != "" {
				t.Errorf("header_names (-want +got):\n%s", diff)
			}
			if _, ok := integ["headers"]; ok {
				t.Errorf("headers returned: %v", integ)
			}
			srv := h.must(h.key, "POST", "/v1/mcp-servers", map[string]any{"name": "Weather here", "mcp_integration_id": integ["slug"]})
			if srv["object"] != "mcp-server" || srv["mcp_integration_id"] != integ["id"] || srv["workspace_id"] != h.app.Bootstrap.WorkspaceID {
				t.Fatalf("server: %v", srv)
			}
			if md := srv["metadata"].(map[string]any); md["sync_status"] != "never" || md["last_synced_at"] != nil {
				t.Errorf("a new server's metadata: %v", md)
			}
			id := srv["id"].(string)

			md := h.must(h.key, "GET", "/v1/mcp-servers/"+id+"/metadata", nil)
			if md["object"] != "mcp-server-metadata" || md["mcp_server_id"] != id || md["protocol_version"] == "" || md["last_synced_at"] == nil {
				t.Errorf("metadata: %v", md)
			}
			if diff := cmp.Diff(wantMCPMetadata, metadataFields(md)); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
			// Lists and gets return the stored metadata without connecting.
			got := h.must(h.key, "GET", "/v1/mcp-servers/"+srv["slug"].(string), nil)["metadata"].(map[string]any)
			if diff := cmp.Diff(wantMCPMetadata, metadataFields(got)); diff != "" || got["protocol_version"] != md["protocol_version"] {
				t.Errorf("GET server metadata (-want +got):\n%s", diff)
			}
			found := false
			for _, x := range h.must(h.key, "GET", "/v1/mcp-servers", nil)["data"].([]any) {
				if s := x.(map[string]any); s["id"] == id {
					found = true
					if diff := cmp.Diff(wantMCPMetadata, metadataFields(s["metadata"].(map[string]any))); diff != "" {
						t.Errorf("listed server metadata (-want +got):\n%s", diff)
					}
				}
			}
			if !found {
				t.Error("server not listed")
			}
			gi := h.must(h.key, "GET", "/v1/mcp-integrations/"+integ["id"].(string), nil)
			if diff := cmp.Diff(wantMCPMetadata, metadataFields(gi["metadata"].(map[string]any))); diff != "" {
				t.Errorf("integration metadata (-want +got):\n%s", diff)
			}
		})
	}
	list := h.must(h.key, "GET", "/v1/mcp-integrations", nil)
	if list["object"] != "list" || list["total"] != float64(2) {
		t.Errorf("integration list: %v", list)
	}
	for _, x := range list["data"].([]any) {
		if md := x.(map[string]any)["metadata"].(map[string]any); md["sync_status"] != "synced" {
			t.Errorf("listed integration metadata: %v", md)
		}
	}
}

func TestMCPMetadataFailures(t *testing.T) {
	h := start(t)
	streamable, _ := newMCPServer(t)
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`<html>not MCP</html>`))
	}))
	t.Cleanup(garbage.Close)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()

	// First a good sync, then the same server without its header: the
	// failure is recorded and the last good fields are kept.
	integ := h.must(h.key, "POST", "/v1/mcp-integrations", map[string]any{
		"name": "Weather", "slug": "weather", "url": streamable, "headers": map[string]string{"X-Api-Key": mcpSecret},
	})
	srv := h.must(h.key, "POST", "/v1/mcp-servers", map[string]any{"name": "w", "slug": "w", "mcp_integration_id": integ["id"]})
	if md := h.must(h.key, "GET", "/v1/mcp-servers/w/metadata", nil); md["sync_status"] != "synced" {
		t.Fatalf("first sync: %v", md)
	}
	h.must(h.key, "PUT", "/v1/mcp-integrations/weather", map[string]any{"auth_type": "none"})
	md := h.must(h.key, "GET", "/v1/mcp-servers/w/metadata", nil)
	if md["sync_status"] != "failed" || md["sync_error"] == "" || md["server_name"] != "weather-mcp" {
		t.Errorf("sync without the header: %v", md)
	}
	stored := h.must(h.key, "GET", "/v1/mcp-servers/"+srv["id"].(string), nil)["metadata"].(map[string]any)
	if stored["sync_status"] != "failed" || stored["sync_error"] != md["sync_error"] {
		t.Errorf("stored after failure: %v", stored)
	}

	for _, tc := range []struct{ name, url, transport string }{
		{"down", down.URL, "http"},
		{"down-sse", down.URL, "sse"},
		{"garbage", garbage.URL, "http"},
		{"garbage-sse", garbage.URL, "sse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.must(h.key, "POST", "/v1/mcp-integrations", map[string]any{"name": tc.name, "slug": tc.name, "url": tc.url, "transport": tc.transport})
			h.must(h.key, "POST", "/v1/mcp-servers", map[string]any{"name": tc.name, "slug": "s-" + tc.name, "mcp_integration_id": tc.name})
			md := h.must(h.key, "GET", "/v1/mcp-servers/s-"+tc.name+"/metadata", nil)
			if md["sync_status"] != "failed" || md["sync_error"] == "" || md["last_synced_at"] == nil || md["server_name"] != "" {
				t.Errorf("metadata: %v", md)
			}
			listed := h.must(h.key, "GET", "/v1/mcp-servers/s-"+tc.name, nil)["metadata"].(map[string]any)
			if listed["sync_status"] != "failed" {
				t.Errorf("stored: %v", listed)
			}
		})
	}
	if status, m := h.call(h.key, "GET", "/v1/mcp-servers/w/tools", nil); status != 404 {
		t.Errorf("GET /v1/mcp-servers/w/tools: %d %v", status, m)
	}
}

func TestMCPSecretsNeverShown(t *testing.T) {
	h := start(t)
	streamable, _ := newMCPServer(t)
	resp, body := h.do("POST", "/v1/mcp-integrations", map[string]any{
		"name": "Weather", "slug": "weather", "url": streamable, "headers": map[string]string{"X-Api-Key": mcpSecret},
	}, h.admin())
	if resp.StatusCode != 200 || bytes.Contains(body, []byte(mcpSecret)) {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	h.must(h.key, "PUT", "/v1/mcp-integrations/weather", map[string]any{"description": "d", "headers": map[string]string{"X-Api-Key": mcpSecret, "X-Other": mcpSecret + "-2"}})
	h.must(h.key, "POST", "/v1/mcp-servers", map[string]any{"name": "w", "slug": "w", "mcp_integration_id": "weather"})
	if md := h.must(h.key, "GET", "/v1/mcp-servers/w/metadata", nil); md["sync_status"] != "synced" {
		t.Fatalf("sync with the updated headers: %v", md)
	}
	for _, path := range []string{"/v1/mcp-integrations", "/v1/mcp-integrations/weather", "/v1/mcp-servers", "/v1/mcp-servers/w", "/v1/audit-logs"} {
		_, body := h.do("GET", path, nil, h.admin())
		if bytes.Contains(body, []byte(mcpSecret)) {
			// The audit log keeps request bodies; internal/audit must mask
			// the "headers" field whole, whatever the header names.
			t.Errorf("GET %s shows the header value: %s", path, body)
		}
	}
	h.shutdown()
	files, err := filepath.Glob(filepath.Join(h.cfg.DataDir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.IsDir() {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		if bytes.Contains(b, []byte(mcpSecret)) {
			t.Errorf("%s holds the header value in clear", filepath.Base(f))
		}
	}
	if checked == 0 {
		t.Fatal("no database file found")
	}
}

func TestMCPCRUDAndWorkspaces(t *testing.T) {
	h := start(t)
	streamable, _ := newMCPServer(t)
	wsB := h.newWorkspace("team-b")
	keyB, _ := h.newKey(h.key, "workspace", "service", map[string]any{"workspace_id": wsB})
	keyDefault, _ := h.newKey(h.key, "workspace", "service", map[string]any{})

	// Validation and conflicts.
	for _, tc := range []struct {
		body  map[string]any
		param string
	}{
		{map[string]any{"name": "x", "url": streamable, "colour": "red"}, "colour"},
		{map[string]any{"url": streamable}, "name"},
		{map[string]any{"name": "x"}, "url"},
		{map[string]any{"name": "x", "url": "ftp://x"}, "url"},
		{map[string]any{"name": "x", "url": streamable, "transport": "ws"}, "transport"},
		{map[string]any{"name": "x", "url": streamable, "auth_type": "headers"}, "headers"},
		{map[string]any{"name": "x", "url": streamable, "headers": map[string]string{"Host": "evil"}}, "headers"},
		{map[string]any{"name": "x", "url": streamable, "workspace_ids": []string{"nope"}}, "workspace_ids"},
		{map[string]any{"name": "x", "url": streamable, "all_workspaces": true, "workspace_ids": []string{wsB}}, "workspace_ids"},
	} {
		status, m := h.call(h.key, "POST", "/v1/mcp-integrations", tc.body)
		if status != 400 || mcpErrorParam(m) != tc.param {
			t.Errorf("POST %v: %d %v, want 400 on %s", tc.body, status, m, tc.param)
		}
	}
	onlyB := h.must(h.key, "POST", "/v1/mcp-integrations", map[string]any{"name": "Only B", "slug": "only-b", "url": streamable, "workspace_ids": []string{"team-b"},
		"headers": map[string]string{"X-Api-Key": mcpSecret}})
	if onlyB["all_workspaces"] != false || !cmp.Equal(onlyB["workspace_ids"], []any{wsB}) {
		t.Errorf("sharing: %v", onlyB)
	}
	if status, m := h.call(h.key, "POST", "/v1/mcp-integrations", map[string]any{"name": "Again", "slug": "only-b", "url": streamable}); status != 409 {
		t.Errorf("duplicate integration slug: %d %v", status, m)
	}
	shared := h.must(h.key, "POST", "/v1/mcp-integrations", map[string]any{"name": "Everyone", "url": streamable})
	// A workspace key may read the integrations shared with it, not write.
	if status, _ := h.call(keyB, "POST", "/v1/mcp-integrations", map[string]any{"name": "mine", "url": streamable}); status != 403 {
		t.Errorf("workspace key creating an integration: %d, want 403", status)
	}
	if status, _ := h.call(keyDefault, "GET", "/v1/mcp-integrations/only-b", nil); status != 404 {
		t.Errorf("integration not shared with the key's workspace: %d, want 404", status)
	}
	if got := h.must(keyDefault, "GET", "/v1/mcp-integrations", nil); got["total"] != float64(1) {
		t.Errorf("default workspace's integrations: %v", got)
	}
	if got := h.must(keyB, "GET", "/v1/mcp-integrations", nil); got["total"] != float64(2) {
		t.Errorf("team-b's integrations: %v", got)
	}

	// Servers: an integration not shared with the workspace cannot be used.
	if status, m := h.call(keyDefault, "POST", "/v1/mcp-servers", map[string]any{"name": "s", "mcp_integration_id": "only-b"}); status != 400 || mcpErrorParam(m) != "mcp_integration_id" {
		t.Errorf("server on an unshared integration: %d %v", status, m)
	}
	if status, m := h.call(h.key, "POST", "/v1/mcp-servers", map[string]any{"name": "s", "mcp_integration_id": "only-b"}); status != 400 {
		t.Errorf("admin key, default workspace, unshared integration: %d %v", status, m)
	}
	b := h.must(keyB, "POST", "/v1/mcp-servers", map[string]any{"name": "B server", "slug": "b-server", "mcp_integration_id": "only-b"})
	if b["workspace_id"] != wsB {
		t.Errorf("server of a workspace key: %v", b)
	}
	d := h.must(keyDefault, "POST", "/v1/mcp-servers", map[string]any{"name": "D server", "slug": "d-server", "mcp_integration_id": shared["id"]})
	if status, _ := h.call(h.key, "POST", "/v1/mcp-servers", map[string]any{"name": "again", "slug": "d-server", "mcp_integration_id": shared["id"]}); status != 409 {
		t.Errorf("duplicate server slug: %d", status)
	}
	for _, path := range []string{"/v1/mcp-servers/d-server", "/v1/mcp-servers/" + d["id"].(string), "/v1/mcp-servers/d-server/metadata"} {
		if status, m := h.call(keyB, "GET", path, nil); status != 404 {
			t.Errorf("team-b key GET %s: %d %v, want 404", path, status, m)
		}
	}
	if status, _ := h.call(keyB, "DELETE", "/v1/mcp-servers/d-server", nil); status != 404 {
		t.Errorf("team-b key deleting another workspace's server: %d, want 404", status)
	}
	if got := h.must(keyB, "GET", "/v1/mcp-servers", nil); got["total"] != float64(1) || got["data"].([]any)[0].(map[string]any)["slug"] != "b-server" {
		t.Errorf("team-b's servers: %v", got)
	}
	if got := h.must(h.key, "GET", "/v1/mcp-servers", nil); got["total"] != float64(2) {
		t.Errorf("all servers: %v", got)
	}
	if got := h.must(h.key, "GET", "/v1/mcp-servers", nil, "x-gateway-workspace", "team-b"); got["total"] != float64(1) {
		t.Errorf("servers of the named workspace: %v", got)
	}
	if md := h.must(keyB, "GET", "/v1/mcp-servers/b-server/metadata", nil); md["sync_status"] != "synced" {
		t.Errorf("metadata with a workspace key: %v", md)
	}

	// The metadata route is a read of one server (scope mcp_servers.read).
	readOnly, _ := h.newKey(h.key, "workspace", "service", map[string]any{"workspace_id": wsB, "scopes": []string{"mcp_servers.read"}})
	if status, m := h.call(readOnly, "GET", "/v1/mcp-servers/b-server/metadata", nil); status != 200 {
		t.Errorf("metadata with mcp_servers.read: %d %v", status, m)
	}
	if status, _ := h.call(readOnly, "GET", "/v1/mcp-servers", nil); status != 403 {
		t.Errorf("list with mcp_servers.read only: %d, want 403", status)
	}

	// Updates.
	up := h.must(keyB, "PUT", "/v1/mcp-servers/b-server", map[string]any{"name": "B renamed", "description": "d"})
	if up["name"] != "B renamed" || up["description"] != "d" || up["metadata"].(map[string]any)["sync_status"] != "synced" {
		t.Errorf("server update: %v", up)
	}
	if status, m := h.call(keyB, "PUT", "/v1/mcp-servers/b-server", map[string]any{"slug": "other"}); status != 400 || mcpErrorParam(m) != "slug" {
		t.Errorf("slug change: %d %v", status, m)
	}
	moved := h.must(keyB, "PUT", "/v1/mcp-servers/b-server", map[string]any{"mcp_integration_id": shared["slug"]})
	if moved["mcp_integration_id"] != shared["id"] || moved["metadata"].(map[string]any)["sync_status"] != "never" {
		t.Errorf("integration change: %v", moved)
	}
	ui := h.must(h.key, "PUT", "/v1/mcp-integrations/only-b", map[string]any{"headers": map[string]string{"x-api-key": mcpSecret, "X-Team": "b"}})
	if ui["auth_type"] != "headers" || !cmp.Equal(ui["header_names"], []any{"X-Api-Key", "X-Team"}) {
		t.Errorf("integration update: %v", ui)
	}
	// Moving the URL elsewhere without sending the headers again.
	if status, m := h.call(h.key, "PUT", "/v1/mcp-integrations/only-b", map[string]any{"url": "https://elsewhere.example/mcp"}); status != 400 || mcpErrorParam(m) != "headers" {
		t.Errorf("url moved without headers: %d %v", status, m)
	}

	// Deletes: an integration in use is a conflict.
	if status, m := h.call(h.key, "DELETE", "/v1/mcp-integrations/"+shared["slug"].(string), nil); status != 409 {
		t.Errorf("deleting an integration in use: %d %v", status, m)
	}
	for _, tc := range []struct{ path, id, object string }{
		{"/v1/mcp-servers/b-server", b["id"].(string), "mcp-server"},
		{"/v1/mcp-servers/" + d["id"].(string), d["id"].(string), "mcp-server"},
		{"/v1/mcp-integrations/" + shared["id"].(string), shared["id"].(string), "mcp-integration"},
		{"/v1/mcp-integrations/only-b", onlyB["id"].(string), "mcp-integration"},
	} {
		got := h.must(h.key, "DELETE", tc.path, nil)
		if diff := cmp.Diff(map[string]any{"id": tc.id, "object": tc.object, "deleted": true}, got); diff != "" {
			t.Errorf("DELETE %s (-want +got):\n%s", tc.path, diff)
		}
		if status, _ := h.call(h.key, "GET", tc.path, nil); status != 404 {
			t.Errorf("GET %s after delete: %d", tc.path, status)
		}
	}

	// Writes are audited under the MCP resource types.
	audit := h.must(h.key, "GET", "/v1/audit-logs?resource_type=mcp_server", nil)
	if n, _ := audit["total"].(float64); n < 4 {
		t.Errorf("audit records of MCP servers: %v", audit)
	}
}

func mcpErrorParam(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	p, _ := e["param"].(string)
	return p
}
