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
)

// Cohere is a fake Cohere v2 upstream (POST /v2/chat, POST /v2/embed),
// speaking Cohere's wire format: typed SSE events without [DONE], errors as
// {"id","message"}. Behaviour is chosen by the model name as for OpenAI,
// plus:
//
//	"error-end"         finish with finish_reason ERROR (stream: in message-end)
//	a name containing "reasoning"   answer with a thinking block first
//	tools, last message not a tool result   call get_weather with a tool_plan
//	last message a tool result              answer "It is sunny in Paris."
type Cohere struct {
	Server *httptest.Server

	mu sync.Mutex
	requestLog
}

// NewCohere starts a fake and stops it when the test ends.
func NewCohere(t testing.TB) *Cohere {
	f := &Cohere{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v2/chat", f.chat)
	mux.HandleFunc("POST /v2/embed", f.embed)
	mux.HandleFunc("/", f.echo)
	f.Server = httptest.NewServer(f.recording(mux))
	t.Cleanup(f.Server.Close)
	return f
}

// BaseURL is the fake's base URL including /v2, for x-gateway-custom-host.
func (f *Cohere) BaseURL() string { return f.Server.URL + "/v2" }

// CohereStreamWords are the text deltas of a normal Cohere stream.
var CohereStreamWords = []string{"Hello", " from", " the", " fake", " Cohere", "."}

// CohereUsage is the usage object of every fake answer: tokens counts
// include the prompt template and the 448 cached tokens; billed_units is
// what Cohere bills.
const CohereUsage = `{"billed_units":{"input_tokens":12,"output_tokens":7},"tokens":{"input_tokens":507,"output_tokens":10},"cached_tokens":448}`

// CohereThinking is the reasoning text of "reasoning" models.
const CohereThinking = "The user greets me; I should greet back."

// CohereToolPlan is the tool_plan of a tool call.
const CohereToolPlan = "I will look up the weather in Paris."

// WriteCohereError writes Cohere's error shape.
func WriteCohereError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"id": "0b3a4a5e-fake", "message": msg})
	w.Write(b)
}

type cohereChatRequest struct {
	Model    string            `json:"model"`
	Stream   bool              `json:"stream"`
	Tools    []json.RawMessage `json:"tools"`
	Messages []struct {
		Role string `json:"role"`
	} `json:"messages"`
}

func (r *cohereChatRequest) lastIsTool() bool {
	return len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Role == "tool"
}

func (r *cohereChatRequest) callsTool() bool { return len(r.Tools) > 0 && !r.lastIsTool() }

func (f *Cohere) chat(w http.ResponseWriter, r *http.Request) {
	var req cohereChatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		WriteCohereError(w, 400, "invalid request: body is not JSON")
		return
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		WriteCohereError(w, 401, "no api key supplied")
		return
	}
	if s, ok := strings.CutPrefix(req.Model, "err-"); ok {
		status, _ := strconv.Atoi(s)
		WriteCohereError(w, status, "fake upstream failure "+s)
		return
	}
	if req.Model == "stall" {
		<-r.Context().Done()
		return
	}
	w.Header().Set("x-request-id", "cohere-req-fake")
	if req.Stream {
		f.stream(w, &req)
		return
	}
	finish := "COMPLETE"
	var content []string
	msg := map[string]any{"role": "assistant"}
	if strings.Contains(req.Model, "reasoning") {
		content = append(content, fmt.Sprintf(`{"type":"thinking","thinking":%q}`, CohereThinking))
	}
	switch {
	case req.callsTool():
		finish = "TOOL_CALL"
		msg["tool_plan"] = CohereToolPlan
		msg["tool_calls"] = []any{map[string]any{"id": "get_weather_fake01", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Paris"}`}}}
	case req.lastIsTool():
		content = append(content, `{"type":"text","text":"It is sunny in Paris."}`)
	default:
		content = append(content, fmt.Sprintf(`{"type":"text","text":%q}`, strings.Join(CohereStreamWords, "")))
	}
	if req.Model == "error-end" {
		finish = "ERROR"
	}
	if len(content) > 0 {
		msg["content"] = json.RawMessage("[" + strings.Join(content, ",") + "]")
	}
	b, _ := json.Marshal(map[string]any{"id": "f201af17-fake", "finish_reason": finish, "message": msg, "usage": json.RawMessage(CohereUsage)})
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func (f *Cohere) stream(w http.ResponseWriter, req *cohereChatRequest) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	send := func(typ, data string) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data)
		rc.Flush()
	}
	cutAfter := -1
	if s, ok := strings.CutPrefix(req.Model, "cut-after-"); ok {
		cutAfter, _ = strconv.Atoi(s)
	}
	send("message-start", `{"id":"321d178c-fake","type":"message-start","delta":{"message":{"role":"assistant","content":[],"tool_plan":"","tool_calls":[],"citations":[]}}}`)
	finish := "COMPLETE"
	idx := 0
	if strings.Contains(req.Model, "reasoning") {
		send("content-start", `{"type":"content-start","index":0,"delta":{"message":{"content":{"type":"thinking","thinking":""}}}}`)
		for _, part := range strings.SplitAfter(CohereThinking, " ") {
			b, _ := json.Marshal(part)
			send("content-delta", `{"type":"content-delta","index":0,"delta":{"message":{"content":{"thinking":`+string(b)+`}}}}`)
		}
		send("content-end", `{"type":"content-end","index":0}`)
		idx++
	}
	switch {
	case req.callsTool():
		finish = "TOOL_CALL"
		for _, part := range strings.SplitAfter(CohereToolPlan, " ") {
			b, _ := json.Marshal(part)
			send("tool-plan-delta", `{"type":"tool-plan-delta","delta":{"message":{"tool_plan":`+string(b)+`}}}`)
		}
		send("tool-call-start", `{"type":"tool-call-start","index":0,"delta":{"message":{"tool_calls":{"id":"get_weather_fake01","type":"function","function":{"name":"get_weather","arguments":""}}}}}`)
		send("tool-call-delta", `{"type":"tool-call-delta","index":0,"delta":{"message":{"tool_calls":{"function":{"arguments":"{\"city\":"}}}}}`)
		send("tool-call-delta", `{"type":"tool-call-delta","index":0,"delta":{"message":{"tool_calls":{"function":{"arguments":"\"Paris\"}"}}}}}`)
		send("tool-call-end", `{"type":"tool-call-end","index":0}`)
	default:
		words := CohereStreamWords
		if req.lastIsTool() {
			words = []string{"It is sunny", " in Paris."}
		}
		send("content-start", fmt.Sprintf(`{"type":"content-start","index":%d,"delta":{"message":{"content":{"type":"text","text":""}}}}`, idx))
		for i, wd := range words {
			if i == cutAfter {
				panic(http.ErrAbortHandler)
			}
			b, _ := json.Marshal(wd)
			send("content-delta", fmt.Sprintf(`{"type":"content-delta","index":%d,"delta":{"message":{"content":{"text":%s}}}}`, idx, b))
		}
		send("content-end", fmt.Sprintf(`{"type":"content-end","index":%d}`, idx))
	}
	if req.Model == "error-end" {
		send("message-end", `{"type":"message-end","delta":{"finish_reason":"ERROR","error":"internal generation failure"}}`)
		return
	}
	send("message-end", `{"type":"message-end","delta":{"finish_reason":"`+finish+`","usage":`+CohereUsage+`}}`)
}

func (f *Cohere) embed(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string   `json:"model"`
		Texts []string `json:"texts"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		WriteCohereError(w, 400, "invalid request: body is not JSON")
		return
	}
	if s, ok := strings.CutPrefix(req.Model, "err-"); ok {
		status, _ := strconv.Atoi(s)
		WriteCohereError(w, status, "fake upstream failure "+s)
		return
	}
	vecs := make([]string, len(req.Texts))
	for i := range vecs {
		vecs[i] = fmt.Sprintf("[0.1,-0.2,%d.5]", i)
	}
	texts, _ := json.Marshal(req.Texts)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"emb-fake","embeddings":{"float":[%s]},"texts":%s,"meta":{"api_version":{"version":"2"},"billed_units":{"input_tokens":%d}},"response_type":"embeddings_by_type"}`,
		strings.Join(vecs, ","), texts, 4*len(req.Texts))
}

// echo answers pass-through requests with what it received.
func (f *Cohere) echo(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	out, _ := json.Marshal(map[string]any{"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery, "body": string(body), "authorization": r.Header.Get("Authorization")})
	w.Write(out)
}
