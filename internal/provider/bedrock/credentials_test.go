package bedrock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/smithy-go/aws-http-auth/credentials"

	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/provider/providertest"
)

func eventstreamEncoder() *eventstream.Encoder { return eventstream.NewEncoder() }

func credentialsOf(id, secret, token string) credentials.Credentials {
	return credentials.Credentials{AccessKeyID: id, SecretAccessKey: secret, SessionToken: token}
}

// cleanEnv clears every variable the credential chain reads; IMDS stays
// disabled unless a test enables it against a fake.
func cleanEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
		"AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME",
		"AWS_ENDPOINT_URL_STS", "AWS_EC2_METADATA_SERVICE_ENDPOINT"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "absent"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// setNow moves the package clock for one test.
func setNow(t *testing.T, tm time.Time) {
	old := now
	now = func() time.Time { return tm }
	t.Cleanup(func() { now = old })
}

func expiry(d time.Duration) string { return now().Add(d).UTC().Format(time.RFC3339) }

func TestCredentialsEnvironment(t *testing.T) {
	cleanEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret-env")
	t.Setenv("AWS_SESSION_TOKEN", "token-env")
	// The environment wins over the file.
	file := filepath.Join(t.TempDir(), "credentials")
	os.WriteFile(file, []byte("[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = s\n"), 0o600)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", file)
	cr, err := newCredentialChain(http.DefaultClient).get(context.Background(), "us-east-1")
	if err != nil || cr != credentialsOf("AKIDENV", "secret-env", "token-env") {
		t.Fatalf("creds = %+v, %v", cr, err)
	}
}

func TestCredentialsSharedFile(t *testing.T) {
	cleanEnv(t)
	file := filepath.Join(t.TempDir(), "credentials")
	os.WriteFile(file, []byte(`# comment
[default]
aws_access_key_id = AKIDDEFAULT
aws_secret_access_key = secret-default

[work]
; another comment
aws_access_key_id=AKIDWORK
aws_secret_access_key = secret/work+x=
aws_session_token = token-work
[empty]
`), 0o600)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", file)
	cr, err := newCredentialChain(http.DefaultClient).get(context.Background(), "us-east-1")
	if err != nil || cr.AccessKeyID != "AKIDDEFAULT" || cr.SecretAccessKey != "secret-default" {
		t.Fatalf("default profile: %+v, %v", cr, err)
	}
	t.Setenv("AWS_PROFILE", "work")
	cr, err = newCredentialChain(http.DefaultClient).get(context.Background(), "us-east-1")
	if err != nil || cr != credentialsOf("AKIDWORK", "secret/work+x=", "token-work") {
		t.Fatalf("work profile: %+v, %v", cr, err)
	}
	t.Setenv("AWS_PROFILE", "empty")
	_, err = newCredentialChain(http.DefaultClient).get(context.Background(), "us-east-1")
	var ce *provider.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("empty profile: err = %v, want ConfigError", err)
	}
}

func metadataJSON(id string, exp string) string {
	return fmt.Sprintf(`{"Code":"Success","Type":"AWS-HMAC","AccessKeyId":%q,"SecretAccessKey":"secret-%s","Token":"token-%s","Expiration":%q}`, id, id, id, exp)
}

func TestCredentialsContainer(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("Authorization") != "Bearer container-token" {
			http.Error(w, `{"Code":"AccessDenied"}`, 403)
			return
		}
		fmt.Fprint(w, metadataJSON("AKIDTASK", expiry(time.Hour)))
	}))
	defer srv.Close()

	t.Run("relative URI", func(t *testing.T) {
		cleanEnv(t)
		old := containerHost
		containerHost = srv.URL
		t.Cleanup(func() { containerHost = old })
		t.Setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/abc")
		t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "Bearer container-token")
		cr, err := newCredentialChain(http.DefaultClient).get(context.Background(), "us-east-1")
		if err != nil || cr.AccessKeyID != "AKIDTASK" || cr.SessionToken != "token-AKIDTASK" || cr.Expires.IsZero() {
			t.Fatalf("creds = %+v, %v", cr, err)
		}
	})
	t.Run("full URI with token file", func(t *testing.T) {
		cleanEnv(t)
		tok := filepath.Join(t.TempDir(), "token")
		os.WriteFile(tok, []byte("Bearer container-token\n"), 0o600)
		t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", srv.URL+"/get-credentials")
		t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", tok)
		cr, err := newCredentialChain(http.DefaultClient).get(context.Background(), "us-east-1")
		if err != nil || cr.AccessKeyID != "AKIDTASK" {
			t.Fatalf("creds = %+v, %v", cr, err)
		}
	})
	t.Run("wrong token", func(t *testing.T) {
		cleanEnv(t)
		t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", srv.URL+"/get-credentials")
		t.Setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "nope")
		_, err := newCredentialChain(http.DefaultClient).get(context.Background(), "us-east-1")
		if err == nil || !errors.Is(err, provider.ErrUnreachable) {
			t.Fatalf("err = %v, want a failure of the configured source", err)
		}
	})
	t.Run("full URI must be local or https", func(t *testing.T) {
		cleanEnv(t)
		t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://example.com/creds")
		if _, err := newCredentialChain(http.DefaultClient).get(context.Background(), "us-east-1"); err == nil {
			t.Fatal("accepted a plain-http remote endpoint")
		}
	})
}

func TestCredentialsWebIdentity(t *testing.T) {
	var form url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		form = r.PostForm
		if form.Get("WebIdentityToken") != "jwt-token" {
			w.WriteHeader(400)
			io.WriteString(w, `<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code><Message>Token is not valid</Message></Error></ErrorResponse>`)
			return
		}
		fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleWithWebIdentityResult>
    <Credentials>
      <AccessKeyId>ASIAIRSA</AccessKeyId>
      <SecretAccessKey>secret-irsa</SecretAccessKey>
      <SessionToken>token-irsa</SessionToken>
      <Expiration>%s</Expiration>
    </Credentials>
  </AssumeRoleWithWebIdentityResult>
</AssumeRoleWithWebIdentityResponse>`, expiry(time.Hour))
	}))
	defer srv.Close()
	cleanEnv(t)
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte("jwt-token\n"), 0o600)
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", tok)
	t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/gateway")
	t.Setenv("AWS_ROLE_SESSION_NAME", "gw-test")
	t.Setenv("AWS_ENDPOINT_URL_STS", srv.URL)
	cr, err := newCredentialChain(http.DefaultClient).get(context.Background(), "eu-west-1")
	if err != nil || cr.AccessKeyID != "ASIAIRSA" || cr.SecretAccessKey != "secret-irsa" || cr.SessionToken != "token-irsa" || cr.Expires.IsZero() {
		t.Fatalf("creds = %+v, %v", cr, err)
	}
	if form.Get("Action") != "AssumeRoleWithWebIdentity" || form.Get("RoleArn") != "arn:aws:iam::123456789012:role/gateway" || form.Get("RoleSessionName") != "gw-test" || form.Get("Version") != "2011-06-15" {
		t.Errorf("form = %v", form)
	}
	os.WriteFile(tok, []byte("bad"), 0o600)
	_, err = newCredentialChain(http.DefaultClient).get(context.Background(), "eu-west-1")
	var ce *provider.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(ce.Msg, "InvalidIdentityToken") {
		t.Fatalf("err = %v, want the STS error", err)
	}
}

// imdsFake is an EC2 instance-metadata service requiring IMDSv2 tokens.
func imdsFake(t *testing.T, exp func() string) (*httptest.Server, *atomic.Int32) {
	var credCalls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token":
			if r.Header.Get("X-Aws-Ec2-Metadata-Token-Ttl-Seconds") == "" {
				w.WriteHeader(400)
				return
			}
			io.WriteString(w, "imds-session-token")
		case r.Header.Get("X-Aws-Ec2-Metadata-Token") != "imds-session-token":
			w.WriteHeader(401)
		case r.URL.Path == "/latest/meta-data/iam/security-credentials/":
			io.WriteString(w, "gateway-role\n")
		case r.URL.Path == "/latest/meta-data/iam/security-credentials/gateway-role":
			credCalls.Add(1)
			fmt.Fprint(w, metadataJSON(fmt.Sprintf("ASIAEC2%d", credCalls.Load()), exp()))
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &credCalls
}

func TestCredentialsIMDS(t *testing.T) {
	cleanEnv(t)
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	setNow(t, start)
	srv, calls := imdsFake(t, func() string { return start.Add(time.Hour).Format(time.RFC3339) })
	t.Setenv("AWS_EC2_METADATA_DISABLED", "false")
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.URL)
	chain := newCredentialChain(http.DefaultClient)
	ctx := context.Background()
	cr, err := chain.get(ctx, "us-east-1")
	if err != nil || cr.AccessKeyID != "ASIAEC21" || cr.SessionToken != "token-ASIAEC21" {
		t.Fatalf("creds = %+v, %v", cr, err)
	}
	// Cached until shortly before expiry.
	setNow(t, start.Add(50*time.Minute))
	if cr, _ := chain.get(ctx, "us-east-1"); cr.AccessKeyID != "ASIAEC21" || calls.Load() != 1 {
		t.Fatalf("refetched too early: %+v after %d calls", cr, calls.Load())
	}
	setNow(t, start.Add(56*time.Minute))
	if cr, _ := chain.get(ctx, "us-east-1"); cr.AccessKeyID != "ASIAEC22" || calls.Load() != 2 {
		t.Fatalf("not refreshed before expiry: %+v after %d calls", cr, calls.Load())
	}
}

func TestCredentialsNone(t *testing.T) {
	cleanEnv(t)
	srv, calls := imdsFake(t, func() string { return expiry(time.Hour) })
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.URL)
	chain := newCredentialChain(http.DefaultClient)
	_, err := chain.get(context.Background(), "us-east-1")
	var ce *provider.ConfigError
	if !errors.As(err, &ce) || calls.Load() != 0 {
		t.Fatalf("err = %v after %d IMDS calls, want ConfigError and IMDS skipped", err, calls.Load())
	}
	// An unreachable metadata service means "not on EC2", remembered for a while.
	t.Setenv("AWS_EC2_METADATA_DISABLED", "")
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(404) }))
	dead.Close()
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", dead.URL)
	chain = newCredentialChain(http.DefaultClient)
	if _, err := chain.get(context.Background(), "us-east-1"); !errors.As(err, &ce) {
		t.Fatalf("err = %v, want ConfigError", err)
	}
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.URL)
	if _, err := chain.get(context.Background(), "us-east-1"); !errors.As(err, &ce) || calls.Load() != 0 {
		t.Fatalf("miss not remembered: err = %v, %d calls", err, calls.Load())
	}
}

// TestChatWithCredentialChain signs with credentials from the environment
// when the target names none.
func TestChatWithCredentialChain(t *testing.T) {
	cleanEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", providertest.BedrockAccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", providertest.BedrockSecretAccessKey)
	t.Setenv("AWS_REGION", "ca-central-1")
	f := providertest.NewBedrock(t)
	call := chatCall(t, `{"model":"amazon.nova-micro-v1:0","messages":[{"role":"user","content":"hi"}]}`, true)
	call.Target = &provider.Target{Provider: Name, CustomHost: f.URL()}
	if _, err := New(provider.NewHTTPClient()).Chat(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	if got := f.Regions(); len(got) != 1 || got[0] != "ca-central-1" {
		t.Errorf("regions = %v", got)
	}
}
