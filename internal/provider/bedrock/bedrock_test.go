package bedrock

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/provider/providertest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const fixtureDir = specDir + "/fixtures/vercel-ai"

func TestMain(m *testing.M) {
	// Golden output has a fixed clock; no test may reach the real
	// instance-metadata service.
	now = func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	os.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	os.Exit(m.Run())
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file %s: %v (run go test -update)", path, err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

func indent(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtureDir, name))
	if err != nil {
		if os.IsNotExist(err) {
			t.Skipf("fixture not available: %v", err)
		}
		t.Fatal(err)
	}
	return b
}

func chatCall(t *testing.T, body string, strict bool) *provider.ChatCall {
	t.Helper()
	req, err := llm.DecodeChatRequest([]byte(body))
	if err != nil {
		t.Fatalf("decode request: %v\n%s", err, body)
	}
	return &provider.ChatCall{
		Target:       &provider.Target{Provider: Name, Options: map[string]string{"aws_region": "us-east-1", "aws_access_key_id": providertest.BedrockAccessKeyID, "aws_secret_access_key": providertest.BedrockSecretAccessKey}},
		Request:      req,
		Body:         []byte(body),
		StrictOpenAI: strict,
	}
}

// pngBytes is a 1x1 PNG.
var pngBytes, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// jpegHeader is enough of a JPEG for content sniffing.
var jpegHeader = []byte{0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 'J', 'F', 'I', 'F', 0}

func imageServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/cat.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write(pngBytes)
		case "/redirect":
			http.Redirect(w, r, "/cat.png", http.StatusFound)
		case "/sniff":
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(jpegHeader)
		case "/huge":
			w.Header().Set("Content-Type", "image/png")
			w.Write(pngBytes)
			w.Write(make([]byte, maxImageBytes))
		case "/text":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("not an image"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRequestGolden translates OpenAI requests covering every mapped field
// to Converse bodies, compares them with golden files and validates each
// against the Smithy model.
func TestRequestGolden(t *testing.T) {
	v := converseValidator(t)
	img := imageServer(t)
	png := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	weatherTool := `{"type":"function","function":{"name":"get_weather","description":"Get current weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`
	timeTool := `{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{}}}}`
	history := `{"role":"user","content":"Weather in Paris?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_abc123","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"call_abc123","content":"{\"temp_c\": 18, \"sky\": \"sunny\"}"}`
	for _, tc := range []struct {
		name, body string
		strict     bool
	}{
		{"basic", `{"model":"anthropic.claude-3-5-haiku-20241022-v1:0","messages":[
			{"role":"system","content":"You are terse."},
			{"role":"developer","content":[{"type":"text","text":"Answer in English."}]},
			{"role":"user","content":"Say hello."}],
			"temperature":0.2,"top_p":0.9,"max_tokens":256,"stop":["END","STOP"]}`, true},
		{"temperature_clamped", `{"model":"amazon.nova-lite-v1:0","messages":[{"role":"user","content":"hi"}],
			"temperature":1.7,"max_tokens":50,"max_completion_tokens":100,"stop":"\n\n"}`, true},
		{"turns_merged", `{"model":"meta.llama3-70b-instruct-v1:0","messages":[
			{"role":"user","content":"First."},
			{"role":"user","content":[{"type":"text","text":"Second."},{"type":"text","text":""}]},
			{"role":"assistant","content":"Noted."},
			{"role":"assistant","content":[{"type":"text","text":"Anything else?"}]},
			{"role":"user","content":"No."}]}`, true},
		{"tools_round_trip", `{"model":"anthropic.claude-3-5-sonnet-20241022-v2:0","messages":[` + history + `,
			{"role":"tool","tool_call_id":"call_def456","content":"plain text result"},
			{"role":"user","content":"Thanks, and now?"}],
			"tools":[` + weatherTool + `,` + timeTool + `],"tool_choice":"auto","parallel_tool_calls":false}`, true},
		{"tool_choice_required", `{"model":"anthropic.claude-3-haiku-20240307-v1:0","messages":[{"role":"user","content":"Weather?"}],
			"tools":[` + weatherTool + `],"tool_choice":"required"}`, true},
		{"tool_choice_named", `{"model":"anthropic.claude-3-haiku-20240307-v1:0","messages":[{"role":"user","content":"Weather?"}],
			"tools":[` + weatherTool + `,` + timeTool + `],"tool_choice":{"type":"function","function":{"name":"get_time"}}}`, true},
		{"tool_choice_none", `{"model":"anthropic.claude-3-haiku-20240307-v1:0","messages":[{"role":"user","content":"Weather?"}],
			"tools":[` + weatherTool + `],"tool_choice":"none"}`, true},
		{"tool_choice_none_with_history", `{"model":"anthropic.claude-3-haiku-20240307-v1:0","messages":[` + history + `],
			"tools":[` + weatherTool + `],"tool_choice":"none"}`, true},
		{"tool_history_without_tools", `{"model":"anthropic.claude-3-haiku-20240307-v1:0","messages":[` + history + `]}`, true},
		{"allowed_tools", `{"model":"anthropic.claude-3-haiku-20240307-v1:0","messages":[{"role":"user","content":"Time?"}],
			"tools":[` + weatherTool + `,` + timeTool + `],
			"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"get_time"}}]}}}`, true},
		{"tool_ids_remapped", `{"model":"anthropic.claude-3-haiku-20240307-v1:0","messages":[
			{"role":"user","content":"Weather?"},
			{"role":"assistant","content":"Checking.","tool_calls":[{"id":"call.with:bad/chars","type":"function","function":{"name":"get_weather","arguments":""}}]},
			{"role":"tool","tool_call_id":"call.with:bad/chars","content":[{"type":"text","text":"18C"},{"type":"text","text":"sunny"}]}],
			"tools":[` + weatherTool + `]}`, true},
		{"images", `{"model":"anthropic.claude-3-5-sonnet-20241022-v2:0","messages":[{"role":"user","content":[
			{"type":"text","text":"Compare these."},
			{"type":"image_url","image_url":{"url":"` + png + `","detail":"high"}},
			{"type":"image_url","image_url":{"url":"` + img.URL + `/redirect"}},
			{"type":"image_url","image_url":{"url":"` + img.URL + `/sniff"},"cache_control":{"type":"ephemeral"}}]}]}`, true},
		{"document", `{"model":"anthropic.claude-3-5-sonnet-20241022-v2:0","messages":[{"role":"user","content":[
			{"type":"file","file":{"filename":"Q3 report (final).pdf","file_data":"data:application/pdf;base64,JVBERi0xLjQK"}},
			{"type":"file","file":{"filename":"Q3 report (final).pdf","file_data":"JVBERi0xLjQK"}},
			{"type":"file","file":{"filename":"notes.md","file_data":"data:text/markdown;base64,IyBOb3Rlcw=="}},
			{"type":"text","text":"Summarise."}]}]}`, true},
		{"system_cache_points", `{"model":"anthropic.claude-3-5-sonnet-20241022-v2:0","messages":[
			{"role":"system","content":[{"type":"text","text":"Long instructions.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Be brief."}]},
			{"role":"user","content":[{"type":"text","text":"Long document.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Question?"}]}]}`, true},
		{"thinking_claude", `{"model":"us.anthropic.claude-sonnet-4-20250514-v1:0","messages":[{"role":"user","content":"How many r in strawberry?"}],
			"thinking":{"type":"enabled","budget_tokens":2048},"max_tokens":4096}`, true},
		{"reasoning_effort_claude", `{"model":"arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-7-sonnet-20250219-v1:0","messages":[{"role":"user","content":"Think."}],
			"reasoning_effort":"low","max_completion_tokens":1500}`, true},
		{"reasoning_effort_other_family", `{"model":"amazon.nova-pro-v1:0","messages":[{"role":"user","content":"Think."}],
			"reasoning_effort":"high","thinking":{"type":"enabled"}}`, true},
		{"reasoning_replayed", `{"model":"us.anthropic.claude-sonnet-4-20250514-v1:0","messages":[
			{"role":"user","content":"Weather in Paris?"},
			{"role":"assistant","content":null,"reasoning_content":"I should call the tool.",
			 "content_blocks":[{"reasoningContent":{"reasoningText":{"text":"I should call the tool.","signature":"c2lnLTE="}}},{"reasoningContent":{"redactedContent":"cmVkYWN0ZWQ="}}],
			 "tool_calls":[{"id":"tooluse_kZJ1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
			{"role":"tool","tool_call_id":"tooluse_kZJ1","content":"18C"},
			{"role":"assistant","content":"It is 18C.","content_blocks":[{"type":"thinking","thinking":"Answer now.","signature":"c2lnLTI="},{"type":"redacted_thinking","data":"cmVkLTI="}]},
			{"role":"user","content":"Thanks."}],
			"tools":[` + weatherTool + `],"thinking":{"type":"enabled","budget_tokens":1024},"max_tokens":2048}`, false},
		{"json_schema", `{"model":"anthropic.claude-sonnet-4-5-20250929-v1:0","messages":[{"role":"user","content":"Temperature in Paris?"}],
			"response_format":{"type":"json_schema","json_schema":{"name":"weather","description":"A reading","strict":true,
			"schema":{"type":"object","properties":{"temp":{"type":"number"}},"required":["temp"],"additionalProperties":false}}}}`, true},
		{"json_object", `{"model":"amazon.nova-pro-v1:0","messages":[{"role":"user","content":"JSON please."}],"response_format":{"type":"json_object"}}`, true},
		{"response_format_text", `{"model":"amazon.nova-pro-v1:0","messages":[{"role":"user","content":"Text please."}],"response_format":{"type":"text"}}`, true},
		{"hints_dropped_and_metadata", `{"model":"mistral.mistral-large-2407-v1:0","messages":[{"role":"user","name":"alice","content":"hi"}],
			"seed":42,"frequency_penalty":0.5,"presence_penalty":0.1,"logit_bias":{"50256":-100},"store":true,"service_tier":"flex",
			"prompt_cache_key":"k1","verbosity":"low","safety_identifier":"h-123","user":"user-42@example.com",
			"metadata":{"team":"search","trace":"a<b>c","user":"shadowed"},"n":1,"logprobs":false}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call := chatCall(t, tc.body, tc.strict)
			c := New(http.DefaultClient)
			body, err := c.buildRequest(context.Background(), call)
			if err != nil {
				t.Fatalf("buildRequest: %v", err)
			}
			if errs := v.validate("ConverseRequest", body); len(errs) > 0 {
				t.Errorf("body violates the Smithy model:\n%s\n%s", strings.Join(errs, "\n"), body)
			}
			out, _ := json.Marshal(struct {
				Dropped []string        `json:"dropped"`
				Body    json.RawMessage `json:"body"`
			}{call.Dropped, body})
			golden(t, "request/"+tc.name+".json", indent(t, out))
		})
	}
}

// TestRequestUnsupported checks the 400s of PROVIDERS.md §0.2 and the
// parameter each names.
func TestRequestUnsupported(t *testing.T) {
	img := imageServer(t)
	user := func(content string) string {
		return `{"model":"anthropic.claude-3-haiku-20240307-v1:0","messages":[{"role":"user","content":` + content + `}]}`
	}
	for _, tc := range []struct {
		name, body, param string
	}{
		{"n", `{"model":"m.x","messages":[{"role":"user","content":"hi"}],"n":2}`, "n"},
		{"logprobs", `{"model":"m.x","messages":[{"role":"user","content":"hi"}],"logprobs":true}`, "logprobs"},
		{"top_logprobs", `{"model":"m.x","messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":3}`, "logprobs"},
		{"audio", `{"model":"m.x","messages":[{"role":"user","content":"hi"}],"modalities":["text","audio"],"audio":{"voice":"alloy","format":"wav"}}`, "audio"},
		{"modalities", `{"model":"m.x","messages":[{"role":"user","content":"hi"}],"modalities":["audio"]}`, "modalities"},
		{"prediction", `{"model":"m.x","messages":[{"role":"user","content":"hi"}],"prediction":{"type":"content","content":"x"}}`, "prediction"},
		{"functions", `{"model":"m.x","messages":[{"role":"user","content":"hi"}],"functions":[{"name":"f","parameters":{"type":"object"}}]}`, "functions"},
		{"input_audio", user(`[{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]`), "messages[0].content[0].input_audio"},
		{"file_id", user(`[{"type":"file","file":{"file_id":"file-abc"}}]`), "messages[0].content[0].file"},
		{"file_format", user(`[{"type":"file","file":{"filename":"a.exe","file_data":"data:application/octet-stream;base64,AAAA"}}]`), "messages[0].content[0].file"},
		{"image_format", user(`[{"type":"image_url","image_url":{"url":"data:image/bmp;base64,Qk0="}}]`), "messages[0].content[0].image_url"},
		{"image_not_base64", user(`[{"type":"image_url","image_url":{"url":"data:image/png;base64,@@@"}}]`), "messages[0].content[0].image_url"},
		{"image_404", user(`[{"type":"image_url","image_url":{"url":"` + img.URL + `/missing.png"}}]`), "messages[0].content[0].image_url"},
		{"image_not_image", user(`[{"type":"image_url","image_url":{"url":"` + img.URL + `/text"}}]`), "messages[0].content[0].image_url"},
		{"image_too_large", user(`[{"type":"image_url","image_url":{"url":"` + img.URL + `/huge"}}]`), "messages[0].content[0].image_url"},
		{"image_scheme", user(`[{"type":"image_url","image_url":{"url":"ftp://example.com/a.png"}}]`), "messages[0].content[0].image_url"},
		{"tool_arguments", `{"model":"m.x","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{not json"}}]}]}`, "messages[1].tool_calls[0].function.arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := llm.DecodeChatRequest([]byte(tc.body))
			if err != nil {
				t.Skipf("the gateway already rejects this request: %v", err)
			}
			call := &provider.ChatCall{Target: &provider.Target{Provider: Name}, Request: req, Body: []byte(tc.body), StrictOpenAI: true}
			_, err = New(http.DefaultClient).buildRequest(context.Background(), call)
			var up *provider.UnsupportedParameterError
			if !errors.As(err, &up) {
				t.Fatalf("err = %v, want *UnsupportedParameterError", err)
			}
			if up.Param != tc.param || up.Provider != Name {
				t.Errorf("param = %q (provider %q), want %q: %v", up.Param, up.Provider, tc.param, up)
			}
		})
	}
}

var responseFixtures = []string{"amazon-bedrock-text", "amazon-bedrock-tool-call.1", "amazon-bedrock-reasoning"}

// TestResponseGolden translates the recorded Converse answers.
func TestResponseGolden(t *testing.T) {
	for _, name := range responseFixtures {
		for _, mode := range []string{"strict", "extended"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				raw := fixture(t, name+".json")
				out, usage, err := translateResponse(raw, "us.anthropic.claude-sonnet-4-20250514-v1:0", "chatcmpl-"+providertest.BedrockRequestID, mode == "extended")
				if err != nil {
					t.Fatal(err)
				}
				u, _ := json.Marshal(usage)
				golden(t, "response/"+name+"."+mode+".json", append(indent(t, out), append([]byte("log usage: "), append(u, '\n')...)...))
			})
		}
	}
}

func TestResponseMapping(t *testing.T) {
	for _, tc := range []struct{ stop, want string }{
		{"end_turn", "stop"}, {"stop_sequence", "stop"}, {"max_tokens", "length"}, {"model_context_window_exceeded", "length"},
		{"tool_use", "tool_calls"}, {"guardrail_intervened", "content_filter"}, {"content_filtered", "content_filter"}, {"something_new", "stop"},
	} {
		if got := finishReason(tc.stop); got != tc.want {
			t.Errorf("finishReason(%q) = %q, want %q", tc.stop, got, tc.want)
		}
	}
	raw := `{"output":{"message":{"role":"assistant","content":[{"text":"Hi"},{"text":" there"}]}},"stopReason":"max_tokens",
		"usage":{"inputTokens":100,"outputTokens":20,"totalTokens":1620,"cacheReadInputTokens":1000,"cacheWriteInputTokens":500}}`
	out, u, err := translateResponse([]byte(raw), "m", "chatcmpl-x", false)
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Usage{PromptTokens: 1600, CompletionTokens: 20, TotalTokens: 1620, CachedTokens: 1000, CacheWriteTokens: 500}
	if u != want {
		t.Errorf("usage = %+v, want %+v", u, want)
	}
	var resp llm.ChatResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	if *resp.Choices[0].Message.Content != "Hi there" || resp.Choices[0].FinishReason != "length" || resp.Usage.PromptTokensDetails.CacheWriteTokens != 500 {
		t.Errorf("response = %s", out)
	}
	if _, _, err := translateResponse([]byte(`<html>`), "m", "x", false); !errors.Is(err, provider.ErrBadResponse) {
		t.Errorf("garbage: err = %v", err)
	}
}

// streamOf runs a stream over encoded frames and renders every chunk, one
// per line, ending with how the stream ended.
func streamOf(t *testing.T, frames []byte, extended bool) ([]provider.Chunk, error, string) {
	t.Helper()
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {eventStreamType}}, Body: io.NopCloser(bytes.NewReader(frames))}
	st := newStream(context.Background(), resp, "us.anthropic.claude-sonnet-4-20250514-v1:0", "chatcmpl-"+providertest.BedrockRequestID, extended)
	defer st.Close()
	var chunks []provider.Chunk
	var b strings.Builder
	for {
		ch, err := st.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				b.WriteString("EOF\n")
			} else {
				fmt.Fprintf(&b, "error: %v\n", err)
			}
			return chunks, err, b.String()
		}
		if !json.Valid(ch.Data) {
			t.Fatalf("chunk is not JSON: %s", ch.Data)
		}
		kind := "chunk"
		if ch.UsageOnly {
			kind = "usage"
			u, _ := json.Marshal(ch.Usage)
			fmt.Fprintf(&b, "log usage: %s\n", u)
		}
		fmt.Fprintf(&b, "%s %s\n", kind, ch.Data)
		chunks = append(chunks, ch)
	}
}

// TestStreamGolden decodes the recorded streams, encoded as the binary
// frames Bedrock sends, chunk by chunk.
func TestStreamGolden(t *testing.T) {
	for _, name := range responseFixtures {
		for _, mode := range []string{"strict", "extended"} {
			t.Run(name+"/"+mode, func(t *testing.T) {
				frames, err := providertest.BedrockFrames(fixture(t, name+".chunks.txt"))
				if err != nil {
					t.Fatal(err)
				}
				chunks, err, text := streamOf(t, frames, mode == "extended")
				if !errors.Is(err, io.EOF) {
					t.Errorf("stream ended with %v, want io.EOF", err)
				}
				checkChunkShape(t, chunks)
				golden(t, "stream/"+name+"."+mode+".txt", []byte(text))
			})
		}
	}
}

// checkChunkShape checks the stream contract of internal/gateway: the
// role chunk first, usage:null on content chunks, one usage-only chunk
// last, finish_reason on the last content chunk.
func checkChunkShape(t *testing.T, chunks []provider.Chunk) {
	t.Helper()
	if len(chunks) < 3 {
		t.Fatalf("only %d chunks", len(chunks))
	}
	var first llm.ChatChunk
	json.Unmarshal(chunks[0].Data, &first)
	if first.Choices[0].Delta.Role != "assistant" || first.Choices[0].Delta.Content == nil || *first.Choices[0].Delta.Content != "" {
		t.Errorf("first chunk = %s", chunks[0].Data)
	}
	last := chunks[len(chunks)-1]
	if !last.UsageOnly || last.Usage == nil || !bytes.Contains(last.Data, []byte(`"choices":[]`)) {
		t.Errorf("last chunk = %s, want the usage chunk", last.Data)
	}
	for i, ch := range chunks[:len(chunks)-1] {
		if ch.UsageOnly || !bytes.Contains(ch.Data, []byte(`"usage":null`)) {
			t.Errorf("chunk %d = %s, want usage:null", i, ch.Data)
		}
		hasFinish := !bytes.Contains(ch.Data, []byte(`"finish_reason":null`))
		if hasFinish != (i == len(chunks)-2) {
			t.Errorf("chunk %d finish_reason placement: %s", i, ch.Data)
		}
	}
}

func encodeEvents(t testing.TB, lines ...string) []byte {
	t.Helper()
	b, err := providertest.BedrockFrames([]byte(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestStreamFailures(t *testing.T) {
	start := `{"messageStart":{"role":"assistant"}}`
	delta := `{"contentBlockDelta":{"contentBlockIndex":0,"delta":{"text":"Hi"}}}`
	stop := `{"messageStop":{"stopReason":"end_turn"}}`
	meta := `{"metadata":{"usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2},"metrics":{"latencyMs":1}}}`
	full := encodeEvents(t, start, delta, stop, meta)

	t.Run("exception frame", func(t *testing.T) {
		var buf bytes.Buffer
		buf.Write(encodeEvents(t, start, delta))
		exc := []byte(`{"message":"Too many tokens, please wait before trying again."}`)
		if err := providertest.EncodeBedrockException(eventstreamEncoder(), &buf, "throttlingException", exc); err != nil {
			t.Fatal(err)
		}
		_, err, _ := streamOf(t, buf.Bytes(), false)
		var se *provider.StreamError
		if !errors.As(err, &se) || !errors.Is(err, provider.ErrStreamBroken) {
			t.Fatalf("err = %v, want *StreamError", err)
		}
		d := provider.ParseErrorBody(se.Data)
		if d.Message != "Too many tokens, please wait before trying again." || d.Code != "throttlingException" {
			t.Errorf("error detail = %+v from %s", d, se.Data)
		}
	})
	t.Run("cut mid-frame", func(t *testing.T) {
		_, err, _ := streamOf(t, full[:len(full)-40], false)
		if !errors.Is(err, provider.ErrStreamBroken) {
			t.Fatalf("err = %v, want ErrStreamBroken", err)
		}
	})
	t.Run("closed before messageStop", func(t *testing.T) {
		_, err, _ := streamOf(t, encodeEvents(t, start, delta), false)
		if !errors.Is(err, provider.ErrStreamBroken) {
			t.Fatalf("err = %v, want ErrStreamBroken", err)
		}
	})
	t.Run("bad checksum", func(t *testing.T) {
		bad := bytes.Clone(full)
		bad[20] ^= 0xff
		_, err, _ := streamOf(t, bad, false)
		if !errors.Is(err, provider.ErrStreamBroken) {
			t.Fatalf("err = %v, want ErrStreamBroken", err)
		}
	})
	t.Run("absurd length", func(t *testing.T) {
		_, err, _ := streamOf(t, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0}, false)
		if !errors.Is(err, provider.ErrStreamBroken) {
			t.Fatalf("err = %v, want ErrStreamBroken", err)
		}
	})
	t.Run("no usage is still complete", func(t *testing.T) {
		chunks, err, _ := streamOf(t, encodeEvents(t, start, delta, stop), false)
		if !errors.Is(err, io.EOF) || len(chunks) != 3 {
			t.Fatalf("err = %v, %d chunks", err, len(chunks))
		}
	})
	t.Run("unknown events skipped", func(t *testing.T) {
		chunks, err, _ := streamOf(t, encodeEvents(t, start, `{"futureEvent":{"x":1}}`, delta, stop, meta), false)
		if !errors.Is(err, io.EOF) || len(chunks) != 4 {
			t.Fatalf("err = %v, %d chunks", err, len(chunks))
		}
	})
	t.Run("frames split across reads", func(t *testing.T) {
		resp := &http.Response{Header: http.Header{}, Body: io.NopCloser(&oneByteReader{r: bytes.NewReader(full)})}
		st := newStream(context.Background(), resp, "m", "id", false)
		n := 0
		for {
			_, err := st.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatal(err)
				}
				break
			}
			n++
		}
		if n != 4 {
			t.Errorf("%d chunks, want 4", n)
		}
	})
}

type oneByteReader struct{ r io.Reader }

func (o *oneByteReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

// TestSigV4Vector checks the signer wiring (signed headers, payload hash
// header, session token, double-escaped canonical path) against openai-go's
// test vector.
func TestSigV4Vector(t *testing.T) {
	raw, err := os.ReadFile(specDir + "/fixtures/openai-go/sigv4.json")
	if err != nil {
		t.Skipf("sigv4 vector not available: %v", err)
	}
	var vec struct {
		SigningDate string
		Region      string
		Service     string
		Credentials struct{ AccessKeyID, SecretAccessKey, SessionToken string }
		Request     struct{ Method, URL, Body, ContentType string }
		Expected    struct{ Date, PayloadHash, Authorization string }
	}
	if err := json.Unmarshal(raw, &vec); err != nil {
		t.Fatal(err)
	}
	tm, err := time.Parse(time.RFC3339, vec.SigningDate)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(vec.Request.Method, vec.Request.URL, strings.NewReader(vec.Request.Body))
	req.Header.Set("Content-Type", vec.Request.ContentType)
	req.Header.Set("User-Agent", "not-signed")
	creds := credentialsOf(vec.Credentials.AccessKeyID, vec.Credentials.SecretAccessKey, vec.Credentials.SessionToken)
	if err := sign(req, []byte(vec.Request.Body), creds, vec.Service, vec.Region, tm); err != nil {
		t.Fatal(err)
	}
	if got := req.Header.Get("Authorization"); got != vec.Expected.Authorization {
		t.Errorf("Authorization =\n%s\nwant\n%s", got, vec.Expected.Authorization)
	}
	if req.Header.Get("X-Amz-Date") != vec.Expected.Date || req.Header.Get("X-Amz-Content-Sha256") != vec.Expected.PayloadHash || req.Header.Get("X-Amz-Security-Token") != vec.Credentials.SessionToken {
		t.Errorf("headers = %v", req.Header)
	}
}

func TestModelPath(t *testing.T) {
	for model, want := range map[string]string{
		"anthropic.claude-3-haiku-20240307-v1:0":                                      "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse",
		"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123": "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-profile%2Fabc123/converse",
		"us.meta.llama3-2-1b-instruct-v1:0":                                           "/model/us.meta.llama3-2-1b-instruct-v1%3A0/converse",
	} {
		if got := modelPath(model, "converse"); got != want {
			t.Errorf("modelPath(%q) = %s, want %s", model, got, want)
		}
	}
}

func TestRegionAndAuthConfig(t *testing.T) {
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	c := New(http.DefaultClient)
	ctx := context.Background()
	keys := map[string]string{"aws_access_key_id": "AKID", "aws_secret_access_key": "secret"}
	for _, tc := range []struct {
		name   string
		target provider.Target
		param  string
	}{
		{"no region", provider.Target{Options: keys}, "x-gateway-aws-region"},
		{"bad region", provider.Target{Options: map[string]string{"aws_region": "us-east-1.evil.com/x", "aws_access_key_id": "a", "aws_secret_access_key": "b"}}, "x-gateway-aws-region"},
		{"half keys", provider.Target{Options: map[string]string{"aws_region": "us-east-1", "aws_access_key_id": "a"}}, "x-gateway-aws-secret-access-key"},
		{"bearer without region", provider.Target{APIKey: "k"}, "x-gateway-aws-region"},
		{"nothing at all", provider.Target{Options: map[string]string{"aws_region": "us-east-1"}}, "x-gateway-aws-access-key-id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.resolveAuth(ctx, &tc.target)
			var ce *provider.ConfigError
			if !errors.As(err, &ce) || ce.Param != tc.param {
				t.Fatalf("err = %v, want ConfigError on %s", err, tc.param)
			}
		})
	}
	t.Run("region from environment", func(t *testing.T) {
		t.Setenv("AWS_DEFAULT_REGION", "eu-west-3")
		a, err := c.resolveAuth(ctx, &provider.Target{Options: keys})
		if err != nil || a.region != "eu-west-3" {
			t.Fatalf("auth = %+v, %v", a, err)
		}
		t.Setenv("AWS_REGION", "eu-central-1")
		if a, _ := c.resolveAuth(ctx, &provider.Target{Options: keys}); a.region != "eu-central-1" {
			t.Errorf("AWS_REGION should win over AWS_DEFAULT_REGION: %q", a.region)
		}
		opts := map[string]string{"aws_region": "ap-south-1", "aws_access_key_id": "AKID", "aws_secret_access_key": "secret"}
		if a, _ := c.resolveAuth(ctx, &provider.Target{Options: opts}); a.region != "ap-south-1" {
			t.Errorf("the option should win: %q", a.region)
		}
	})
	t.Run("keys win over API key", func(t *testing.T) {
		opts := map[string]string{"aws_region": "us-east-1", "aws_access_key_id": "AKID", "aws_secret_access_key": "secret"}
		a, err := c.resolveAuth(ctx, &provider.Target{APIKey: "bedrock-key", Options: opts})
		if err != nil || a.bearer != "" || a.creds.AccessKeyID != "AKID" {
			t.Fatalf("auth = %+v, %v", a, err)
		}
		a, err = c.resolveAuth(ctx, &provider.Target{APIKey: "bedrock-key", CustomHost: "http://127.0.0.1:1"})
		if err != nil || a.bearer != "bedrock-key" {
			t.Fatalf("bearer with custom host: %+v, %v", a, err)
		}
	})
}

// fakeTarget routes to the fake with SigV4 keys.
func fakeTarget(f *providertest.Bedrock, extra map[string]string) *provider.Target {
	opts := map[string]string{"aws_region": "us-west-2", "aws_access_key_id": providertest.BedrockAccessKeyID, "aws_secret_access_key": providertest.BedrockSecretAccessKey}
	for k, v := range extra {
		opts[k] = v
	}
	return &provider.Target{Provider: Name, CustomHost: f.URL(), Options: opts}
}

func TestChatAgainstFake(t *testing.T) {
	f := providertest.NewBedrock(t)
	c := New(provider.NewHTTPClient())
	ctx := context.Background()
	model := "arn:aws:bedrock:us-west-2:123456789012:inference-profile/us.anthropic.claude-3-5-haiku-20241022-v1:0"
	call := chatCall(t, `{"model":"`+model+`","messages":[{"role":"user","content":"Say hello."}]}`, true)
	call.Target = fakeTarget(f, map[string]string{"aws_session_token": "session-token-1"})
	resp, err := c.Chat(ctx, call)
	if err != nil {
		t.Fatal(err)
	}
	last := f.Last()
	if want := "/model/" + strings.ReplaceAll(strings.ReplaceAll(model, ":", "%3A"), "/", "%2F") + "/converse"; last.Path != want {
		t.Errorf("path = %s, want %s", last.Path, want)
	}
	if last.Header.Get("X-Amz-Security-Token") != "session-token-1" || !strings.Contains(last.Header.Get("Authorization"), "/us-west-2/bedrock/aws4_request") {
		t.Errorf("auth headers = %v", last.Header)
	}
	if got := f.Regions(); len(got) != 1 || got[0] != "us-west-2" {
		t.Errorf("verified regions = %v", got)
	}
	var out llm.ChatResponse
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		t.Fatal(err)
	}
	if out.ID != "chatcmpl-"+providertest.BedrockRequestID || *out.Choices[0].Message.Content != strings.Join(providertest.StreamWords, "") || out.Model != model {
		t.Errorf("response = %s", resp.Body)
	}
	if want := (llm.Usage{PromptTokens: 15, CompletionTokens: 6, TotalTokens: 21, CachedTokens: 3, CacheWriteTokens: 2}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}

	t.Run("stream", func(t *testing.T) {
		call := chatCall(t, `{"model":"anthropic.claude-3-haiku-20240307-v1:0","stream":true,"messages":[{"role":"user","content":"Say hello."}]}`, true)
		call.Target = fakeTarget(f, nil)
		st, err := c.ChatStream(ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var text strings.Builder
		var chunks []provider.Chunk
		for {
			ch, err := st.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatal(err)
				}
				break
			}
			chunks = append(chunks, ch)
			var cc llm.ChatChunk
			json.Unmarshal(ch.Data, &cc)
			if len(cc.Choices) > 0 && cc.Choices[0].Delta.Content != nil {
				text.WriteString(*cc.Choices[0].Delta.Content)
			}
		}
		checkChunkShape(t, chunks)
		if text.String() != strings.Join(providertest.StreamWords, "") || st.Header().Get("X-Amzn-Requestid") != providertest.BedrockRequestID {
			t.Errorf("text = %q, header %v", text.String(), st.Header())
		}
		if got := *chunks[len(chunks)-1].Usage; got.PromptTokens != 15 || got.TotalTokens != 21 {
			t.Errorf("usage = %+v", got)
		}
	})
	t.Run("bearer API key", func(t *testing.T) {
		call := chatCall(t, `{"model":"amazon.nova-micro-v1:0","messages":[{"role":"user","content":"hi"}]}`, true)
		call.Target = &provider.Target{Provider: Name, APIKey: providertest.BedrockAPIKey, CustomHost: f.URL()}
		if _, err := c.Chat(ctx, call); err != nil {
			t.Fatal(err)
		}
		if h := f.Last().Header; h.Get("Authorization") != "Bearer "+providertest.BedrockAPIKey || h.Get("X-Amz-Date") != "" {
			t.Errorf("headers = %v", h)
		}
	})
	t.Run("wrong secret", func(t *testing.T) {
		call := chatCall(t, `{"model":"amazon.nova-micro-v1:0","messages":[{"role":"user","content":"hi"}]}`, true)
		call.Target = fakeTarget(f, map[string]string{"aws_secret_access_key": "wrong"})
		_, err := c.Chat(ctx, call)
		var ue *provider.UpstreamError
		if !errors.As(err, &ue) || ue.Status != 403 || provider.ParseErrorBody(ue.Body).Code != "InvalidSignatureException" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for _, status := range []int{400, 403, 404, 408, 424, 429, 500, 503} {
			call := chatCall(t, fmt.Sprintf(`{"model":"err-%d","messages":[{"role":"user","content":"hi"}]}`, status), true)
			call.Target = fakeTarget(f, nil)
			_, err := c.Chat(ctx, call)
			var ue *provider.UpstreamError
			if !errors.As(err, &ue) || ue.Status != status || ue.Provider != Name {
				t.Fatalf("err-%d: err = %v", status, err)
			}
			if d := provider.ParseErrorBody(ue.Body); d.Message == "" || d.Code == "" {
				t.Errorf("err-%d: detail %+v from %s", status, d, ue.Body)
			}
			call.Request.Stream = true
			if _, err := c.ChatStream(ctx, call); !errors.As(err, &ue) || ue.Status != status {
				t.Errorf("stream err-%d: err = %v", status, err)
			}
		}
	})
	t.Run("exception mid-stream", func(t *testing.T) {
		call := chatCall(t, `{"model":"exception-event","stream":true,"messages":[{"role":"user","content":"hi"}]}`, true)
		call.Target = fakeTarget(f, nil)
		st, err := c.ChatStream(ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		for {
			_, err := st.Next()
			if err == nil {
				continue
			}
			var se *provider.StreamError
			if !errors.As(err, &se) || !strings.Contains(string(se.Data), "throttlingException") {
				t.Fatalf("err = %v", err)
			}
			break
		}
	})
	t.Run("cut", func(t *testing.T) {
		call := chatCall(t, `{"model":"cut-after-3","stream":true,"messages":[{"role":"user","content":"hi"}]}`, true)
		call.Target = fakeTarget(f, nil)
		st, err := c.ChatStream(ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		for {
			if _, err := st.Next(); err != nil {
				if !errors.Is(err, provider.ErrStreamBroken) {
					t.Fatalf("err = %v, want ErrStreamBroken", err)
				}
				break
			}
		}
	})
	t.Run("stall times out", func(t *testing.T) {
		call := chatCall(t, `{"model":"stall","messages":[{"role":"user","content":"hi"}]}`, true)
		call.Target = fakeTarget(f, nil)
		tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		if _, err := c.Chat(tctx, call); !errors.Is(err, provider.ErrTimeout) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
	})
}

// TestUpstreamErrorStatus checks the status mapping where what arrives
// differs from Bedrock's exception (a proxy, or a lowercase Message).
func TestUpstreamErrorStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-amzn-ErrorType", r.Header.Get("X-Test-Type"))
		w.WriteHeader(400)
		io.WriteString(w, `{"Message":"Rate exceeded"}`)
	}))
	defer srv.Close()
	c := New(provider.NewHTTPClient())
	for typ, want := range map[string]int{
		"ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/": 429,
		"ModelNotReadyException": 429, "ServiceUnavailableException": 503, "AccessDeniedException": 403,
		"ValidationException": 400, "SomethingNewException": 400,
	} {
		call := chatCall(t, `{"model":"m.x","messages":[{"role":"user","content":"hi"}]}`, true)
		call.Target.CustomHost = srv.URL
		call.Header = http.Header{"X-Test-Type": {typ}}
		_, err := c.Chat(context.Background(), call)
		var ue *provider.UpstreamError
		if !errors.As(err, &ue) || ue.Status != want {
			t.Fatalf("%s: err = %v, want status %d", typ, err, want)
		}
		d := provider.ParseErrorBody(ue.Body)
		if name, _, _ := strings.Cut(typ, ":"); d.Message != "Rate exceeded" || d.Code != name {
			t.Errorf("%s: detail = %+v", typ, d)
		}
	}
}

func TestPrepareForward(t *testing.T) {
	f := providertest.NewBedrock(t)
	c := New(provider.NewHTTPClient())
	body := []byte(`{"inputText":"hello world"}`)
	for _, tc := range []struct {
		name   string
		target *provider.Target
	}{
		{"sigv4", fakeTarget(f, nil)},
		{"bearer", &provider.Target{Provider: Name, APIKey: providertest.BedrockAPIKey, CustomHost: f.URL()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _ := http.NewRequest("POST", "http://placeholder", bytes.NewReader(body))
			out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
			out.Header.Set("Content-Type", "application/json")
			if err := c.PrepareForward(out, tc.target, "/model/amazon.titan-embed-text-v2%3A0/invoke", ""); err != nil {
				t.Fatal(err)
			}
			if out.URL.String() != f.URL()+"/model/amazon.titan-embed-text-v2%3A0/invoke" {
				t.Errorf("URL = %s", out.URL)
			}
			resp, err := http.DefaultClient.Do(out)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(b), `"embedding"`) {
				t.Errorf("forwarded answer %d %s", resp.StatusCode, b)
			}
		})
	}
	out, _ := http.NewRequest("GET", "http://placeholder", nil)
	if err := c.PrepareForward(out, &provider.Target{Provider: Name, Options: map[string]string{"aws_region": "eu-west-1", "aws_access_key_id": "AKID", "aws_secret_access_key": "s"}}, "/model/x/invoke", "a=b"); err != nil {
		t.Fatal(err)
	}
	if out.URL.String() != "https://bedrock-runtime.eu-west-1.amazonaws.com/model/x/invoke?a=b" || !strings.HasPrefix(out.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKID/") {
		t.Errorf("default endpoint: %s %v", out.URL, out.Header)
	}
}

func TestEmbed(t *testing.T) {
	f := providertest.NewBedrock(t)
	c := New(provider.NewHTTPClient())
	ctx := context.Background()
	embed := func(body string) (*provider.Response, *provider.EmbedCall, error) {
		req, err := llm.DecodeEmbeddingRequest([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		call := &provider.EmbedCall{Target: fakeTarget(f, nil), Request: req, Body: []byte(body)}
		resp, err := c.Embed(ctx, call)
		return resp, call, err
	}
	t.Run("titan", func(t *testing.T) {
		texts := []string{"a", "b c", "d e f", "g", "h i", "j"}
		in, _ := json.Marshal(texts)
		resp, call, err := embed(`{"model":"amazon.titan-embed-text-v2:0","input":` + string(in) + `,"dimensions":256,"user":"u1"}`)
		if err != nil {
			t.Fatal(err)
		}
		var out llm.EmbeddingResponse
		json.Unmarshal(resp.Body, &out)
		if len(out.Data) != len(texts) || out.Usage.PromptTokens != 10 || resp.Usage.TotalTokens != 10 {
			t.Fatalf("answer = %s", resp.Body)
		}
		for i, d := range out.Data {
			if v := d.Embedding.([]any); d.Index != i || v[2].(float64) != float64(len(strings.Fields(texts[i])))+0.5 {
				t.Errorf("data[%d] = %+v: order lost", i, d)
			}
		}
		var sent struct {
			InputText  string `json:"inputText"`
			Dimensions int    `json:"dimensions"`
			Normalize  bool   `json:"normalize"`
		}
		json.Unmarshal(f.Last().Body, &sent)
		if sent.Dimensions != 256 || !sent.Normalize || sent.InputText == "" {
			t.Errorf("sent %s", f.Last().Body)
		}
		if len(call.Dropped) != 1 || call.Dropped[0] != "user" {
			t.Errorf("dropped = %v", call.Dropped)
		}
	})
	t.Run("cohere base64", func(t *testing.T) {
		resp, _, err := embed(`{"model":"cohere.embed-english-v3","input":["one two","three"],"encoding_format":"base64"}`)
		if err != nil {
			t.Fatal(err)
		}
		var out llm.EmbeddingResponse
		json.Unmarshal(resp.Body, &out)
		if len(out.Data) != 2 || out.Usage.PromptTokens != 3 {
			t.Fatalf("answer = %s", resp.Body)
		}
		if b, _ := base64.StdEncoding.DecodeString(out.Data[1].Embedding.(string)); len(b) != 8 {
			t.Errorf("base64 embedding = %v", out.Data[1].Embedding)
		}
		if !strings.Contains(string(f.Last().Body), `"input_type":"search_document"`) {
			t.Errorf("sent %s", f.Last().Body)
		}
	})
	for name, body := range map[string]string{
		"tokens":         `{"model":"amazon.titan-embed-text-v2:0","input":[1,2,3]}`,
		"unknown model":  `{"model":"meta.llama3-8b-instruct-v1:0","input":"x"}`,
		"titan v1 dims":  `{"model":"amazon.titan-embed-text-v1","input":"x","dimensions":256}`,
		"cohere v3 dims": `{"model":"cohere.embed-english-v3","input":"x","dimensions":256}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := embed(body)
			var up *provider.UnsupportedParameterError
			if !errors.As(err, &up) {
				t.Fatalf("err = %v, want UnsupportedParameterError", err)
			}
		})
	}
	t.Run("upstream error", func(t *testing.T) {
		req, _ := llm.DecodeEmbeddingRequest([]byte(`{"model":"amazon.titan-embed-text-v2:0","input":["a","b"]}`))
		call := &provider.EmbedCall{Target: fakeTarget(f, map[string]string{"aws_secret_access_key": "wrong"}), Request: req}
		_, err := c.Embed(ctx, call)
		var ue *provider.UpstreamError
		if !errors.As(err, &ue) || ue.Status != 403 {
			t.Fatalf("err = %v", err)
		}
	})
}
