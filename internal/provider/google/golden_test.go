package google

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// stable makes ids and timestamps deterministic for golden output.
func stable(t *testing.T) {
	t.Helper()
	var n atomic.Int64
	oldNow, oldID := now, newID
	now = func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	newID = func(prefix string) string { return fmt.Sprintf("%stest%04d", prefix, n.Add(1)) }
	t.Cleanup(func() { now, newID = oldNow, oldID })
}

// loopbackClient is an HTTP client that reaches only this machine, so a
// test can never fetch from the internet.
func loopbackClient() *http.Client {
	d := &net.Dialer{Timeout: 2 * time.Second}
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, _ := net.SplitHostPort(addr)
			if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
				return nil, fmt.Errorf("test client: refusing to dial %s", addr)
			}
			return d.DialContext(ctx, network, addr)
		},
	}}
}

// tinyPNG is a 1x1 PNG.
var tinyPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

func imageServer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/cat.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(tinyPNG)
	})
	mux.HandleFunc("/untyped", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(tinyPNG)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/cat.png", http.StatusFound)
	})
	mux.HandleFunc("/page.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html></html>"))
	})
	mux.HandleFunc("/huge.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(tinyPNG)
		w.Write(make([]byte, maxMediaBytes))
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// chatCall decodes an OpenAI request body into a ChatCall.
func chatCall(t *testing.T, body []byte, strict bool, target *provider.Target) *provider.ChatCall {
	t.Helper()
	req, err := llm.DecodeChatRequest(body)
	if err != nil {
		t.Fatalf("decode request: %v", err)
	}
	if target == nil {
		target = &provider.Target{Provider: NameGoogle, APIKey: "k"}
	}
	return &provider.ChatCall{Target: target, Request: req, Body: body, StrictOpenAI: strict}
}

func indent(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatalf("indent: %v: %s", err, b)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// golden compares got with the file, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, d)
	}
}

// TestRequestGolden translates every testdata/requests/*.json (OpenAI
// requests; "nonstrict" in the name turns strict compliance off) for both
// providers, compares with the golden native body and the dropped fields,
// and validates the body against the provider's spec.
func TestRequestGolden(t *testing.T) {
	img := imageServer(t)
	inputs, _ := filepath.Glob("testdata/requests/*.json")
	n := 0
	for _, in := range inputs {
		if strings.Count(filepath.Base(in), ".") > 1 {
			continue // a golden output
		}
		n++
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		for _, vertex := range []bool{false, true} {
			prov := NameGoogle
			if vertex {
				prov = NameVertex
			}
			t.Run(name+"/"+prov, func(t *testing.T) {
				stable(t)
				raw, err := os.ReadFile(in)
				if err != nil {
					t.Fatal(err)
				}
				raw = bytes.ReplaceAll(raw, []byte("{{IMAGE_URL}}"), []byte(img.URL+"/cat.png"))
				c := New(loopbackClient())
				if vertex {
					c = NewVertex(loopbackClient())
				}
				c.sigs.put("call_sig_1", "c2lnLWZyb20tbWVtb3J5")
				call := chatCall(t, raw, !strings.Contains(name, "nonstrict"), nil)
				greq, err := c.buildRequest(context.Background(), call)
				if err != nil {
					t.Fatalf("buildRequest: %v", err)
				}
				body, err := json.Marshal(greq)
				if err != nil {
					t.Fatal(err)
				}
				schema := "GenerateContentRequest"
				if vertex {
					schema = "GoogleCloudAiplatformV1GenerateContentRequest"
				}
				validate(t, vertex, schema, body)
				dropped, _ := json.Marshal(call.Dropped)
				got := indent(t, []byte(`{"dropped":`+string(dropped)+`,"request":`+string(body)+`}`))
				golden(t, "testdata/requests/"+name+"."+prov+".json", got)
			})
		}
	}
	if n < 8 {
		t.Fatalf("only %d request inputs found", n)
	}
}

// responseCase is a native answer and the request that produced it.
type responseCase struct {
	name    string
	path    string // fixture or testdata file
	request string // OpenAI request JSON
}

const plainRequest = `{"model":"gemini-3-pro-preview","messages":[{"role":"user","content":"How many r's in strawberry?"}]}`

func responseCases() []responseCase {
	logprobsReq := `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"Hi"}],"logprobs":true,"top_logprobs":2,"n":2}`
	return []responseCase{
		{"google-text", fixturesDir + "google-text", plainRequest},
		{"google-tool-call", fixturesDir + "google-tool-call", plainRequest},
		{"google-reasoning", fixturesDir + "google-reasoning", plainRequest},
		{"thoughts", "testdata/responses/thoughts", plainRequest},
		{"blocked", "testdata/responses/blocked", plainRequest},
		{"candidates-logprobs", "testdata/responses/candidates-logprobs", logprobsReq},
		{"finish-reasons", "testdata/responses/finish-reasons", `{"model":"gemini-2.5-flash","messages":[{"role":"user","content":"Hi"}],"n":3}`},
		{"vertex-usage", "testdata/responses/vertex-usage", plainRequest},
	}
}

func readCase(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && strings.HasPrefix(path, fixturesDir) {
		t.Skipf("fixture %s not present", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestResponseGolden translates native answers (the recorded fixtures and
// some made here for cases they lack) into OpenAI responses, with strict
// compliance on and off.
func TestResponseGolden(t *testing.T) {
	for _, rc := range responseCases() {
		for _, strict := range []bool{true, false} {
			mode := map[bool]string{true: "strict", false: "nonstrict"}[strict]
			t.Run(rc.name+"/"+mode, func(t *testing.T) {
				stable(t)
				raw := readCase(t, rc.path+".json")
				c := New(loopbackClient())
				var gr generateResponse
				if err := json.Unmarshal(raw, &gr); err != nil {
					t.Fatal(err)
				}
				call := chatCall(t, []byte(rc.request), strict, nil)
				out, usage := c.toChatResponse(&gr, call)
				b, err := json.Marshal(out)
				if err != nil {
					t.Fatal(err)
				}
				checkOpenAIResponse(t, b, strict)
				if want := *usage.OpenAI(); out.Usage == nil || *out.Usage.PromptTokensDetails != *want.PromptTokensDetails || out.Usage.TotalTokens != want.TotalTokens {
					t.Errorf("usage for the log %+v does not match the response's %+v", usage, out.Usage)
				}
				golden(t, "testdata/responses/"+rc.name+"."+mode+".json", indent(t, b))
			})
		}
	}
}

// checkOpenAIResponse checks shape rules every answer must keep.
func checkOpenAIResponse(t *testing.T, b []byte, strict bool) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["object"] != "chat.completion" || m["id"] == "" {
		t.Errorf("bad envelope: %s", b)
	}
	for _, ch := range m["choices"].([]any) {
		msg := ch.(map[string]any)["message"].(map[string]any)
		if _, ok := msg["content"]; !ok {
			t.Errorf("message without content key: %s", b)
		}
		_, rc := msg["reasoning_content"]
		_, cb := msg["content_blocks"]
		if strict && (rc || cb) {
			t.Errorf("strict answer has non-OpenAI fields: %s", b)
		}
	}
}

// sseBody frames a fixture's decoded payloads (one per line) the way
// Gemini sends them: data lines and CRLF pairs.
func sseBody(t *testing.T, lines []byte) string {
	var sb strings.Builder
	for _, l := range bytes.Split(bytes.TrimSpace(lines), []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		sb.WriteString("data: ")
		sb.Write(bytes.TrimSpace(l))
		sb.WriteString("\r\n\r\n")
	}
	return sb.String()
}

// drain reads a stream to its end, returning each chunk's JSON and the
// final error rendered as a line.
func drain(t testing.TB, s provider.Stream) (lines []string, chunks []provider.Chunk, end error) {
	for {
		ch, err := s.Next()
		if err != nil {
			return lines, chunks, err
		}
		if !json.Valid(ch.Data) {
			t.Fatalf("chunk is not JSON: %s", ch.Data)
		}
		lines = append(lines, string(ch.Data))
		chunks = append(chunks, ch)
	}
}

func streamFrom(c *Client, call *provider.ChatCall, body string) *stream {
	return c.newStream(context.Background(), call, io.NopCloser(strings.NewReader(body)), http.Header{"Content-Type": {"text/event-stream"}})
}

// TestStreamGolden translates the recorded stream payloads chunk by chunk.
func TestStreamGolden(t *testing.T) {
	for _, rc := range responseCases() {
		for _, strict := range []bool{true, false} {
			mode := map[bool]string{true: "strict", false: "nonstrict"}[strict]
			t.Run(rc.name+"/"+mode, func(t *testing.T) {
				stable(t)
				raw := readCase(t, rc.path+".chunks.txt")
				c := New(loopbackClient())
				call := chatCall(t, []byte(rc.request), strict, nil)
				lines, chunks, end := drain(t, streamFrom(c, call, sseBody(t, raw)))
				if !errors.Is(end, io.EOF) {
					t.Fatalf("stream ended with %v", end)
				}
				checkStreamShape(t, lines, chunks, strict)
				golden(t, "testdata/streams/"+rc.name+"."+mode+".txt", []byte(strings.Join(lines, "\n")+"\n"))
			})
		}
	}
}

// checkStreamShape checks the stream rules of PROVIDERS.md §0.8 and the
// gateway: role chunk first, usage:null on every content chunk, one
// usage-only chunk last.
func checkStreamShape(t *testing.T, lines []string, chunks []provider.Chunk, strict bool) {
	t.Helper()
	if len(lines) < 2 {
		t.Fatalf("only %d chunks", len(lines))
	}
	var first map[string]any
	json.Unmarshal([]byte(lines[0]), &first)
	delta := first["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
	if delta["role"] != "assistant" || delta["content"] != "" {
		t.Errorf("first chunk delta = %v", delta)
	}
	for i, l := range lines {
		last := i == len(lines)-1
		if chunks[i].UsageOnly != last {
			t.Errorf("chunk %d UsageOnly = %v", i, chunks[i].UsageOnly)
		}
		if !last && !strings.Contains(l, `"usage":null`) {
			t.Errorf("content chunk %d lacks usage:null: %s", i, l)
		}
		if last && (!strings.Contains(l, `"choices":[]`) || chunks[i].Usage == nil) {
			t.Errorf("last chunk is not the usage chunk: %s", l)
		}
		if strict && (strings.Contains(l, "reasoning_content") || strings.Contains(l, "content_blocks")) {
			t.Errorf("strict chunk has non-OpenAI fields: %s", l)
		}
		if chunks[i].Model == "" {
			t.Errorf("chunk %d has no Model", i)
		}
	}
}
