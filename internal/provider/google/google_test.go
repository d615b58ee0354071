package google

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/provider/providertest"
)

func TestPrepareForward(t *testing.T) {
	for _, tc := range []struct {
		name       string
		vertex     bool
		customHost string
		apiKey     string
		opts       map[string]string
		path, q    string
		want       string
		wantKey    string
		wantAuth   string
	}{
		{name: "gemini", path: "/models/gemini-2.5-flash:countTokens", apiKey: "k",
			want: "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:countTokens", wantKey: "k"},
		{name: "gemini custom host", customHost: "http://127.0.0.1:9/v1beta/", path: "/files", q: "pageSize=2", apiKey: "k",
			want: "http://127.0.0.1:9/v1beta/files?pageSize=2", wantKey: "k"},
		{name: "vertex regional", vertex: true, apiKey: "ya29.tok", opts: map[string]string{"vertex_project_id": "acme", "vertex_region": "us-central1"},
			path: "/publishers/google/models/gemini-2.5-flash:countTokens",
			want: "https://us-central1-aiplatform.googleapis.com/v1/projects/acme/locations/us-central1/publishers/google/models/gemini-2.5-flash:countTokens", wantAuth: "Bearer ya29.tok"},
		{name: "vertex global", vertex: true, apiKey: "ya29.tok", opts: map[string]string{"vertex_project_id": "acme", "vertex_region": "global"},
			path: "/cachedContents", want: "https://aiplatform.googleapis.com/v1/projects/acme/locations/global/cachedContents", wantAuth: "Bearer ya29.tok"},
		{name: "vertex custom host", vertex: true, apiKey: "ya29.tok", customHost: "http://127.0.0.1:9", opts: map[string]string{"vertex_project_id": "acme", "vertex_region": "europe-west4"},
			path: "/endpoints", want: "http://127.0.0.1:9/v1/projects/acme/locations/europe-west4/endpoints", wantAuth: "Bearer ya29.tok"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(loopbackClient())
			prov := NameGoogle
			if tc.vertex {
				c, prov = NewVertex(loopbackClient()), NameVertex
			}
			out, _ := http.NewRequest("GET", "http://placeholder", nil)
			err := c.PrepareForward(out, &provider.Target{Provider: prov, APIKey: tc.apiKey, CustomHost: tc.customHost, Options: tc.opts}, tc.path, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := out.URL.String(); got != tc.want {
				t.Errorf("URL = %s, want %s", got, tc.want)
			}
			if out.Host != out.URL.Host {
				t.Errorf("Host = %s", out.Host)
			}
			if out.Header.Get("x-goog-api-key") != tc.wantKey || out.Header.Get("Authorization") != tc.wantAuth {
				t.Errorf("auth headers = %v", out.Header)
			}
		})
	}
}

func TestVertexConfigErrors(t *testing.T) {
	c := NewVertex(loopbackClient())
	for _, tc := range []struct {
		name      string
		apiKey    string
		opts      map[string]string
		wantParam string
	}{
		{"no project", "t", map[string]string{"vertex_region": "us-central1"}, "x-gateway-vertex-project-id"},
		{"no region", "t", map[string]string{"vertex_project_id": "p"}, "x-gateway-vertex-region"},
		{"region is a path", "t", map[string]string{"vertex_project_id": "p", "vertex_region": "us/../x"}, "x-gateway-vertex-region"},
		{"project is a host", "t", map[string]string{"vertex_project_id": "evil.com:1/x", "vertex_region": "us"}, "x-gateway-vertex-project-id"},
		{"no credentials", "", map[string]string{"vertex_project_id": "p", "vertex_region": "us"}, "x-gateway-vertex-service-account-json"},
		{"bad key file", "", map[string]string{"vertex_project_id": "p", "vertex_region": "us", "vertex_service_account_json": "{not json"}, "x-gateway-vertex-service-account-json"},
		{"key file without key", "", map[string]string{"vertex_project_id": "p", "vertex_region": "us", "vertex_service_account_json": `{"client_email":"a@b"}`}, "x-gateway-vertex-service-account-json"},
		{"key not PEM", "", map[string]string{"vertex_project_id": "p", "vertex_region": "us", "vertex_service_account_json": `{"client_email":"a@b","private_key":"nope","token_uri":"http://127.0.0.1:9/token"}`}, "x-gateway-vertex-service-account-json"},
		{"token_uri not http", "", map[string]string{"vertex_project_id": "p", "vertex_region": "us", "vertex_service_account_json": `{"client_email":"a@b","private_key":"x","token_uri":"file:///etc/passwd"}`}, "x-gateway-vertex-service-account-json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := http.NewRequest("GET", "http://placeholder", nil)
			err := c.PrepareForward(out, &provider.Target{Provider: NameVertex, APIKey: tc.apiKey, Options: tc.opts}, "/x", "")
			var ce *provider.ConfigError
			if !errors.As(err, &ce) || ce.Param != tc.wantParam {
				t.Errorf("err = %v, want a ConfigError on %s", err, tc.wantParam)
			}
		})
	}
	call := chatCall(t, []byte(`{"model":"claude-sonnet-4@20250514","messages":[{"role":"user","content":"hi"}]}`), true,
		&provider.Target{Provider: NameVertex, APIKey: "t", Options: map[string]string{"vertex_project_id": "p", "vertex_region": "us-east5"}})
	_, err := c.Chat(context.Background(), call)
	var ce *provider.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(ce.Msg, "Claude") {
		t.Errorf("claude on vertex: err = %v", err)
	}
}

// TestRequestErrors covers what is refused with 400 rather than ignored.
func TestRequestErrors(t *testing.T) {
	img := imageServer(t)
	for _, tc := range []struct {
		name, body, param string
		vertex            bool
	}{
		{"audio out", `{"modalities":["text","audio"],"audio":{"voice":"alloy","format":"wav"}}`, "audio", false},
		{"modalities", `{"modalities":["audio"]}`, "modalities", false},
		{"prediction", `{"prediction":{"type":"content","content":"x"}}`, "prediction", false},
		{"tool result for unknown call", `{"messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"call_x","content":"1"}]}`, "messages[1].tool_call_id", false},
		{"tool args not an object", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`, "messages[1].tool_calls[0].function.arguments", false},
		{"gs uri on gemini api", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"gs://b/cat.png"}}]}]}`, "messages[0].content[0].image_url.url", false},
		{"openai file id", `{"messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-abc"}}]}]}`, "messages[0].content[0].file.file_id", true},
		{"unknown part", `{"messages":[{"role":"user","content":[{"type":"video_url","video_url":{"url":"x"}}]}]}`, "messages[0].content[0].type", false},
		{"image 404", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + img.URL + `/missing.png"}}]}]}`, "messages[0].content[0].image_url.url", false},
		{"image is html", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + img.URL + `/page.html"}}]}]}`, "messages[0].content[0].image_url.url", false},
		{"image too large", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + img.URL + `/huge.png"}}]}]}`, "messages[0].content[0].image_url.url", true},
		{"ftp image", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}]}`, "messages[0].content[0].image_url.url", false},
		{"bad data url", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64"}}]}]}`, "messages[0].content[0].image_url.url", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			if !strings.Contains(body, `"messages"`) {
				body = `{"messages":[{"role":"user","content":"hi"}],` + body[1:]
			}
			body = `{"model":"gemini-2.5-flash",` + body[1:]
			c := New(loopbackClient())
			if tc.vertex {
				c = NewVertex(loopbackClient())
			}
			_, err := c.buildRequest(context.Background(), chatCall(t, []byte(body), true, nil))
			var ue *provider.UnsupportedParameterError
			if !errors.As(err, &ue) || ue.Param != tc.param {
				t.Fatalf("err = %v, want unsupported %s", err, tc.param)
			}
		})
	}
}

// TestMediaFetch covers the image URLs that are inlined or referenced.
func TestMediaFetch(t *testing.T) {
	img := imageServer(t)
	for _, tc := range []struct {
		name, url string
		vertex    bool
		want      string
	}{
		{"redirect followed", img.URL + "/moved", false, `{"inlineData":{"mimeType":"image/png","data":"` + base64.StdEncoding.EncodeToString(tinyPNG) + `"}}`},
		{"type sniffed", img.URL + "/untyped", false, `{"inlineData":{"mimeType":"image/png","data":"` + base64.StdEncoding.EncodeToString(tinyPNG) + `"}}`},
		{"gs uri on vertex", "gs://bucket/photos/cat.webp", true, `{"fileData":{"mimeType":"image/webp","fileUri":"gs://bucket/photos/cat.webp"}}`},
		{"percent data url", "data:image/svg+xml,%3Csvg%2F%3E", false, `{"inlineData":{"mimeType":"image/svg+xml","data":"PHN2Zy8+"}}`},
		{"untyped data url", "data:;base64," + base64.StdEncoding.EncodeToString(tinyPNG), false, `{"inlineData":{"mimeType":"image/png","data":"` + base64.StdEncoding.EncodeToString(tinyPNG) + `"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(loopbackClient())
			if tc.vertex {
				c = NewVertex(loopbackClient())
			}
			p, err := c.imagePart(context.Background(), tc.url, "p")
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(p)
			if string(got) != tc.want {
				t.Errorf("part = %s, want %s", got, tc.want)
			}
		})
	}
	// The client going away while an image downloads is not a 400.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := New(loopbackClient()).imagePart(ctx, img.URL+"/cat.png", "p")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("canceled fetch: err = %v", err)
	}
}

func TestToolChoice(t *testing.T) {
	tools := `"tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}}]`
	for _, tc := range []struct{ choice, want string }{
		{`"none"`, `{"mode":"NONE"}`},
		{`"auto"`, `{"mode":"AUTO"}`},
		{`"required"`, `{"mode":"ANY"}`},
		{`{"type":"function","function":{"name":"b"}}`, `{"mode":"ANY","allowedFunctionNames":["b"]}`},
		{`{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"a"}}]}}`, `{"mode":"ANY","allowedFunctionNames":["a"]}`},
		{`{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"a"}},{"type":"function","function":{"name":"b"}}]}}`, `{"mode":"VALIDATED","allowedFunctionNames":["a","b"]}`},
	} {
		body := `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}],` + tools + `,"tool_choice":` + tc.choice + `}`
		g, err := New(loopbackClient()).buildRequest(context.Background(), chatCall(t, []byte(body), true, nil))
		if err != nil {
			t.Fatalf("%s: %v", tc.choice, err)
		}
		got, _ := json.Marshal(g.ToolConfig.FunctionCallingConfig)
		if string(got) != tc.want {
			t.Errorf("tool_choice %s → %s, want %s", tc.choice, got, tc.want)
		}
	}
}

func TestThinkingMapping(t *testing.T) {
	for _, tc := range []struct {
		model, extra string
		strict       bool
		want         string
	}{
		{"gemini-2.5-flash", `"reasoning_effort":"none"`, false, `{"thinkingBudget":0}`},
		{"gemini-2.5-flash", `"reasoning_effort":"minimal"`, true, `{"thinkingBudget":512}`},
		{"gemini-2.5-pro", `"reasoning_effort":"xhigh"`, false, `{"includeThoughts":true,"thinkingBudget":24576}`},
		{"gemini-3-flash-preview", `"reasoning_effort":"none"`, false, `{"thinkingLevel":"MINIMAL"}`},
		{"gemini-3-pro-preview", `"reasoning_effort":"max"`, false, `{"includeThoughts":true,"thinkingLevel":"HIGH"}`},
		{"gemini-3-pro-preview", `"thinking":{"type":"disabled"}`, false, `{"thinkingLevel":"MINIMAL"}`},
		{"gemini-2.5-pro", `"thinking":{"type":"enabled"}`, false, `{"includeThoughts":true,"thinkingBudget":-1}`},
		{"gemini-2.5-pro", `"thinking":{"type":"enabled","budget_tokens":100}`, true, `{"thinkingBudget":100}`},
	} {
		body := `{"model":"` + tc.model + `","messages":[{"role":"user","content":"hi"}],` + tc.extra + `}`
		g, err := New(loopbackClient()).buildRequest(context.Background(), chatCall(t, []byte(body), tc.strict, nil))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(g.GenerationConfig.ThinkingConfig)
		if string(got) != tc.want {
			t.Errorf("%s %s strict=%v → %s, want %s", tc.model, tc.extra, tc.strict, got, tc.want)
		}
	}
}

func TestRetryAfterFromRetryInfo(t *testing.T) {
	raw := readCase(t, fixturesDir+"google-429-retry-info.json")
	c := New(loopbackClient())
	err := c.upstreamError(429, http.Header{"Content-Type": {"application/json"}}, raw)
	var ue *provider.UpstreamError
	if !errors.As(err, &ue) || ue.Header.Get("Retry-After") != "35" {
		t.Fatalf("err = %#v", err)
	}
	if d := provider.ParseErrorBody(ue.Body); d.Message != "You exceeded your current quota, please check your plan." || d.Type != "RESOURCE_EXHAUSTED" {
		t.Errorf("parsed error = %+v", d)
	}
	// A Retry-After the provider sent wins.
	err = c.upstreamError(429, http.Header{"Retry-After": {"3"}}, raw)
	if errors.As(err, &ue); ue.Header.Get("Retry-After") != "3" {
		t.Errorf("Retry-After = %q", ue.Header.Get("Retry-After"))
	}
	// Vertex may wrap the error in an array.
	err = c.upstreamError(400, http.Header{}, []byte(`[{"error":{"code":400,"message":"bad","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":{"seconds":2,"nanos":1}}]}}]`))
	if errors.As(err, &ue); provider.ParseErrorBody(ue.Body).Message != "bad" || ue.Header.Get("Retry-After") != "3" {
		t.Errorf("array error: body %s, header %v", ue.Body, ue.Header)
	}
}

func vertexTarget(f *providertest.Google, sa string) *provider.Target {
	return &provider.Target{Provider: NameVertex, CustomHost: f.VertexHost(), Options: map[string]string{
		"vertex_project_id": "test-project", "vertex_region": "us-central1", "vertex_service_account_json": sa,
	}}
}

// TestChatAgainstFake sends real requests to the fake upstreams: URLs,
// credentials, the translated answer, and the thought signature a client
// that only echoes tool_calls still gets back to Gemini.
func TestChatAgainstFake(t *testing.T) {
	f := providertest.NewGoogle(t)
	for _, vertex := range []bool{false, true} {
		name := map[bool]string{false: NameGoogle, true: NameVertex}[vertex]
		t.Run(name, func(t *testing.T) {
			c := New(loopbackClient())
			target := &provider.Target{Provider: NameGoogle, APIKey: "gk", CustomHost: f.GeminiBaseURL()}
			wantPath := "/v1beta/models/gemini-3-pro-tool:generateContent"
			if vertex {
				c = NewVertex(loopbackClient())
				target = vertexTarget(f, f.ServiceAccountJSON())
				wantPath = "/v1/projects/test-project/locations/us-central1/publishers/google/models/gemini-3-pro-tool:generateContent"
			}
			body := `{"model":"gemini-3-pro-tool","messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`
			resp, err := c.Chat(context.Background(), chatCall(t, []byte(body), true, target))
			if err != nil {
				t.Fatal(err)
			}
			last := f.Last()
			if last.Path != wantPath {
				t.Errorf("path = %s", last.Path)
			}
			if vertex && !strings.HasPrefix(last.Header.Get("Authorization"), "Bearer ya29.fake-") || !vertex && last.Header.Get("x-goog-api-key") != "gk" {
				t.Errorf("credentials: %v", last.Header)
			}
			validate(t, vertex, map[bool]string{false: "GenerateContentRequest", true: "GoogleCloudAiplatformV1GenerateContentRequest"}[vertex], last.Body)
			var out llm.ChatResponse
			if err := json.Unmarshal(resp.Body, &out); err != nil {
				t.Fatal(err)
			}
			tc := out.Choices[0].Message.ToolCalls
			if len(tc) != 1 || out.Choices[0].FinishReason != "tool_calls" || !strings.HasPrefix(tc[0].ID, "call_") {
				t.Fatalf("answer = %s", resp.Body)
			}
			if resp.Usage.PromptTokens != 29 || resp.Usage.CompletionTokens != 60 || resp.Usage.ReasoningTokens != 45 || resp.Usage.TotalTokens != 89 {
				t.Errorf("usage = %+v", resp.Usage)
			}
			// The client echoes only tool_calls; the fake refuses a replayed
			// call without its signature.
			next := `{"model":"gemini-3-pro-tool","messages":[{"role":"user","content":"Weather in Paris?"},` +
				`{"role":"assistant","content":null,"tool_calls":[{"id":"` + tc[0].ID + `","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},` +
				`{"role":"tool","tool_call_id":"` + tc[0].ID + `","content":"{\"sky\":\"clear\"}"}]}`
			resp, err = c.Chat(context.Background(), chatCall(t, []byte(next), true, target))
			if err != nil {
				t.Fatalf("second turn: %v", err)
			}
			if !strings.Contains(string(resp.Body), `The tool said {\"sky\":\"clear\"}.`) {
				t.Errorf("second answer = %s", resp.Body)
			}
		})
	}
}

func TestStreamAgainstFake(t *testing.T) {
	f := providertest.NewGoogle(t)
	c := New(loopbackClient())
	target := &provider.Target{Provider: NameGoogle, APIKey: "gk", CustomHost: f.GeminiBaseURL()}
	call := chatCall(t, []byte(`{"model":"gemini-2.5-flash","stream":true,"messages":[{"role":"user","content":"hi"}]}`), true, target)
	s, err := c.ChatStream(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if f.Last().Query != "alt=sse" {
		t.Errorf("query = %q", f.Last().Query)
	}
	lines, chunks, end := drain(t, s)
	if !errors.Is(end, io.EOF) {
		t.Fatalf("end = %v", end)
	}
	checkStreamShape(t, lines, chunks, true)
	var text strings.Builder
	for _, l := range lines {
		var ch llm.ChatChunk
		json.Unmarshal([]byte(l), &ch)
		if len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != nil {
			text.WriteString(*ch.Choices[0].Delta.Content)
		}
	}
	if text.String() != "Hello from Gemini." {
		t.Errorf("text = %q", text.String())
	}
	if u := chunks[len(chunks)-1].Usage; u.PromptTokens != 9 || u.CompletionTokens != 5 || u.TotalTokens != 14 {
		t.Errorf("usage = %+v", u)
	}

	for _, tc := range []struct {
		model string
		check func(error) bool
	}{
		{"error-event", func(err error) bool {
			var se *provider.StreamError
			return errors.As(err, &se) && strings.Contains(string(se.Data), "INTERNAL")
		}},
		{"cut-after-1", func(err error) bool { return errors.Is(err, provider.ErrStreamBroken) }},
	} {
		call := chatCall(t, []byte(`{"model":"`+tc.model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`), true, target)
		s, err := c.ChatStream(context.Background(), call)
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		_, _, end := drain(t, s)
		s.Close()
		if !tc.check(end) {
			t.Errorf("%s: end = %v", tc.model, end)
		}
	}

	call = chatCall(t, []byte(`{"model":"err-429","stream":true,"messages":[{"role":"user","content":"hi"}]}`), true, target)
	_, err = c.ChatStream(context.Background(), call)
	var ue *provider.UpstreamError
	if !errors.As(err, &ue) || ue.Status != 429 || ue.Header.Get("Retry-After") != "35" {
		t.Errorf("429: err = %v", err)
	}
}

// TestStreamEnds covers how a stream may end.
func TestStreamEnds(t *testing.T) {
	call := chatCall(t, []byte(plainRequest), true, nil)
	for _, tc := range []struct {
		name, body string
		want       error
	}{
		{"no events", "", provider.ErrStreamBroken},
		{"no finishReason", "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}]}\r\n\r\n", provider.ErrStreamBroken},
		{"cut inside an event", "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]},\"finishReason\":\"STOP\"}]}", provider.ErrStreamBroken},
		{"garbage", "data: {not json\r\n\r\n", provider.ErrBadResponse},
		{"complete", "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]},\"finishReason\":\"STOP\"}]}\r\n\r\n", io.EOF},
	} {
		_, _, end := drain(t, streamFrom(New(nil), call, tc.body))
		if !errors.Is(end, tc.want) {
			t.Errorf("%s: end = %v, want %v", tc.name, end, tc.want)
		}
	}
}

// TestVertexTokenCache: one token serves many requests, concurrent misses
// fetch once, and a token is replaced shortly before it expires.
func TestVertexTokenCache(t *testing.T) {
	f := providertest.NewGoogle(t)
	sa := f.ServiceAccountJSON()
	clock := time.Now()
	var mu sync.Mutex
	oldNow := now
	now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	t.Cleanup(func() { now = oldNow })
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }

	c := NewVertex(loopbackClient())
	target := vertexTarget(f, sa)
	body := []byte(`{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}]}`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Chat(context.Background(), chatCall(t, body, true, target)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := f.TokenFetches(); n != 1 {
		t.Fatalf("token fetched %d times for 8 concurrent requests", n)
	}
	advance(50 * time.Minute)
	if _, err := c.Chat(context.Background(), chatCall(t, body, true, target)); err != nil {
		t.Fatal(err)
	}
	if n := f.TokenFetches(); n != 1 {
		t.Fatalf("token refetched while valid: %d", n)
	}
	advance(6 * time.Minute) // within the refresh margin of the hour
	if _, err := c.Chat(context.Background(), chatCall(t, body, true, target)); err != nil {
		t.Fatal(err)
	}
	if n := f.TokenFetches(); n != 2 {
		t.Fatalf("token not refreshed near expiry: %d fetches", n)
	}
	if got := f.Last().Header.Get("Authorization"); got != "Bearer ya29.fake-2" {
		t.Errorf("Authorization = %q", got)
	}
	// The same key base64-encoded is accepted (and is another cache key).
	b64 := vertexTarget(f, base64.StdEncoding.EncodeToString([]byte(sa)))
	if _, err := c.Chat(context.Background(), chatCall(t, body, true, b64)); err != nil {
		t.Fatal(err)
	}
	// An access token in place of a key file is used as is.
	bare := vertexTarget(f, "")
	bare.APIKey = providertest.GoogleStaticToken
	if _, err := c.Chat(context.Background(), chatCall(t, body, true, bare)); err != nil {
		t.Fatal(err)
	}
	if got := f.Last().Header.Get("Authorization"); got != "Bearer "+providertest.GoogleStaticToken {
		t.Errorf("Authorization = %q", got)
	}
}

func TestVertexTokenRefused(t *testing.T) {
	f := providertest.NewGoogle(t)
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	c := NewVertex(loopbackClient())
	target := vertexTarget(f, providertest.GoogleServiceAccountJSON(other, f.TokenURL()))
	_, err = c.Chat(context.Background(), chatCall(t, []byte(`{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"}]}`), true, target))
	var ue *provider.UpstreamError
	if !errors.As(err, &ue) || ue.Status != 401 || !strings.Contains(provider.ParseErrorBody(ue.Body).Message, "invalid_grant") {
		t.Fatalf("err = %v", err)
	}
	if len(f.Requests()) != 0 {
		t.Errorf("the model was called without a token")
	}
}

func TestEmbeddings(t *testing.T) {
	f := providertest.NewGoogle(t)
	for _, vertex := range []bool{false, true} {
		name := map[bool]string{false: NameGoogle, true: NameVertex}[vertex]
		t.Run(name, func(t *testing.T) {
			c := New(loopbackClient())
			target := &provider.Target{Provider: NameGoogle, APIKey: "gk", CustomHost: f.GeminiBaseURL()}
			schema, wantPath := "BatchEmbedContentsRequest", "/v1beta/models/gemini-embedding-001:batchEmbedContents"
			if vertex {
				c = NewVertex(loopbackClient())
				target = vertexTarget(f, f.ServiceAccountJSON())
				schema, wantPath = "GoogleCloudAiplatformV1PredictRequest", "/v1/projects/test-project/locations/us-central1/publishers/google/models/gemini-embedding-001:predict"
			}
			req, err := llm.DecodeEmbeddingRequest([]byte(`{"model":"gemini-embedding-001","input":["hello world","bye"],"dimensions":4,"user":"u"}`))
			if err != nil {
				t.Fatal(err)
			}
			call := &provider.EmbedCall{Target: target, Request: req}
			resp, err := c.Embed(context.Background(), call)
			if err != nil {
				t.Fatal(err)
			}
			last := f.Last()
			if last.Path != wantPath {
				t.Errorf("path = %s", last.Path)
			}
			validate(t, vertex, schema, last.Body)
			golden(t, "testdata/requests/embeddings."+name+".json", indent(t, last.Body))
			var out llm.EmbeddingResponse
			json.Unmarshal(resp.Body, &out)
			if out.Object != "list" || len(out.Data) != 2 || out.Model != "gemini-embedding-001" || len(out.Data[1].Embedding.([]any)) != 4 {
				t.Errorf("answer = %s", resp.Body)
			}
			wantTokens := 0
			if vertex {
				wantTokens = 3 // the fake counts words
			}
			if out.Usage.PromptTokens != wantTokens || resp.Usage.PromptTokens != wantTokens {
				t.Errorf("usage = %+v / %+v", out.Usage, resp.Usage)
			}
			if len(call.Dropped) != 1 || call.Dropped[0] != "user" {
				t.Errorf("dropped = %v", call.Dropped)
			}

			req.EncodingFormat = "base64"
			resp, err = c.Embed(context.Background(), &provider.EmbedCall{Target: target, Request: req})
			if err != nil {
				t.Fatal(err)
			}
			json.Unmarshal(resp.Body, &out)
			raw, _ := base64.StdEncoding.DecodeString(out.Data[0].Embedding.(string))
			if len(raw) != 16 {
				t.Errorf("base64 embedding of %d bytes", len(raw))
			}

			tok, _ := llm.DecodeEmbeddingRequest([]byte(`{"model":"m","input":[1,2,3]}`))
			_, err = c.Embed(context.Background(), &provider.EmbedCall{Target: target, Request: tok})
			var up *provider.UnsupportedParameterError
			if !errors.As(err, &up) || up.Param != "input" {
				t.Errorf("token input: err = %v", err)
			}
		})
	}
}

func TestSignatureStoreBounded(t *testing.T) {
	s := newSignatureStore(3)
	for _, id := range []string{"a", "b", "c", "d"} {
		s.put(id, "sig-"+id)
	}
	s.put("", "x")
	s.put("e", "")
	if s.get("a") != "" || s.get("b") != "sig-b" || s.get("d") != "sig-d" || s.get("e") != "" || len(s.m) != 3 {
		t.Errorf("store = %v", s.m)
	}
	s.put("b", "new")
	if s.get("b") != "new" || len(s.m) != 3 {
		t.Errorf("update: %v", s.m)
	}
}

// TestStreamHeaders checks that a non-SSE answer to a stream request is
// refused and that the provider's headers are kept.
func TestStreamHeaders(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`[]`))
	}))
	defer srv.Close()
	call := chatCall(t, []byte(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`), true,
		&provider.Target{Provider: NameGoogle, APIKey: "k", CustomHost: srv.URL})
	_, err := New(loopbackClient()).ChatStream(context.Background(), call)
	if !errors.Is(err, provider.ErrBadResponse) {
		t.Errorf("err = %v", err)
	}
}

// TestContentBlocksText covers how an assistant message's text and the
// text blocks it carries back are reconciled.
func TestContentBlocksText(t *testing.T) {
	for _, tc := range []struct{ name, msg, want string }{
		{"blocks hold the text", `{"role":"assistant","content":"ab","content_blocks":[{"type":"text","text":"a","signature":"s1"},{"type":"text","text":"b"}]}`,
			`[{"text":"a","thoughtSignature":"s1"},{"text":"b"}]`},
		{"streamed: signature only", `{"role":"assistant","content":"ab","content_blocks":[{"type":"thinking","thinking":"t"},{"type":"text","text":"","signature":"s1"}]}`,
			`[{"text":"t","thought":true},{"text":"ab"},{"text":"","thoughtSignature":"s1"}]`},
		{"client edited the text", `{"role":"assistant","content":"edited","content_blocks":[{"type":"text","text":"a","signature":"s1"},{"type":"text","text":"b","signature":"s2"}]}`,
			`[{"text":"edited","thoughtSignature":"s1"}]`},
		{"no blocks", `{"role":"assistant","content":"plain","reasoning_content":"not replayed"}`, `[{"text":"plain"}]`},
	} {
		body := `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"hi"},` + tc.msg + `,{"role":"user","content":"more"}]}`
		g, err := New(loopbackClient()).buildRequest(context.Background(), chatCall(t, []byte(body), false, nil))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(g.Contents[1].Parts)
		if string(got) != tc.want {
			t.Errorf("%s: parts = %s, want %s", tc.name, got, tc.want)
		}
	}
}
