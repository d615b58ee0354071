package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ai-gateway/gateway/internal/registry"
)

const testToken = "Bearer s3cr3t-mcp-token"

// newServer is an MCP server built with the official SDK, with a tool and
// a prompt so that it declares those capabilities.
func newServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{
		Name: "weather", Title: "Weather server", Version: "1.2.3", Description: "Forecasts for tests",
		Icons: []sdk.Icon{{Source: "https://example.test/icon.png", MIMEType: "image/png", Sizes: []string{"48x48"}}},
	}, nil)
	type in struct {
		City string `json:"city"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "forecast", Description: "forecast for a city"},
		func(ctx context.Context, req *sdk.CallToolRequest, args in) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "sunny"}}}, nil, nil
		})
	s.AddPrompt(&sdk.Prompt{Name: "greet"}, func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "hi"}}}}, nil
	})
	return s
}

// requireAuth answers 401 to requests without the test token.
func requireAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != testToken {
			http.Error(w, "missing token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

func TestFetch(t *testing.T) {
	s := newServer()
	streamable := serve(t, requireAuth(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)))
	sse := serve(t, requireAuth(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return s }, nil)))
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	f := &Fetcher{Now: func() time.Time { return now }, Timeout: 5 * time.Second}
	auth := map[string]string{"Authorization": testToken}

	want := registry.MCPMetadata{
		Title: "Weather server", Description: "Forecasts for tests", ServerName: "weather", ServerVersion: "1.2.3",
		Icons:        []registry.MCPIcon{{Src: "https://example.test/icon.png", MIMEType: "image/png", Sizes: []string{"48x48"}}},
		Capabilities: registry.MCPCapabilityFlags{Tools: true, ToolsListChanged: true, Prompts: true, PromptsListChanged: true, Logging: true},
		SyncStatus:   registry.MCPSyncSynced, LastSyncedAt: &now,
	}
	for _, tc := range []struct {
		name string
		t    registry.MCPTarget
	}{
		{"streamable", registry.MCPTarget{URL: streamable, Transport: registry.MCPTransportHTTP, Headers: auth}},
		{"default transport", registry.MCPTarget{URL: streamable, Headers: auth}},
		{"sse", registry.MCPTarget{URL: sse, Transport: registry.MCPTransportSSE, Headers: auth}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.Fetch(t.Context(), tc.t)
			if err != nil {
				t.Fatal(err)
			}
			if got.ProtocolVersion == "" {
				t.Error("no protocol version")
			}
			got.ProtocolVersion = ""
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("metadata (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFetchFails(t *testing.T) {
	s := newServer()
	streamable := serve(t, requireAuth(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)))
	garbage := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"hello": "not json-rpc"` + testToken))
	}))
	echo := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad token "+r.Header.Get("Authorization"), http.StatusForbidden)
	}))
	down := serve(t, http.NotFoundHandler())
	// A closed server's address refuses connections.
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	f := &Fetcher{Timeout: 5 * time.Second}
	auth := map[string]string{"Authorization": testToken}
	for _, tc := range []struct {
		name string
		t    registry.MCPTarget
	}{
		{"missing auth header", registry.MCPTarget{URL: streamable}},
		{"garbage", registry.MCPTarget{URL: garbage, Headers: auth}},
		{"garbage over sse", registry.MCPTarget{URL: garbage, Transport: registry.MCPTransportSSE, Headers: auth}},
		{"echoes the token", registry.MCPTarget{URL: echo, Headers: auth}},
		{"404", registry.MCPTarget{URL: down, Headers: auth}},
		{"connection refused", registry.MCPTarget{URL: closed.URL, Headers: auth}},
		{"bad scheme", registry.MCPTarget{URL: "ftp://example.test/mcp"}},
		{"unknown transport", registry.MCPTarget{URL: streamable, Transport: "ws"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.Fetch(t.Context(), tc.t)
			if err == nil {
				t.Fatal("Fetch succeeded")
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Errorf("error shows the header value: %v", err)
			}
			if len(err.Error()) > maxErrorText {
				t.Errorf("error of %d bytes", len(err.Error()))
			}
		})
	}
}

func TestFetchTimeout(t *testing.T) {
	release := make(chan struct{})
	slow := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer close(release)
	f := &Fetcher{Timeout: 100 * time.Millisecond}
	_, err := f.Fetch(t.Context(), registry.MCPTarget{URL: slow})
	if err == nil || !strings.Contains(err.Error(), "no answer within") {
		t.Fatalf("Fetch = %v, want a timeout", err)
	}
}

func TestHeadersOnlyToTheOrigin(t *testing.T) {
	var got []string
	other := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
	}))
	var sawRedirected string
	origin := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sawRedirected = r.Header.Get("Authorization")
		http.Redirect(w, r, other+"/mcp", http.StatusTemporaryRedirect)
	}))
	f := &Fetcher{Timeout: 5 * time.Second}
	if _, err := f.Fetch(t.Context(), registry.MCPTarget{URL: origin, Headers: map[string]string{"Authorization": testToken}}); err == nil {
		t.Fatal("a redirect was followed to a successful session")
	}
	if sawRedirected != testToken {
		t.Errorf("origin got Authorization %q", sawRedirected)
	}
	if len(got) != 0 {
		t.Errorf("redirect followed to another origin: %q", got)
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"hello", 10, "hello"},
		{"hello", 3, "hel"},
		{"héllo", 2, "h"},
	} {
		if got := clip(tc.in, tc.n); got != tc.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
