package providertest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// GoogleVertexClaude is a fake Vertex AI that serves Anthropic's Claude
// models as Vertex does (PROVIDERS.md §3 "Hosted variants"):
// POST /v1/projects/{p}/locations/{l}/publishers/anthropic/models/{m}:rawPredict
// and :streamRawPredict, with a Vertex bearer token, a Messages API body
// that has anthropic_version "vertex-2023-10-16" and no model, and
// Anthropic's answers, streams and errors. It is built from the other two
// fakes: Google grants and checks the tokens (its /token endpoint, through
// its ServiceAccountJSON) and answers every other path, Gemini models
// included; a checked Claude request is rewritten into POST /v1/messages
// (model from the URL, Anthropic's headers) and answered by Anthropic.
//
// The Vertex side refuses, as Vertex does, a request without a valid
// token (Google's 401), a body with model, another anthropic_version, or
// a stream flag that does not match the method (Anthropic's 400). A model
// named VertexClaudeFakePrefix+name is passed to the Anthropic fake as
// name, to reach its behaviours (err-<status>, error-event, cut-after-<n>,
// stall, refusal) with a model name the gateway sends to Claude.
type GoogleVertexClaude struct {
	Server    *httptest.Server
	Google    *Google
	Anthropic *Anthropic

	mu sync.Mutex
	requestLog
}

// VertexAnthropicVersion is the anthropic_version the fake requires.
const VertexAnthropicVersion = "vertex-2023-10-16"

// VertexClaudeFakePrefix marks a model name whose rest selects a
// behaviour of the Anthropic fake ("claude-fake-err-429" → "err-429").
const VertexClaudeFakePrefix = "claude-fake-"

// NewGoogleVertexClaude starts the fake (and the Google and Anthropic
// fakes it uses) and stops it when the test ends.
func NewGoogleVertexClaude(t testing.TB) *GoogleVertexClaude {
	f := &GoogleVertexClaude{Google: NewGoogle(t), Anthropic: NewAnthropic(t)}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Server.Close)
	return f
}

// VertexHost replaces https://{region}-aiplatform.googleapis.com, for
// x-gateway-custom-host.
func (f *GoogleVertexClaude) VertexHost() string { return f.Server.URL }

// ServiceAccountJSON is a key file whose tokens this fake accepts.
func (f *GoogleVertexClaude) ServiceAccountJSON() string { return f.Google.ServiceAccountJSON() }

// TokenFetches counts the tokens granted so far.
func (f *GoogleVertexClaude) TokenFetches() int { return f.Google.TokenFetches() }

// claudePath splits /v1/projects/{p}/locations/{l}/publishers/anthropic/models/{m}:{method}.
func claudePath(path string) (model, method string, ok bool) {
	rest, ok := strings.CutPrefix(path, "/v1/projects/")
	if !ok {
		return "", "", false
	}
	seg := strings.Split(rest, "/")
	if len(seg) != 7 || seg[0] == "" || seg[1] != "locations" || seg[2] == "" || seg[3] != "publishers" || seg[4] != "anthropic" || seg[5] != "models" {
		return "", "", false
	}
	model, method, ok = strings.Cut(seg[6], ":")
	return model, method, ok && model != ""
}

func (f *GoogleVertexClaude) serve(w http.ResponseWriter, r *http.Request) {
	model, method, ok := claudePath(r.URL.Path)
	if !ok {
		f.Google.serve(w, r)
		return
	}
	body := f.note(r, false)

	if r.Method != http.MethodPost {
		WriteGoogleError(w, 404, "NOT_FOUND", "The requested URL was not found on this server.")
		return
	}
	if !f.Google.authorized(r.Header.Get("Authorization")) {
		WriteGoogleError(w, 401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
		return
	}
	var stream bool
	switch method {
	case "rawPredict":
	case "streamRawPredict":
		stream = true
	default:
		WriteGoogleError(w, 400, "INVALID_ARGUMENT", "Unknown method "+strconv.Quote(method)+" for an Anthropic model.")
		return
	}
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		WriteAnthropicError(w, 400, "invalid_request_error", "There was an issue with the request body: "+err.Error())
		return
	}
	if _, ok := req["model"]; ok {
		WriteAnthropicError(w, 400, "invalid_request_error", "model: Extra inputs are not permitted")
		return
	}
	var version string
	json.Unmarshal(req["anthropic_version"], &version)
	if version != VertexAnthropicVersion {
		WriteAnthropicError(w, 400, "invalid_request_error", "anthropic_version: Input should be '"+VertexAnthropicVersion+"'")
		return
	}
	if s := string(bytes.TrimSpace(req["stream"])); (s == "true") != stream {
		WriteAnthropicError(w, 400, "invalid_request_error", "stream: "+method+" requires stream "+strconv.FormatBool(stream))
		return
	}
	delete(req, "anthropic_version")
	upstream := strings.TrimPrefix(model, VertexClaudeFakePrefix)
	req["model"], _ = json.Marshal(upstream)
	msg, _ := json.Marshal(req)

	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath, r2.URL.RawQuery = "/v1/messages", "", ""
	r2.RequestURI = "/v1/messages"
	r2.Body = io.NopCloser(bytes.NewReader(msg))
	r2.ContentLength = int64(len(msg))
	r2.Header.Del("Authorization")
	r2.Header.Set("x-api-key", "vertex-internal")
	r2.Header.Set("anthropic-version", "2023-06-01")
	f.Anthropic.Server.Config.Handler.ServeHTTP(w, r2)
}
