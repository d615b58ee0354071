package providertest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// Google is a fake of both Google upstreams that serve Gemini models, with
// their wire format (PROVIDERS.md §4, §5): the Gemini API under /v1beta
// (x-goog-api-key), Vertex AI under /v1/projects/{p}/locations/{l}
// (Bearer access token), and an OAuth token endpoint at /token that grants
// tokens for JWT-bearer assertions, as oauth2.googleapis.com does.
//
// Behaviour is chosen by the model name, as for the OpenAI fake:
//
//	"err-<status>"    that status with a Google error body; 429 carries
//	                  google.rpc.RetryInfo (retryDelay 34.4s) and no
//	                  Retry-After header, as Google sends it
//	"stall"           never answer
//	"cut-after-<n>"   stream n events, then cut the connection
//	"error-event"     stream one event, then an in-stream error
//	"blocked"         promptFeedback.blockReason SAFETY, no candidates
//	"*tool*"          a get_weather functionCall with a thoughtSignature;
//	                  once the history holds the function's response, a
//	                  text answer. A replayed functionCall without that
//	                  signature is refused with 400, as Gemini 3 does.
//	"*think*"         a thought part (with includeThoughts) then an answer
//	anything else     "Hello from Gemini." (streamed in three events)
type Google struct {
	Server *httptest.Server

	mu sync.Mutex
	requestLog
	tokenFetches  int
	tokenLifetime int
	issued        map[string]bool
	trusted       []*rsa.PublicKey
}

// GoogleStaticToken is an access token the fake Vertex always accepts, for
// callers that bring their own token instead of a service account.
const GoogleStaticToken = "ya29.static-test-token"

// GoogleToolSignature is the thoughtSignature the fake puts on its
// function calls and requires back.
const GoogleToolSignature = "Eq0BCqoBAb4+9vtFakeToolSignature=="

// NewGoogle starts a fake and stops it when the test ends.
func NewGoogle(t testing.TB) *Google {
	f := &Google{tokenLifetime: 3600, issued: map[string]bool{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Server.Close)
	return f
}

// GeminiBaseURL is the Gemini API base (…/v1beta), for x-gateway-custom-host.
func (f *Google) GeminiBaseURL() string { return f.Server.URL + "/v1beta" }

// VertexHost replaces https://{region}-aiplatform.googleapis.com, for
// x-gateway-custom-host.
func (f *Google) VertexHost() string { return f.Server.URL }

// TokenURL is the fake OAuth token endpoint, for a key file's token_uri.
func (f *Google) TokenURL() string { return f.Server.URL + "/token" }

// SetTokenLifetime sets the expires_in (seconds) of granted tokens.
func (f *Google) SetTokenLifetime(seconds int) {
	f.mu.Lock()
	f.tokenLifetime = seconds
	f.mu.Unlock()
}

// TokenFetches counts the tokens granted so far.
func (f *Google) TokenFetches() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokenFetches
}

var googleKey struct {
	once sync.Once
	key  *rsa.PrivateKey
}

// ServiceAccountJSON returns a service-account key file whose token_uri is
// this fake, signed by an RSA key the fake trusts.
func (f *Google) ServiceAccountJSON() string {
	googleKey.once.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		googleKey.key = k
	})
	f.mu.Lock()
	f.trusted = append(f.trusted, &googleKey.key.PublicKey)
	f.mu.Unlock()
	return GoogleServiceAccountJSON(googleKey.key, f.TokenURL())
}

// GoogleServiceAccountJSON renders a service-account key file for key.
func GoogleServiceAccountJSON(key *rsa.PrivateKey, tokenURI string) string {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		panic(err)
	}
	b, _ := json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     "test-project",
		"private_key_id": "fake-key-1",
		"private_key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":   "gateway@test-project.iam.gserviceaccount.com",
		"client_id":      "1234567890",
		"token_uri":      tokenURI,
	})
	return string(b)
}

// TrustKey makes the token endpoint accept assertions signed by key.
func (f *Google) TrustKey(key *rsa.PublicKey) {
	f.mu.Lock()
	f.trusted = append(f.trusted, key)
	f.mu.Unlock()
}

// WriteGoogleError writes a Google RPC error body.
func WriteGoogleError(w http.ResponseWriter, status int, rpcStatus, msg string, details ...string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	d := ""
	if len(details) > 0 {
		d = `,"details":[` + strings.Join(details, ",") + `]`
	}
	fmt.Fprintf(w, `{"error":{"code":%d,"message":%q,"status":%q%s}}`, status, msg, rpcStatus, d)
}

func (f *Google) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/token" {
		f.token(w, r)
		return
	}
	body := f.note(r, false)

	var vertex bool
	var rest string
	switch {
	case strings.HasPrefix(r.URL.Path, "/v1beta/models/"):
		rest = strings.TrimPrefix(r.URL.Path, "/v1beta/models/")
		if r.Header.Get("x-goog-api-key") == "" {
			WriteGoogleError(w, 403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
			return
		}
	case strings.HasPrefix(r.URL.Path, "/v1/projects/"):
		vertex = true
		seg := strings.Split(strings.TrimPrefix(r.URL.Path, "/v1/projects/"), "/")
		if len(seg) != 7 || seg[0] == "" || seg[1] != "locations" || seg[2] == "" || seg[3] != "publishers" || seg[4] != "google" || seg[5] != "models" {
			f.echo(w, r, body)
			return
		}
		rest = seg[6]
		if !f.authorized(r.Header.Get("Authorization")) {
			WriteGoogleError(w, 401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
			return
		}
	default:
		f.echo(w, r, body)
		return
	}
	model, method, ok := strings.Cut(rest, ":")
	if !ok || r.Method != http.MethodPost {
		f.echo(w, r, body)
		return
	}
	switch method {
	case "generateContent":
		f.generate(w, r, body, model, vertex, false)
	case "streamGenerateContent":
		if r.URL.Query().Get("alt") != "sse" {
			WriteGoogleError(w, 400, "INVALID_ARGUMENT", "this fake streams only with alt=sse")
			return
		}
		f.generate(w, r, body, model, vertex, true)
	case "batchEmbedContents":
		f.batchEmbed(w, body, vertex)
	case "predict":
		f.predict(w, body, vertex)
	default:
		f.echo(w, r, body)
	}
}

func (f *Google) authorized(h string) bool {
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return tok == GoogleStaticToken || f.issued[tok]
}

// token implements the JWT-bearer grant: it checks the assertion's
// signature against the trusted keys and its aud, iss and scope claims.
func (f *Google) token(w http.ResponseWriter, r *http.Request) {
	oauthError := func(status int, code, desc string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":%q,"error_description":%q}`, code, desc)
	}
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		oauthError(400, "unsupported_grant_type", "Invalid grant_type: "+r.PostForm.Get("grant_type"))
		return
	}
	f.mu.Lock()
	keys := append([]*rsa.PublicKey(nil), f.trusted...)
	f.mu.Unlock()
	var claims jwt.MapClaims
	var verr error = fmt.Errorf("no trusted key")
	for _, k := range keys {
		claims = jwt.MapClaims{}
		_, verr = jwt.ParseWithClaims(r.PostForm.Get("assertion"), claims, func(*jwt.Token) (any, error) { return k, nil },
			jwt.WithValidMethods([]string{"RS256"}), jwt.WithAudience(f.TokenURL()), jwt.WithExpirationRequired())
		if verr == nil {
			break
		}
	}
	if verr != nil {
		oauthError(400, "invalid_grant", "Invalid JWT Signature.")
		return
	}
	// iat is not compared with this clock: tests move the client's.
	if claims["scope"] != "https://www.googleapis.com/auth/cloud-platform" || claims["iss"] == nil || claims["iat"] == nil {
		oauthError(400, "invalid_scope", "Invalid OAuth scope or ID token audience provided.")
		return
	}
	f.mu.Lock()
	f.tokenFetches++
	tok := "ya29.fake-" + strconv.Itoa(f.tokenFetches)
	f.issued[tok] = true
	life := f.tokenLifetime
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	fmt.Fprintf(w, `{"access_token":%q,"expires_in":%d,"token_type":"Bearer"}`, tok, life)
}

// googleRequest is the part of a GenerateContentRequest the fake reads.
type googleRequest struct {
	Contents []struct {
		Role  string           `json:"role"`
		Parts []map[string]any `json:"parts"`
	} `json:"contents"`
	GenerationConfig struct {
		CandidateCount int `json:"candidateCount"`
		ThinkingConfig struct {
			IncludeThoughts bool `json:"includeThoughts"`
		} `json:"thinkingConfig"`
	} `json:"generationConfig"`
}

// functionResult returns the last functionResponse's response, if the
// last turn is one.
func (req *googleRequest) functionResult() (map[string]any, bool) {
	if len(req.Contents) == 0 {
		return nil, false
	}
	last := req.Contents[len(req.Contents)-1]
	for _, p := range last.Parts {
		if fr, ok := p["functionResponse"].(map[string]any); ok {
			resp, _ := fr["response"].(map[string]any)
			return resp, true
		}
	}
	return nil, false
}

// missingSignature finds a replayed functionCall part without the
// signature this fake issued.
func (req *googleRequest) missingSignature() string {
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if fc, ok := p["functionCall"].(map[string]any); ok {
				if p["thoughtSignature"] != GoogleToolSignature {
					return fmt.Sprint(fc["name"])
				}
			}
		}
	}
	return ""
}

func (f *Google) generate(w http.ResponseWriter, r *http.Request, body []byte, model string, vertex, stream bool) {
	var req googleRequest
	if err := json.Unmarshal(body, &req); err != nil {
		WriteGoogleError(w, 400, "INVALID_ARGUMENT", "Invalid JSON payload received. "+err.Error())
		return
	}
	if len(req.Contents) == 0 {
		WriteGoogleError(w, 400, "INVALID_ARGUMENT", "* GenerateContentRequest.contents: contents is not specified")
		return
	}
	if s, ok := strings.CutPrefix(model, "err-"); ok {
		status, _ := strconv.Atoi(s)
		switch status {
		case 429:
			WriteGoogleError(w, 429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan.",
				`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]}`,
				`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"34.4s"}`)
		case 404:
			WriteGoogleError(w, 404, "NOT_FOUND", "models/"+model+" is not found for API version v1beta, or is not supported for generateContent.")
		case 503:
			WriteGoogleError(w, 503, "UNAVAILABLE", "The model is overloaded. Please try again later.")
		default:
			WriteGoogleError(w, status, "INVALID_ARGUMENT", "fake upstream failure "+s)
		}
		return
	}
	if model == "stall" {
		<-r.Context().Done()
		return
	}
	if strings.Contains(model, "tool") {
		if name := req.missingSignature(); name != "" {
			WriteGoogleError(w, 400, "INVALID_ARGUMENT", "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly. Additional data, function call `"+name+"`.")
			return
		}
	}
	events := googleEvents(&req, model)
	extra := ""
	if vertex {
		extra = `,"createTime":"2026-08-22T10:00:00.123456Z"`
	}
	n := max(req.GenerationConfig.CandidateCount, 1)
	render := func(ev googleEvent, parts []string, final bool) string {
		var cands []string
		for i := range n {
			fin := ""
			if final && ev.finish != "" {
				fin = fmt.Sprintf(`,"finishReason":%q`, ev.finish)
			}
			if len(parts) == 0 && ev.finish == "" {
				continue
			}
			cands = append(cands, fmt.Sprintf(`{"content":{"parts":[%s],"role":"model"}%s,"index":%d}`, strings.Join(parts, ","), fin, i))
		}
		usage := ev.usage
		if vertex {
			usage = strings.TrimSuffix(usage, "}") + `,"trafficType":"ON_DEMAND"}`
		}
		out := `{`
		if len(cands) > 0 {
			out += `"candidates":[` + strings.Join(cands, ",") + `],`
		}
		if ev.blocked {
			out += `"promptFeedback":{"blockReason":"SAFETY","safetyRatings":[{"category":"HARM_CATEGORY_DANGEROUS_CONTENT","probability":"HIGH","blocked":true}]},`
		}
		return out + `"usageMetadata":` + usage + `,"modelVersion":"` + model + `-001","responseId":"resp-fake-1"` + extra + `}`
	}
	if !stream {
		var all []string
		for _, ev := range events {
			all = append(all, ev.parts...)
		}
		last := events[len(events)-1]
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		fmt.Fprint(w, render(last, all, true))
		return
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	cutAfter := -1
	if s, ok := strings.CutPrefix(model, "cut-after-"); ok {
		cutAfter, _ = strconv.Atoi(s)
	}
	for i, ev := range events {
		if i == cutAfter {
			panic(http.ErrAbortHandler)
		}
		if model == "error-event" && i == 1 {
			fmt.Fprint(w, "data: {\"error\":{\"code\":500,\"message\":\"Internal error encountered.\",\"status\":\"INTERNAL\"}}\r\n\r\n")
			rc.Flush()
			return
		}
		// Gemini separates events with CRLF pairs (PROVIDERS.md §0.10).
		if _, err := fmt.Fprintf(w, "data: %s\r\n\r\n", render(ev, ev.parts, i == len(events)-1)); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
}

// googleEvent is one streamed event: new parts, running usage, and the
// finish reason on the last.
type googleEvent struct {
	parts   []string
	usage   string
	finish  string
	blocked bool
}

func gtext(s string) string {
	b, _ := json.Marshal(s)
	return `{"text":` + string(b) + `}`
}

func googleEvents(req *googleRequest, model string) []googleEvent {
	switch {
	case model == "blocked":
		return []googleEvent{{blocked: true, usage: `{"promptTokenCount":7,"totalTokenCount":7}`}}
	case strings.Contains(model, "tool"):
		if res, ok := req.functionResult(); ok {
			b, _ := json.Marshal(res)
			return []googleEvent{
				{parts: []string{gtext("The tool said " + string(b) + ".")}, usage: `{"promptTokenCount":40,"candidatesTokenCount":6,"totalTokenCount":46}`},
				{parts: []string{`{"text":"","thoughtSignature":"EtoFFakeTextSignature=="}`}, usage: `{"promptTokenCount":40,"candidatesTokenCount":8,"totalTokenCount":48}`, finish: "STOP"},
			}
		}
		return []googleEvent{
			{parts: []string{`{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"` + GoogleToolSignature + `"}`},
				usage: `{"promptTokenCount":29,"candidatesTokenCount":15,"totalTokenCount":89,"thoughtsTokenCount":45}`},
			{parts: []string{gtext("")}, usage: `{"promptTokenCount":29,"candidatesTokenCount":15,"totalTokenCount":89,"thoughtsTokenCount":45}`, finish: "STOP"},
		}
	case strings.Contains(model, "think"):
		usage := `{"promptTokenCount":9,"candidatesTokenCount":10,"totalTokenCount":205,"cachedContentTokenCount":4,"thoughtsTokenCount":186}`
		var evs []googleEvent
		if req.GenerationConfig.ThinkingConfig.IncludeThoughts {
			evs = append(evs, googleEvent{parts: []string{`{"text":"Counting the r's in strawberry.","thought":true}`}, usage: usage})
		}
		return append(evs,
			googleEvent{parts: []string{gtext("There are 3 r's.")}, usage: usage},
			googleEvent{parts: []string{`{"text":"","thoughtSignature":"EqsFFakeThinkSignature=="}`}, usage: usage, finish: "STOP"},
		)
	}
	return []googleEvent{
		{parts: []string{gtext("Hello")}, usage: `{"promptTokenCount":9,"candidatesTokenCount":1,"totalTokenCount":10}`},
		{parts: []string{gtext(" from")}, usage: `{"promptTokenCount":9,"candidatesTokenCount":3,"totalTokenCount":12}`},
		{parts: []string{gtext(" Gemini.")}, usage: `{"promptTokenCount":9,"candidatesTokenCount":5,"totalTokenCount":14}`, finish: "STOP"},
	}
}

// GoogleEmbedding is the vector the fake returns for input i, cut or
// padded to dims when dims > 0.
func GoogleEmbedding(i, dims int) []float64 {
	v := []float64{0.25, -0.5, float64(i) + 0.125}
	if dims <= 0 {
		return v
	}
	out := make([]float64, dims)
	copy(out, v)
	return out
}

func (f *Google) batchEmbed(w http.ResponseWriter, body []byte, vertex bool) {
	if vertex {
		WriteGoogleError(w, 404, "NOT_FOUND", "batchEmbedContents is a Gemini API method")
		return
	}
	var req struct {
		Requests []struct {
			Model   string `json:"model"`
			Content struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"content"`
			OutputDimensionality int `json:"outputDimensionality"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Requests) == 0 {
		WriteGoogleError(w, 400, "INVALID_ARGUMENT", "* BatchEmbedContentsRequest.requests: requests is not specified")
		return
	}
	var out []string
	for i, r := range req.Requests {
		if !strings.HasPrefix(r.Model, "models/") {
			WriteGoogleError(w, 400, "INVALID_ARGUMENT", "* BatchEmbedContentsRequest.requests[0].model: unexpected model name format")
			return
		}
		b, _ := json.Marshal(GoogleEmbedding(i, r.OutputDimensionality))
		out = append(out, `{"values":`+string(b)+`}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	fmt.Fprintf(w, `{"embeddings":[%s]}`, strings.Join(out, ","))
}

func (f *Google) predict(w http.ResponseWriter, body []byte, vertex bool) {
	if !vertex {
		WriteGoogleError(w, 404, "NOT_FOUND", "predict is a Vertex method here")
		return
	}
	var req struct {
		Instances []struct {
			Content string `json:"content"`
		} `json:"instances"`
		Parameters struct {
			OutputDimensionality int `json:"outputDimensionality"`
		} `json:"parameters"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Instances) == 0 {
		WriteGoogleError(w, 400, "INVALID_ARGUMENT", "instances is required")
		return
	}
	var out []string
	for i, in := range req.Instances {
		b, _ := json.Marshal(GoogleEmbedding(i, req.Parameters.OutputDimensionality))
		out = append(out, fmt.Sprintf(`{"embeddings":{"statistics":{"truncated":false,"token_count":%d},"values":%s}}`, len(strings.Fields(in.Content)), b))
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	fmt.Fprintf(w, `{"predictions":[%s],"metadata":{"billableCharacterCount":42}}`, strings.Join(out, ","))
}

// echo answers any other path with what it received, for pass-through.
func (f *Google) echo(w http.ResponseWriter, r *http.Request, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	out, _ := json.Marshal(map[string]any{
		"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery, "body": string(body),
		"x_goog_api_key": r.Header.Get("x-goog-api-key"), "authorization": r.Header.Get("Authorization"),
	})
	w.Write(out)
}
