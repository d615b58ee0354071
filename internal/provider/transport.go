package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// NewHTTPClient returns the client adapters share: one tuned transport that
// keeps many idle connections per upstream host (a gateway talks to few
// hosts, a lot), HTTP/2 where the provider offers it, and no overall
// timeout: deadlines come from the request context.
func NewHTTPClient() *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ReadBufferSize:        32 << 10,
		WriteBufferSize:       32 << 10,
	}
	return &http.Client{
		Transport: t,
		// Providers answer; they do not redirect API calls. Following a
		// redirect would resend credentials to another host.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// ClassifyTransportError wraps an error from http.Client.Do or from reading
// a response body in the failure kind the gateway maps to a status: the
// caller's own cancellation is returned as is (the client went away), an
// expired deadline is ErrTimeout, anything else ErrUnreachable.
func ClassifyTransportError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return errors.Join(ErrTimeout, err)
		}
		return ctxErr
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errors.Join(ErrTimeout, err)
	}
	return errors.Join(ErrUnreachable, err)
}

// hopHeaders are removed when proxying (RFC 9110 §7.6.1), as
// net/http/httputil.ReverseProxy does.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// RemoveHopHeaders deletes hop-by-hop headers, including those named in
// Connection.
func RemoveHopHeaders(h http.Header) {
	for _, f := range h.Values("Connection") {
		for _, name := range splitComma(f) {
			h.Del(name)
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			f := s[start:i]
			for len(f) > 0 && (f[0] == ' ' || f[0] == '\t') {
				f = f[1:]
			}
			for len(f) > 0 && (f[len(f)-1] == ' ' || f[len(f)-1] == '\t') {
				f = f[:len(f)-1]
			}
			if f != "" {
				out = append(out, f)
			}
			start = i + 1
		}
	}
	return out
}

// MaxResponseBytes bounds a non-streamed provider answer read into memory.
const MaxResponseBytes = 64 << 20

// ReadBody reads a provider's answer, sized by Content-Length when it is
// known, and refuses one larger than MaxResponseBytes (ErrBadResponse).
func ReadBody(resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n > 0 && n <= MaxResponseBytes {
		b := make([]byte, n)
		_, err := io.ReadFull(resp.Body, b)
		return b, err
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxResponseBytes {
		return nil, fmt.Errorf("%w: response larger than %d bytes", ErrBadResponse, MaxResponseBytes)
	}
	return b, nil
}

// JoinURL appends path (which starts with "/") and rawQuery to base.
func JoinURL(base, path, rawQuery string) string {
	u := strings.TrimSuffix(base, "/") + path
	if rawQuery != "" {
		if strings.Contains(u, "?") {
			u += "&" + rawQuery
		} else {
			u += "?" + rawQuery
		}
	}
	return u
}

// BaseURL is the target's custom host when it has one, else def: a custom
// host replaces the provider's base URL, version segment included (API.md §3).
func (t *Target) BaseURL(def string) string {
	if t.CustomHost != "" {
		return t.CustomHost
	}
	return def
}
