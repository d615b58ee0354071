// Package bedrock is the adapter for AWS Bedrock Runtime (PROVIDERS.md §6):
// it translates OpenAI chat requests to the Converse API
// (POST /model/{modelId}/converse and /converse-stream), Converse answers and
// the binary AWS event stream back to OpenAI's chat.completion and
// chat.completion.chunk shapes, and embeddings to InvokeModel calls for the
// Titan and Cohere embedding models. It owns SigV4 signing (service
// "bedrock"), Bedrock API keys (Bearer), and the AWS credential chain used
// when a target names no keys (environment, shared credentials file,
// container endpoint, web identity, EC2 instance metadata).
//
// bedrock imports only provider and llm from the gateway (it has no use for
// sse: Bedrock streams binary frames), plus its codec and signing libraries
// (aws-sdk-go-v2's eventstream, smithy-go's aws-http-auth) and gjson/sjson.
package bedrock

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/aws/smithy-go/aws-http-auth/credentials"
	"github.com/aws/smithy-go/aws-http-auth/sigv4"
	v4 "github.com/aws/smithy-go/aws-http-auth/v4"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/ai-gateway/gateway/internal/provider"
)

// Name is the provider slug (x-gateway-provider: bedrock).
const Name = "bedrock"

// signingName is the SigV4 service name of bedrock-runtime; it is "bedrock",
// not "bedrock-runtime" (the model's aws.auth#sigv4 trait).
const signingName = "bedrock"

// maxResponseBytes bounds a non-streamed answer read into memory.
const maxResponseBytes = 64 << 20

// maxErrorBytes bounds an error body read into memory.
const maxErrorBytes = 1 << 20

// now is the clock; golden tests replace it.
var now = time.Now

// Client is the Bedrock Runtime adapter.
type Client struct {
	http *http.Client
	// fetch downloads images given by http(s) URL; unlike http it follows
	// redirects, since it sends no credentials.
	fetch *http.Client
	creds *credentialChain
}

var (
	_ provider.Provider = (*Client)(nil)
	_ provider.Embedder = (*Client)(nil)
	_ provider.Native   = (*Client)(nil)
)

// New returns the adapter, sending requests with hc.
func New(hc *http.Client) *Client {
	fetch := *hc
	fetch.CheckRedirect = nil
	return &Client{http: hc, fetch: &fetch, creds: newCredentialChain(hc)}
}

// Name returns the provider slug.
func (c *Client) Name() string { return Name }

// Native reports that Bedrock is reached through translation: it has no
// OpenAI-style /completions or /embeddings to forward to.
func (c *Client) Native() bool { return true }

// region returns the AWS region of t: the aws_region option, else
// AWS_REGION or AWS_DEFAULT_REGION from the environment.
func region(t *provider.Target) (string, error) {
	r := t.Option("aws_region")
	if r == "" {
		r = os.Getenv("AWS_REGION")
	}
	if r == "" {
		r = os.Getenv("AWS_DEFAULT_REGION")
	}
	if r == "" {
		return "", &provider.ConfigError{Provider: Name, Param: "x-gateway-aws-region", Msg: "bedrock needs an AWS region: set x-gateway-aws-region (or aws_region), or AWS_REGION on the gateway"}
	}
	// The region becomes part of a host name and of the signature scope.
	for i := 0; i < len(r); i++ {
		if c := r[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return "", &provider.ConfigError{Provider: Name, Param: "x-gateway-aws-region", Msg: fmt.Sprintf("invalid AWS region %q", r)}
		}
	}
	return r, nil
}

// auth is how one request is authenticated: SigV4 with creds in region, or
// a Bedrock API key as a Bearer token.
type auth struct {
	bearer string
	creds  credentials.Credentials
	region string
}

// resolveAuth picks the credentials of t (API.md §3): access keys from the
// target's options win; else its API key is a Bedrock API key; else the AWS
// credential chain of the gateway's environment.
func (c *Client) resolveAuth(ctx context.Context, t *provider.Target) (auth, error) {
	akid, secret := t.Option("aws_access_key_id"), t.Option("aws_secret_access_key")
	if akid != "" || secret != "" {
		if akid == "" || secret == "" {
			return auth{}, &provider.ConfigError{Provider: Name, Param: "x-gateway-aws-secret-access-key", Msg: "bedrock needs both aws_access_key_id and aws_secret_access_key"}
		}
		r, err := region(t)
		if err != nil {
			return auth{}, err
		}
		return auth{creds: credentials.Credentials{AccessKeyID: akid, SecretAccessKey: secret, SessionToken: t.Option("aws_session_token")}, region: r}, nil
	}
	if t.APIKey != "" {
		// A Bedrock API key with a custom host needs no region: nothing
		// is signed and the host is given.
		r, err := region(t)
		if err != nil && t.CustomHost == "" {
			return auth{}, err
		}
		return auth{bearer: t.APIKey, region: r}, nil
	}
	r, err := region(t)
	if err != nil {
		return auth{}, err
	}
	creds, err := c.creds.get(ctx, r)
	if err != nil {
		return auth{}, err
	}
	return auth{creds: creds, region: r}, nil
}

// baseURL is the custom host, or https://bedrock-runtime.{region}.amazonaws.com.
func baseURL(t *provider.Target, region string) string {
	if t.CustomHost != "" {
		return strings.TrimSuffix(t.CustomHost, "/")
	}
	return "https://bedrock-runtime." + region + ".amazonaws.com"
}

// modelPath is /model/{modelId}/{op} with the model id escaped as one path
// segment: ARNs and inference-profile ids carry ':' and '/', which Bedrock
// wants as %3A and %2F (the AWS SDKs escape every byte outside RFC 3986's
// unreserved set).
func modelPath(model, op string) string {
	return "/model/" + escapeSegment(model) + "/" + op
}

func escapeSegment(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteString(fmt.Sprintf("%%%02X", c))
	}
	return b.String()
}

// parseURL parses u keeping its escaping, so the wire path and the path the
// signature covers are the same bytes.
func parseURL(u string) (*url.URL, error) {
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return nil, &provider.ConfigError{Provider: Name, Msg: fmt.Sprintf("invalid upstream URL %q", u)}
	}
	return pu, nil
}

// signer signs the headers Bedrock needs (host, x-amz-*) plus content-type,
// and sends the payload hash as x-amz-content-sha256, as the AWS SDKs do.
var signer = sigv4.New(func(o *v4.SignerOptions) {
	o.HeaderRules = signedHeaders{}
	o.AddPayloadHashHeader = true
})

type signedHeaders struct{}

func (signedHeaders) IsSigned(h string) bool {
	return h == "host" || h == "content-type" || strings.HasPrefix(h, "x-amz-")
}

// sign signs req for service in region over body with SigV4 at time t. The
// request's URL and Host must be final.
func sign(req *http.Request, body []byte, creds credentials.Credentials, service, region string, t time.Time) error {
	sum := sha256.Sum256(body)
	return signer.SignRequest(&sigv4.SignRequestInput{
		Request: req, PayloadHash: sum[:], Credentials: creds,
		Service: service, Region: region, Time: t,
	})
}

// authorize sets the request's authentication headers over body.
func (a auth) authorize(req *http.Request, body []byte) error {
	req.Header.Del("Authorization")
	req.Header.Del("X-Amz-Security-Token")
	if a.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+a.bearer)
		return nil
	}
	if err := sign(req, body, a.creds, signingName, a.region, now()); err != nil {
		return fmt.Errorf("bedrock: sign request: %w", err)
	}
	return nil
}

// post builds and sends a signed POST of body to path (which starts with
// /model/) and returns the answer whatever its status.
func (c *Client) post(ctx context.Context, t *provider.Target, hdr http.Header, path string, body []byte, accept string) (*http.Response, error) {
	a, err := c.resolveAuth(ctx, t)
	if err != nil {
		return nil, err
	}
	u, err := parseURL(baseURL(t, a.region) + path)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, &provider.ConfigError{Provider: Name, Msg: fmt.Sprintf("invalid upstream URL %q", u)}
	}
	req.URL = u
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	if err := a.authorize(req, body); err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, provider.ClassifyTransportError(ctx, err)
	}
	return resp, nil
}

// PrepareForward points a pass-through request at bedrock-runtime (or the
// custom host) and authenticates it: SigV4 over the body, or a Bearer API key.
func (c *Client) PrepareForward(out *http.Request, t *provider.Target, path, rawQuery string) error {
	a, err := c.resolveAuth(out.Context(), t)
	if err != nil {
		return err
	}
	raw := baseURL(t, a.region) + path
	if rawQuery != "" {
		raw += "?" + rawQuery
	}
	u, err := parseURL(raw)
	if err != nil {
		return err
	}
	out.URL = u
	out.Host = u.Host
	var body []byte
	if out.GetBody != nil {
		rc, err := out.GetBody()
		if err != nil {
			return fmt.Errorf("bedrock: read forwarded body: %w", err)
		}
		body, err = io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("bedrock: read forwarded body: %w", err)
		}
	}
	return a.authorize(out, body)
}

// Chat sends a non-streamed Converse request.
func (c *Client) Chat(ctx context.Context, call *provider.ChatCall) (*provider.Response, error) {
	body, err := c.buildRequest(ctx, call)
	if err != nil {
		return nil, err
	}
	resp, err := c.post(ctx, call.Target, call.Header, modelPath(call.Request.Model, "converse"), body, "application/json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := readBody(resp.Body, maxResponseBytes)
	if err != nil {
		return nil, provider.ClassifyTransportError(ctx, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, upstreamError(resp, raw)
	}
	if len(raw) > maxResponseBytes {
		return nil, fmt.Errorf("%w: response larger than %d bytes", provider.ErrBadResponse, maxResponseBytes)
	}
	out, usage, err := translateResponse(raw, call.Request.Model, responseID(resp.Header), !call.StrictOpenAI)
	if err != nil {
		return nil, err
	}
	return &provider.Response{Status: http.StatusOK, Header: resp.Header, Body: out, Usage: usage, Model: call.Request.Model}, nil
}

// ChatStream sends a ConverseStream request and returns its translated
// chunks once Bedrock has answered 200.
func (c *Client) ChatStream(ctx context.Context, call *provider.ChatCall) (provider.Stream, error) {
	body, err := c.buildRequest(ctx, call)
	if err != nil {
		return nil, err
	}
	resp, err := c.post(ctx, call.Target, call.Header, modelPath(call.Request.Model, "converse-stream"), body, eventStreamType)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		raw, err := readBody(resp.Body, maxErrorBytes)
		if err != nil {
			return nil, provider.ClassifyTransportError(ctx, err)
		}
		return nil, upstreamError(resp, raw)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, eventStreamType) {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: bedrock answered a stream request with Content-Type %q", provider.ErrBadResponse, ct)
	}
	return newStream(ctx, resp, call.Request.Model, responseID(resp.Header), !call.StrictOpenAI), nil
}

// readBody reads at most limit+1 bytes, so callers can tell an oversized body.
func readBody(r io.Reader, limit int64) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, limit+1))
}

// responseID is "chatcmpl-" plus Bedrock's request id, or a random id.
func responseID(h http.Header) string {
	if id := h.Get("X-Amzn-Requestid"); id != "" {
		return "chatcmpl-" + id
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "chatcmpl-" + hex.EncodeToString(b[:])
}

// exceptionStatus maps Bedrock's error names (x-amzn-ErrorType) to the
// HTTP status the gateway answers, per the model's smithy.api#httpError
// traits (PROVIDERS.md §6 "Errors"); a proxy in between may have changed
// the status, and throttling must reach the client as 429.
var exceptionStatus = map[string]int{
	"ValidationException":           http.StatusBadRequest,
	"ServiceQuotaExceededException": http.StatusBadRequest,
	"AccessDeniedException":         http.StatusForbidden,
	"UnrecognizedClientException":   http.StatusForbidden,
	"InvalidSignatureException":     http.StatusForbidden,
	"ExpiredTokenException":         http.StatusForbidden,
	"ResourceNotFoundException":     http.StatusNotFound,
	"ModelTimeoutException":         http.StatusRequestTimeout,
	"ModelErrorException":           http.StatusFailedDependency,
	"ModelStreamErrorException":     http.StatusFailedDependency,
	"ThrottlingException":           http.StatusTooManyRequests,
	"ModelNotReadyException":        http.StatusTooManyRequests,
	"InternalServerException":       http.StatusInternalServerError,
	"ServiceUnavailableException":   http.StatusServiceUnavailable,
}

// errorName returns the exception name of a restJson1 error: the
// x-amzn-ErrorType header up to ':', or the body's __type / code.
func errorName(h http.Header, body []byte) string {
	name := h.Get("X-Amzn-Errortype")
	if name == "" && json.Valid(body) {
		name = gjson.GetBytes(body, "__type").String()
		if name == "" {
			name = gjson.GetBytes(body, "code").String()
		}
	}
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndexByte(name, '#'); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// upstreamError turns a non-2xx answer into *provider.UpstreamError with
// the status mapped from the exception name. The body is kept; where it
// lacks them, "message" (Bedrock sometimes spells it "Message") and "code"
// (the exception name) are added so the gateway's error parser finds them.
func upstreamError(resp *http.Response, body []byte) error {
	status := resp.StatusCode
	name := errorName(resp.Header, body)
	if s, ok := exceptionStatus[name]; ok {
		status = s
	}
	if json.Valid(body) && bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		if m := gjson.GetBytes(body, "Message"); m.Exists() && !gjson.GetBytes(body, "message").Exists() {
			if b, err := sjson.SetBytes(body, "message", m.String()); err == nil {
				body = b
			}
		}
		if name != "" && !gjson.GetBytes(body, "code").Exists() {
			if b, err := sjson.SetBytes(body, "code", name); err == nil {
				body = b
			}
		}
	}
	return &provider.UpstreamError{Provider: Name, Status: status, Header: resp.Header, Body: body}
}
