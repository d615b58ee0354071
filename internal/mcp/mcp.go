// Package mcp talks to the MCP servers of the organisation's MCP
// integrations with the official MCP Go SDK: it initialises a session and
// reads what the server says about itself (name, title, version, icons,
// capabilities, protocol version).
//
// mcp imports only registry among the gateway's packages. The control
// plane reaches it through an interface that package app satisfies.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ai-gateway/gateway/internal/registry"
)

// DefaultTimeout bounds one metadata fetch, connection and handshake.
const DefaultTimeout = 10 * time.Second

// Bounds on what a server may make the gateway store.
const (
	maxIcons     = 16
	maxIconSrc   = 64 << 10
	maxText      = 4 << 10
	maxErrorText = 1000
	maxEventSize = 1 << 20
)

// Fetcher fetches MCP server metadata.
type Fetcher struct {
	// Timeout bounds one fetch (DefaultTimeout when zero).
	Timeout time.Duration
	// Version is the gateway's version, sent as the client's.
	Version string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Fetch connects to the server t names, initialises an MCP session and
// returns the server's metadata with SyncStatus synced. Any failure
// (unreachable, refused, not MCP, timed out) is an error whose text is safe
// to show an administrator: header values never appear in it.
func (f *Fetcher) Fetch(ctx context.Context, t registry.MCPTarget) (registry.MCPMetadata, error) {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The SDK's teardown after a failed handshake may wait on requests it
	// sent with contexts of its own; closing this fetch's connections when
	// the deadline passes makes them fail at once, so that Fetch returns
	// in time and leaves nothing behind.
	conns := &connSet{}
	defer conns.closeAll()
	stop := context.AfterFunc(ctx, conns.closeAll)
	defer stop()
	res, err := f.initialize(ctx, t, conns)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", timeout)
		}
		return registry.MCPMetadata{}, errors.New(clean(err.Error(), t.Headers))
	}
	now := time.Now
	if f.Now != nil {
		now = f.Now
	}
	md := metadata(res)
	md.SyncStatus = registry.MCPSyncSynced
	at := now().UTC().Truncate(time.Microsecond)
	md.LastSyncedAt = &at
	return md, nil
}

// initialize opens a session, keeps its initialize result and closes it.
func (f *Fetcher) initialize(ctx context.Context, t registry.MCPTarget, conns *connSet) (*sdk.InitializeResult, error) {
	u, err := url.Parse(t.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("invalid server URL %q: must be an absolute http or https URL", t.URL)
	}
	hc := httpClient(u, t.Headers, conns)
	var transport sdk.Transport
	switch t.Transport {
	case registry.MCPTransportSSE:
		transport = &sdk.SSEClientTransport{Endpoint: t.URL, HTTPClient: hc, MaxEventSize: maxEventSize}
	case registry.MCPTransportHTTP, "":
		transport = &sdk.StreamableClientTransport{
			Endpoint: t.URL, HTTPClient: hc, MaxEventSize: maxEventSize,
			// One handshake and nothing after it: no reconnects and no
			// standalone stream for server-initiated messages.
			MaxRetries: -1, DisableStandaloneSSE: true,
		}
	default:
		return nil, fmt.Errorf("unknown transport %q", t.Transport)
	}
	version := f.Version
	if version == "" {
		version = "dev"
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "ai-gateway", Title: "AI gateway", Version: version}, nil)
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", redactURL(u), err)
	}
	defer session.Close()
	res := session.InitializeResult()
	if res == nil || res.ServerInfo == nil {
		return nil, fmt.Errorf("%s did not describe itself (no serverInfo)", redactURL(u))
	}
	return res, nil
}

// httpClient returns a client of its own, whose connections conns keeps,
// that adds headers to the requests sent to the origin of u and to no other
// (an SSE server names the URL that messages go to, which could be
// elsewhere), and does not follow redirects.
func httpClient(u *url.URL, headers map[string]string, conns *connSet) *http.Client {
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	base := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return conns.add(c), nil
		},
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: DefaultTimeout,
		MaxIdleConns:          4,
	}
	return &http.Client{
		Transport: &headerTransport{base: base, scheme: u.Scheme, host: u.Host, headers: headers},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// connSet holds the connections of one fetch, to close them all at its end.
type connSet struct {
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

// add keeps c; once the set is closed it closes c at once.
func (s *connSet) add(c net.Conn) net.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return c
	}
	s.conns = append(s.conns, c)
	return c
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.conns = nil
}

// headerTransport adds an integration's headers to requests for one origin.
type headerTransport struct {
	base         http.RoundTripper
	scheme, host string
	headers      map[string]string
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 && r.URL.Scheme == h.scheme && r.URL.Host == h.host {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}

// metadata maps an initialize result to the gateway's record, bounded.
func metadata(res *sdk.InitializeResult) registry.MCPMetadata {
	info := res.ServerInfo
	md := registry.MCPMetadata{
		Title:           clip(info.Title, maxText),
		Description:     clip(info.Description, maxText),
		ServerName:      clip(info.Name, maxText),
		ServerVersion:   clip(info.Version, maxText),
		ProtocolVersion: clip(res.ProtocolVersion, 64),
		Icons:           []registry.MCPIcon{},
	}
	for _, ic := range info.Icons {
		if len(md.Icons) == maxIcons {
			break
		}
		if ic.Source == "" || len(ic.Source) > maxIconSrc {
			continue
		}
		md.Icons = append(md.Icons, registry.MCPIcon{Src: ic.Source, MIMEType: clip(ic.MIMEType, 255), Sizes: ic.Sizes, Theme: clip(string(ic.Theme), 32)})
	}
	if c := res.Capabilities; c != nil {
		md.Capabilities = registry.MCPCapabilityFlags{
			Tools:                c.Tools != nil,
			ToolsListChanged:     c.Tools != nil && c.Tools.ListChanged,
			Prompts:              c.Prompts != nil,
			PromptsListChanged:   c.Prompts != nil && c.Prompts.ListChanged,
			Resources:            c.Resources != nil,
			ResourcesSubscribe:   c.Resources != nil && c.Resources.Subscribe,
			ResourcesListChanged: c.Resources != nil && c.Resources.ListChanged,
			Logging:              c.Logging != nil,
			Completions:          c.Completions != nil,
			Experimental:         len(c.Experimental) > 0,
		}
	}
	return md
}

// clean makes an error text fit to store and show: header values (which an
// echoing server could put in its error body) are masked, and it is cut.
func clean(s string, headers map[string]string) string {
	for _, v := range headers {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "********")
		}
	}
	return clip(s, maxErrorText)
}

// clip cuts s to at most n bytes without splitting a UTF-8 sequence.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// redactURL is u without user info or query, which may hold credentials.
func redactURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery = nil, "", false
	return c.String()
}
