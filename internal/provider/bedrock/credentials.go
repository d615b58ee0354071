package bedrock

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/smithy-go/aws-http-auth/credentials"

	"github.com/ai-gateway/gateway/internal/provider"
)

// Endpoints of the credential sources. Tests point them at local fakes;
// IMDS and STS also honour the AWS SDKs' own override variables.
var (
	containerHost = "http://169.254.170.2"
	imdsDefault   = "http://169.254.169.254"
)

const (
	// refreshBefore is how long before expiry temporary credentials are
	// fetched again, so a request never signs with keys about to lapse.
	refreshBefore = 5 * time.Minute
	// staticTTL is how long credentials without an expiry (the shared
	// credentials file) are kept before the file is read again.
	staticTTL = 5 * time.Minute
	// missTTL is how long "no credentials anywhere" is remembered, so a
	// gateway off EC2 does not wait for the metadata service on every call.
	missTTL = 30 * time.Second
	// metadataTimeout bounds each call to the container endpoint or IMDS.
	metadataTimeout = 2 * time.Second
)

// errNoCredentials means no source of the chain has credentials.
var errNoCredentials = errors.New("no AWS credentials")

// credentialChain resolves AWS credentials for targets that name none, in
// the AWS SDKs' default order: environment variables, the shared
// credentials file, the ECS/EKS container endpoint, web identity (IRSA)
// through STS, then EC2 instance metadata (IMDSv2). Everything but the
// environment is cached until shortly before it expires.
type credentialChain struct {
	// sts sends AssumeRoleWithWebIdentity; local is for the link-local
	// container and instance-metadata endpoints, which must not go through
	// a proxy.
	sts   *http.Client
	local *http.Client

	mu        sync.Mutex
	cached    credentials.Credentials
	source    string
	refreshAt time.Time
	missUntil time.Time
}

func newCredentialChain(hc *http.Client) *credentialChain {
	local := &http.Client{
		Transport: &http.Transport{
			DialContext:       (&net.Dialer{Timeout: metadataTimeout}).DialContext,
			DisableKeepAlives: true,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &credentialChain{sts: hc, local: local}
}

// get returns credentials from the first source that has them.
func (c *credentialChain) get(ctx context.Context, region string) (credentials.Credentials, error) {
	if cr, ok := fromEnv(); ok {
		return cr, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := now()
	if c.source != "" && t.Before(c.refreshAt) {
		return c.cached, nil
	}
	if t.Before(c.missUntil) {
		return credentials.Credentials{}, noCredentials()
	}
	cr, source, err := c.resolve(ctx, region)
	if err != nil {
		if errors.Is(err, errNoCredentials) {
			c.missUntil = t.Add(missTTL)
			return credentials.Credentials{}, noCredentials()
		}
		var ce *provider.ConfigError
		if errors.As(err, &ce) || errors.Is(err, provider.ErrUnreachable) || errors.Is(err, provider.ErrTimeout) || ctx.Err() != nil {
			return credentials.Credentials{}, err
		}
		// A configured source that failed: the gateway could not reach
		// what it needs to call the provider (502).
		return credentials.Credentials{}, errors.Join(provider.ErrUnreachable, err)
	}
	c.cached, c.source = cr, source
	c.refreshAt = t.Add(staticTTL)
	if !cr.Expires.IsZero() {
		c.refreshAt = cr.Expires.Add(-refreshBefore)
	}
	return cr, nil
}

func noCredentials() error {
	return &provider.ConfigError{Provider: Name, Param: "x-gateway-aws-access-key-id",
		Msg: "bedrock: no AWS credentials: send x-gateway-aws-access-key-id and x-gateway-aws-secret-access-key (or aws_access_key_id / aws_secret_access_key), a Bedrock API key as Authorization: Bearer, or give the gateway AWS credentials (environment, shared credentials file, container or instance role)"}
}

// resolve tries the cached sources in order. A source that is configured
// but fails is an error (as in the AWS SDKs); one that is absent passes.
func (c *credentialChain) resolve(ctx context.Context, region string) (credentials.Credentials, string, error) {
	if cr, ok, err := fromSharedFile(); err != nil || ok {
		return cr, "shared credentials file", err
	}
	if cr, ok, err := c.fromContainer(ctx); err != nil || ok {
		return cr, "container endpoint", err
	}
	if cr, ok, err := c.fromWebIdentity(ctx, region); err != nil || ok {
		return cr, "web identity", err
	}
	if cr, ok, err := c.fromIMDS(ctx); err != nil || ok {
		return cr, "instance metadata", err
	}
	return credentials.Credentials{}, "", errNoCredentials
}

// fromEnv reads AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN.
func fromEnv() (credentials.Credentials, bool) {
	id, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if id == "" || secret == "" {
		return credentials.Credentials{}, false
	}
	return credentials.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: os.Getenv("AWS_SESSION_TOKEN")}, true
}

// fromSharedFile reads the profile AWS_PROFILE (default "default") of
// AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials. Only static keys are
// read; profiles that assume roles or use SSO live in ~/.aws/config and
// are not supported.
func fromSharedFile() (credentials.Credentials, bool, error) {
	path := os.Getenv("AWS_SHARED_CREDENTIALS_FILE")
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return credentials.Credentials{}, false, nil
		}
		path = filepath.Join(home, ".aws", "credentials")
	}
	f, err := os.Open(path)
	if err != nil {
		return credentials.Credentials{}, false, nil
	}
	defer f.Close()
	profile := os.Getenv("AWS_PROFILE")
	if profile == "" {
		profile = "default"
	}
	kv, err := iniSection(f, profile)
	if err != nil {
		return credentials.Credentials{}, false, fmt.Errorf("bedrock: read %s: %w", path, err)
	}
	id, secret := kv["aws_access_key_id"], kv["aws_secret_access_key"]
	if id == "" || secret == "" {
		return credentials.Credentials{}, false, nil
	}
	return credentials.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: kv["aws_session_token"]}, true, nil
}

// iniSection returns the keys of section name of an INI file: "[name]"
// headers, "key = value" lines, ';' and '#' comments.
func iniSection(r io.Reader, name string) (map[string]string, error) {
	kv := map[string]string{}
	in := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				in = false
				continue
			}
			in = strings.TrimSpace(line[1:end]) == name
			continue
		}
		if !in {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		kv[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	return kv, sc.Err()
}

// metadataCredentials is the JSON of the container endpoint and of IMDS.
type metadataCredentials struct {
	Code            string `json:"Code"`
	Message         string `json:"Message"`
	AccessKeyID     string `json:"AccessKeyId"`
	SecretAccessKey string `json:"SecretAccessKey"`
	Token           string `json:"Token"`
	Expiration      string `json:"Expiration"`
}

func (m *metadataCredentials) credentials(source string) (credentials.Credentials, error) {
	if m.Code != "" && m.Code != "Success" {
		return credentials.Credentials{}, fmt.Errorf("bedrock: %s credentials: %s: %s", source, m.Code, m.Message)
	}
	if m.AccessKeyID == "" || m.SecretAccessKey == "" {
		return credentials.Credentials{}, fmt.Errorf("bedrock: %s answered no credentials", source)
	}
	cr := credentials.Credentials{AccessKeyID: m.AccessKeyID, SecretAccessKey: m.SecretAccessKey, SessionToken: m.Token}
	if m.Expiration != "" {
		exp, err := time.Parse(time.RFC3339, m.Expiration)
		if err != nil {
			return credentials.Credentials{}, fmt.Errorf("bedrock: %s credentials: bad Expiration %q", source, m.Expiration)
		}
		cr.Expires = exp
	}
	return cr, nil
}

// fromContainer asks the ECS task role or EKS Pod Identity endpoint named
// by AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI, sending
// AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE) when set.
func (c *credentialChain) fromContainer(ctx context.Context) (credentials.Credentials, bool, error) {
	var endpoint string
	if rel := os.Getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"); rel != "" {
		endpoint = containerHost + rel
	} else if full := os.Getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI"); full != "" {
		if err := checkContainerURI(full); err != nil {
			return credentials.Credentials{}, false, err
		}
		endpoint = full
	} else {
		return credentials.Credentials{}, false, nil
	}
	token := os.Getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN")
	if file := os.Getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"); file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return credentials.Credentials{}, false, fmt.Errorf("bedrock: container authorization token: %w", err)
		}
		token = strings.TrimSpace(string(b))
	}
	ctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return credentials.Credentials{}, false, fmt.Errorf("bedrock: container credentials endpoint %q: %w", endpoint, err)
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	var m metadataCredentials
	if err := c.getJSON(c.local, req, &m); err != nil {
		return credentials.Credentials{}, false, fmt.Errorf("bedrock: container credentials: %w", err)
	}
	cr, err := m.credentials("container endpoint")
	return cr, err == nil, err
}

// checkContainerURI allows what the AWS SDKs allow for _FULL_URI: https
// anywhere, http only to loopback or the ECS/EKS link-local addresses, so
// a token is never sent in clear to another host.
func checkContainerURI(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("bedrock: AWS_CONTAINER_CREDENTIALS_FULL_URI %q is not a URL", s)
	}
	if u.Scheme == "https" {
		return nil
	}
	if u.Scheme == "http" {
		host := u.Hostname()
		if host == "localhost" || host == "169.254.170.2" || host == "169.254.170.23" || host == "fd00:ec2::23" {
			return nil
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			return nil
		}
	}
	return fmt.Errorf("bedrock: AWS_CONTAINER_CREDENTIALS_FULL_URI %q must be https or a loopback or ECS/EKS address", s)
}

// fromWebIdentity exchanges the token in AWS_WEB_IDENTITY_TOKEN_FILE for
// credentials of AWS_ROLE_ARN with STS AssumeRoleWithWebIdentity (IRSA on
// EKS). The STS endpoint is regional, or AWS_ENDPOINT_URL_STS.
func (c *credentialChain) fromWebIdentity(ctx context.Context, region string) (credentials.Credentials, bool, error) {
	file, role := os.Getenv("AWS_WEB_IDENTITY_TOKEN_FILE"), os.Getenv("AWS_ROLE_ARN")
	if file == "" || role == "" {
		return credentials.Credentials{}, false, nil
	}
	tok, err := os.ReadFile(file)
	if err != nil {
		return credentials.Credentials{}, false, fmt.Errorf("bedrock: web identity token: %w", err)
	}
	session := os.Getenv("AWS_ROLE_SESSION_NAME")
	if session == "" {
		session = "ai-gateway-" + strconv.FormatInt(now().UnixNano(), 10)
	}
	endpoint := os.Getenv("AWS_ENDPOINT_URL_STS")
	if endpoint == "" {
		endpoint = "https://sts." + region + ".amazonaws.com"
	}
	form := url.Values{
		"Action":           {"AssumeRoleWithWebIdentity"},
		"Version":          {"2011-06-15"},
		"RoleArn":          {role},
		"RoleSessionName":  {session},
		"WebIdentityToken": {strings.TrimSpace(string(tok))},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(endpoint, "/")+"/", strings.NewReader(form.Encode()))
	if err != nil {
		return credentials.Credentials{}, false, fmt.Errorf("bedrock: STS endpoint %q: %w", endpoint, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.sts.Do(req)
	if err != nil {
		return credentials.Credentials{}, false, fmt.Errorf("bedrock: STS AssumeRoleWithWebIdentity: %w", provider.ClassifyTransportError(ctx, err))
	}
	defer resp.Body.Close()
	body, err := readBody(resp.Body, 1<<20)
	if err != nil {
		return credentials.Credentials{}, false, fmt.Errorf("bedrock: STS AssumeRoleWithWebIdentity: %w", provider.ClassifyTransportError(ctx, err))
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Code    string `xml:"Code"`
				Message string `xml:"Message"`
			} `xml:"Error"`
		}
		_ = xml.Unmarshal(body, &e)
		return credentials.Credentials{}, false, &provider.ConfigError{Provider: Name, Msg: fmt.Sprintf("bedrock: STS AssumeRoleWithWebIdentity answered %d %s: %s", resp.StatusCode, e.Error.Code, e.Error.Message)}
	}
	var out struct {
		Result struct {
			Credentials struct {
				AccessKeyID     string `xml:"AccessKeyId"`
				SecretAccessKey string `xml:"SecretAccessKey"`
				SessionToken    string `xml:"SessionToken"`
				Expiration      string `xml:"Expiration"`
			} `xml:"Credentials"`
		} `xml:"AssumeRoleWithWebIdentityResult"`
	}
	if err := xml.Unmarshal(body, &out); err != nil {
		return credentials.Credentials{}, false, fmt.Errorf("bedrock: STS AssumeRoleWithWebIdentity: %w", err)
	}
	m := out.Result.Credentials
	cr, err := (&metadataCredentials{AccessKeyID: m.AccessKeyID, SecretAccessKey: m.SecretAccessKey, Token: m.SessionToken, Expiration: m.Expiration}).credentials("STS")
	return cr, err == nil, err
}

// fromIMDS asks EC2 instance metadata (IMDSv2: a session token first) for
// the instance role's credentials. AWS_EC2_METADATA_DISABLED=true skips
// it; AWS_EC2_METADATA_SERVICE_ENDPOINT moves it. Any failure means "not
// on EC2" and the chain finds nothing.
func (c *credentialChain) fromIMDS(ctx context.Context) (credentials.Credentials, bool, error) {
	if strings.EqualFold(os.Getenv("AWS_EC2_METADATA_DISABLED"), "true") {
		return credentials.Credentials{}, false, nil
	}
	base := os.Getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT")
	if base == "" {
		base = imdsDefault
	}
	base = strings.TrimSuffix(base, "/")
	ctx, cancel := context.WithTimeout(ctx, metadataTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, base+"/latest/api/token", nil)
	if err != nil {
		return credentials.Credentials{}, false, nil
	}
	req.Header.Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
	token, err := c.getText(req)
	if err != nil {
		return credentials.Credentials{}, false, nil
	}
	get := func(path string) (*http.Request, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err == nil {
			r.Header.Set("X-Aws-Ec2-Metadata-Token", token)
		}
		return r, err
	}
	req, err = get("/latest/meta-data/iam/security-credentials/")
	if err != nil {
		return credentials.Credentials{}, false, nil
	}
	roles, err := c.getText(req)
	if err != nil {
		return credentials.Credentials{}, false, nil
	}
	role, _, _ := strings.Cut(strings.TrimSpace(roles), "\n")
	if role = strings.TrimSpace(role); role == "" {
		return credentials.Credentials{}, false, nil
	}
	req, err = get("/latest/meta-data/iam/security-credentials/" + url.PathEscape(role))
	if err != nil {
		return credentials.Credentials{}, false, nil
	}
	var m metadataCredentials
	if err := c.getJSON(c.local, req, &m); err != nil {
		return credentials.Credentials{}, false, fmt.Errorf("bedrock: instance metadata credentials: %w", err)
	}
	cr, err := m.credentials("instance metadata")
	return cr, err == nil, err
}

func (c *credentialChain) getText(req *http.Request) (string, error) {
	resp, err := c.local.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := readBody(resp.Body, 64<<10)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s %s answered %d", req.Method, req.URL.Path, resp.StatusCode)
	}
	return string(b), nil
}

func (c *credentialChain) getJSON(hc *http.Client, req *http.Request, v any) error {
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := readBody(resp.Body, 64<<10)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d", req.URL.Redacted(), resp.StatusCode)
	}
	return json.Unmarshal(b, v)
}
