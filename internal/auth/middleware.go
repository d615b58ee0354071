package auth

import (
	"net/http"

	"github.com/ai-gateway/gateway/internal/httpx"
)

// HeaderAPIKey carries the gateway API key on every /v1 request.
const HeaderAPIKey = "x-gateway-api-key"

var canonicalAPIKey = http.CanonicalHeaderKey(HeaderAPIKey)

// APIKeyFrom returns the request's x-gateway-api-key without
// canonicalising the name on every call.
func APIKeyFrom(h http.Header) string {
	if vs := h[canonicalAPIKey]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

// SessionCookie is the cookie that carries an SSO session token to the
// control plane (the console); the token works in x-gateway-api-key too.
const SessionCookie = "gateway_session"

// CredentialFrom returns the request's credential: x-gateway-api-key, or
// else the SSO session cookie.
func CredentialFrom(r *http.Request) string {
	if v := APIKeyFrom(r.Header); v != "" {
		return v
	}
	if len(r.Header["Cookie"]) > 0 {
		if c, err := r.Cookie(SessionCookie); err == nil {
			return c.Value
		}
	}
	return ""
}

// Middleware authenticates every request with x-gateway-api-key and puts
// the principal in its context; failures answer 401 (or 503 when the key
// store is unreachable) before the handler runs. onFail, if set, is called
// for each rejected request (metrics).
func (a *Authenticator) Middleware(onFail func(r *http.Request, err error)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, err := a.Authenticate(r.Context(), APIKeyFrom(r.Header))
			if err != nil {
				if onFail != nil {
					onFail(r, err)
				}
				httpx.WriteError(w, err)
				return
			}
			next.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
		})
	}
}
