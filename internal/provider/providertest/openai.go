// Package providertest holds fake upstreams that speak providers' real wire
// formats over real HTTP (httptest), for the adapters' and the gateway's
// tests. Behaviour is chosen per request by the model name, so one fake
// serves every scenario:
//
//	"err-<status>"     answer that status with the provider's error body
//	"stall"            never answer (until the client gives up)
//	"cut-after-<n>"    stream n chunks, then cut the connection
//	"slow"             stream a chunk every 20 ms, 50 chunks
//	"error-event"      stream one chunk, then an in-stream error event
//	anything else      a normal answer
package providertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Received is one request the fake saw.
type Received struct {
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
}

// OpenAI is a fake OpenAI-compatible upstream.
type OpenAI struct {
	Server *httptest.Server

	mu sync.Mutex
	requestLog
	// Canceled is closed... counts requests whose client went away mid-stream.
	canceled int
	started  chan struct{}
}

// NewOpenAI starts a fake and stops it when the test ends.
func NewOpenAI(t testing.TB) *OpenAI {
	f := &OpenAI{started: make(chan struct{}, 1024)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", f.chat)
	mux.HandleFunc("POST /v1/embeddings", f.embeddings)
	mux.HandleFunc("POST /v1/completions", f.completions)
	mux.HandleFunc("GET /v1/files", f.listFiles)
	mux.HandleFunc("POST /v1/files", f.uploadFile)
	mux.HandleFunc("GET /v1/files/{id}", f.getFile)
	mux.HandleFunc("DELETE /v1/files/{id}", f.deleteFile)
	mux.HandleFunc("GET /v1/files/{id}/content", f.fileContent)
	mux.HandleFunc("/", f.echo)
	f.Server = httptest.NewServer(f.recording(mux))
	t.Cleanup(f.Server.Close)
	return f
}

// BaseURL is the fake's base URL including /v1, for x-gateway-custom-host.
func (f *OpenAI) BaseURL() string { return f.Server.URL + "/v1" }

// Canceled reports how many streams ended because the client went away.
func (f *OpenAI) Canceled() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.canceled
}

// StreamStarted receives once per stream after its first chunk is flushed.
func (f *OpenAI) StreamStarted() <-chan struct{} { return f.started }

// chatRequest is the part of the request the fake looks at.
type chatRequest struct {
	Model         string            `json:"model"`
	Stream        bool              `json:"stream"`
	N             int               `json:"n"`
	Logprobs      bool              `json:"logprobs"`
	Tools         []json.RawMessage `json:"tools"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Role    string `json:"role"`
		Content any    `json:"content"`
	} `json:"messages"`
}

// WriteError writes an OpenAI-shaped error.
func WriteError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
		w.Header().Set("x-ratelimit-remaining-requests", "0")
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"message":%q,"type":%q,"param":null,"code":%q}}`, msg, typ, code)
}

const created = 1767225600

func (f *OpenAI) chat(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		WriteError(w, 400, "invalid_request_error", "invalid_json", "We could not parse the JSON body of your request.")
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") && r.Header.Get("api-key") == "" {
		WriteError(w, 401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
		return
	}
	if s, ok := strings.CutPrefix(req.Model, "err-"); ok {
		status, _ := strconv.Atoi(s)
		typ := "invalid_request_error"
		if status >= 500 {
			typ = "server_error"
		}
		WriteError(w, status, typ, "upstream_"+s, "fake upstream failure "+s)
		return
	}
	if req.Model == "stall" {
		<-r.Context().Done()
		return
	}
	w.Header().Set("x-request-id", "req_fake123")
	w.Header().Set("openai-processing-ms", "7")
	w.Header().Set("x-ratelimit-remaining-requests", "99")
	if req.Stream {
		f.stream(w, r, &req)
		return
	}
	n := max(req.N, 1)
	choices := make([]string, n)
	for i := range n {
		choices[i] = choiceJSON(i, &req)
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-fake","object":"chat.completion","created":%d,"model":"%s-2025-04-14","choices":[%s],"usage":{"prompt_tokens":12,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},"service_tier":"default","system_fingerprint":"fp_fake"}`,
		created, req.Model, strings.Join(choices, ","), 5*n, 12+5*n)
}

func choiceJSON(i int, req *chatRequest) string {
	logprobs := "null"
	if req.Logprobs {
		logprobs = `{"content":[{"token":"Hello","logprob":-0.01,"bytes":[72,101,108,108,111],"top_logprobs":[{"token":"Hello","logprob":-0.01,"bytes":[72,101,108,108,111]}]}],"refusal":null}`
	}
	if len(req.Tools) > 0 && !lastIsTool(req) {
		return fmt.Sprintf(`{"index":%d,"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"call_7Qx%d","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}],"annotations":[]},"logprobs":%s,"finish_reason":"tool_calls"}`, i, i, logprobs)
	}
	text := fmt.Sprintf("Hello from choice %d.", i)
	if lastIsTool(req) {
		text = "It is sunny in Paris."
	}
	return fmt.Sprintf(`{"index":%d,"message":{"role":"assistant","content":%q,"refusal":null,"annotations":[]},"logprobs":%s,"finish_reason":"stop"}`, i, text, logprobs)
}

func lastIsTool(req *chatRequest) bool {
	return len(req.Messages) > 0 && req.Messages[len(req.Messages)-1].Role == "tool"
}

// StreamWords are the content deltas of a normal stream.
var StreamWords = []string{"Hello", " from", " the", " fake", " upstream", "."}

func (f *OpenAI) stream(w http.ResponseWriter, r *http.Request, req *chatRequest) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	usage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	usageField := ""
	if usage {
		usageField = `,"usage":null`
	}
	send := func(s string) bool {
		if _, err := fmt.Fprintf(w, "data: %s\n\n", s); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	chunk := func(delta, finish string) string {
		fin := "null"
		if finish != "" {
			fin = `"` + finish + `"`
		}
		return fmt.Sprintf(`{"id":"chatcmpl-fake","object":"chat.completion.chunk","created":%d,"model":"%s","system_fingerprint":"fp_fake","choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}]%s}`,
			created, req.Model, delta, fin, usageField)
	}
	words := StreamWords
	pause := time.Duration(0)
	cutAfter := -1
	switch {
	case req.Model == "slow":
		words = make([]string, 50)
		for i := range words {
			words[i] = " w"
		}
		pause = 20 * time.Millisecond
	case strings.HasPrefix(req.Model, "cut-after-"):
		cutAfter, _ = strconv.Atoi(strings.TrimPrefix(req.Model, "cut-after-"))
	}
	if !send(chunk(`{"role":"assistant","content":"","refusal":null}`, "")) {
		return
	}
	select {
	case f.started <- struct{}{}:
	default:
	}
	if len(req.Tools) > 0 && !lastIsTool(req) {
		send(chunk(`{"tool_calls":[{"index":0,"id":"call_7Qx","type":"function","function":{"name":"get_weather","arguments":""}}]}`, ""))
		send(chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}`, ""))
		send(chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]}`, ""))
		send(chunk(`{}`, "tool_calls"))
	} else {
		for i, wd := range words {
			if i == cutAfter {
				panic(http.ErrAbortHandler) // cut the connection mid-stream
			}
			if req.Model == "error-event" && i == 1 {
				send(`{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`)
				return
			}
			if pause > 0 {
				select {
				case <-r.Context().Done():
					f.mu.Lock()
					f.canceled++
					f.mu.Unlock()
					return
				case <-time.After(pause):
				}
			}
			b, _ := json.Marshal(wd)
			if !send(chunk(`{"content":`+string(b)+`}`, "")) {
				f.mu.Lock()
				f.canceled++
				f.mu.Unlock()
				return
			}
		}
		send(chunk(`{}`, "stop"))
	}
	if usage {
		send(fmt.Sprintf(`{"id":"chatcmpl-fake","object":"chat.completion.chunk","created":%d,"model":"%s","system_fingerprint":"fp_fake","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`,
			created, req.Model, len(words), 12+len(words)))
	}
	send("[DONE]")
}

func (f *OpenAI) embeddings(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string `json:"model"`
		Input any    `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		WriteError(w, 400, "invalid_request_error", "invalid_json", err.Error())
		return
	}
	n := 1
	if in, ok := req.Input.([]any); ok {
		n = len(in)
	}
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":[0.1,-0.2,%d.5]}`, i, i)
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"object":"list","data":[%s],"model":%q,"usage":{"prompt_tokens":%d,"total_tokens":%d}}`, strings.Join(items, ","), req.Model, 4*n, 4*n)
}

func (f *OpenAI) completions(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string `json:"model"`
	}
	json.NewDecoder(r.Body).Decode(&req)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"cmpl-fake","object":"text_completion","created":%d,"model":%q,"choices":[{"text":" world","index":0,"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}}`, created, req.Model)
}

// FileContent is the content of every fake file.
const FileContent = `{"prompt":"hello","completion":"world"}` + "\n"

func fileJSON(id, purpose string) string {
	return fmt.Sprintf(`{"id":%q,"object":"file","bytes":%d,"created_at":1767225600,"filename":"train.jsonl","purpose":%q,"status":"processed","status_details":null}`, id, len(FileContent), purpose)
}

func (f *OpenAI) listFiles(w http.ResponseWriter, r *http.Request) {
	all := []string{fileJSON("file-abc", "fine-tune"), fileJSON("file-def", "assistants")}
	var data []string
	for i, purpose := range []string{"fine-tune", "assistants"} {
		if p := r.URL.Query().Get("purpose"); p == "" || p == purpose {
			data = append(data, all[i])
		}
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"object":"list","data":[%s],"has_more":false}`, strings.Join(data, ","))
}

func (f *OpenAI) uploadFile(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseMultipartForm(1 << 20); err != nil {
		WriteError(w, 400, "invalid_request_error", "invalid_multipart", err.Error())
		return
	}
	file, _, err := r.FormFile("file")
	if err != nil {
		WriteError(w, 400, "invalid_request_error", "missing_file", "file is required")
		return
	}
	b, _ := io.ReadAll(file)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"file-new","object":"file","bytes":%d,"created_at":1767225600,"filename":"upload.jsonl","purpose":%q,"status":"processed","status_details":null}`, len(b), r.FormValue("purpose"))
}

func (f *OpenAI) getFile(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("id") == "file-missing" {
		WriteError(w, 404, "invalid_request_error", "file_not_found", "No such File object: file-missing")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, fileJSON(r.PathValue("id"), "fine-tune"))
}

func (f *OpenAI) deleteFile(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":%q,"object":"file","deleted":true}`, r.PathValue("id"))
}

func (f *OpenAI) fileContent(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/octet-stream")
	fmt.Fprint(w, FileContent)
}

// echo answers any other path with what it received, as a pass-through
// target: JSON with method, path, query and body, a custom header, and the
// status given by the x-fake-status request header.
func (f *OpenAI) echo(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-upstream-header", "kept")
	status := http.StatusOK
	if s := r.Header.Get("x-fake-status"); s != "" {
		status, _ = strconv.Atoi(s)
	}
	w.WriteHeader(status)
	out, _ := json.Marshal(map[string]any{
		"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery, "body": string(body),
		"authorization": r.Header.Get("Authorization"), "usage": map[string]int{"prompt_tokens": 3, "completion_tokens": 0, "total_tokens": 3},
	})
	w.Write(out)
}
