package providertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Scripted is a fake OpenAI-compatible upstream whose answers follow a
// script, one step per request, for the routing engine's tests: fail N
// times then succeed, rate-limit with Retry-After, stall before the first
// byte, cut a stream. Requests beyond the script get the default step (a
// normal answer unless SetDefault says otherwise). Answers name the fake
// (content "Hello from <name>.") so a test sees which upstream answered.
//
// It serves POST /v1/chat/completions (plain and streamed),
// POST /v1/embeddings, and echoes any other path like OpenAI's echo.
type Scripted struct {
	Name   string
	Server *httptest.Server

	mu       sync.Mutex
	steps    []Step
	def      Step
	received []Received
}

// Step is one scripted answer. The zero Step is a normal answer.
type Step struct {
	// Status, when not 0 or 200, answers that status with an OpenAI-shaped
	// error body.
	Status int
	// Header is added to the answer (Retry-After, retry-after-ms, …).
	Header map[string]string
	// Delay waits before the answer's first byte (headers included);
	// Stall waits until the client gives up.
	Delay time.Duration
	Stall bool
	// Streams only: Cut cuts the connection after CutAfter chunks (0:
	// after the 200 and before any event); ErrorEvent sends an in-stream
	// error event as the first event; FirstEventDelay waits after the 200
	// and before the first event.
	Cut             bool
	CutAfter        int
	ErrorEvent      bool
	FirstEventDelay time.Duration
}

// OK is a normal answer.
func OK() Step { return Step{} }

// Fail answers status with an error body.
func Fail(status int) Step { return Step{Status: status} }

// RateLimit answers 429 with the given Retry-After (seconds) header.
func RateLimit(retryAfter string) Step {
	return Step{Status: http.StatusTooManyRequests, Header: map[string]string{"Retry-After": retryAfter}}
}

// RateLimitMS answers 429 with a retry-after-ms header.
func RateLimitMS(ms string) Step {
	return Step{Status: http.StatusTooManyRequests, Header: map[string]string{"retry-after-ms": ms}}
}

// Stall never answers.
func Stall() Step { return Step{Stall: true} }

// Slow answers normally after d.
func Slow(d time.Duration) Step { return Step{Delay: d} }

// Cut streams n chunks and then cuts the connection.
func Cut(n int) Step { return Step{Cut: true, CutAfter: n} }

// ErrorEvent streams an in-stream error event before any chunk.
func ErrorEvent() Step { return Step{ErrorEvent: true} }

// SlowFirstEvent sends the 200 at once and the first event after d.
func SlowFirstEvent(d time.Duration) Step { return Step{FirstEventDelay: d} }

// NewScripted starts a scripted fake named name, stopped when t ends.
func NewScripted(t testing.TB, name string, steps ...Step) *Scripted {
	s := &Scripted{Name: name, steps: steps, def: OK()}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Server.Close)
	return s
}

// BaseURL is the fake's base URL including /v1 (a custom_host).
func (s *Scripted) BaseURL() string { return s.Server.URL + "/v1" }

// Then appends steps to the script.
func (s *Scripted) Then(steps ...Step) *Scripted {
	s.mu.Lock()
	s.steps = append(s.steps, steps...)
	s.mu.Unlock()
	return s
}

// SetDefault sets the step for requests beyond the script.
func (s *Scripted) SetDefault(st Step) {
	s.mu.Lock()
	s.def = st
	s.mu.Unlock()
}

// Hits is the number of requests received.
func (s *Scripted) Hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.received)
}

// Requests returns what the fake received.
func (s *Scripted) Requests() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.received...)
}

func (s *Scripted) next(r *http.Request, body []byte) Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received = append(s.received, Received{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body})
	if len(s.steps) == 0 {
		return s.def
	}
	st := s.steps[0]
	s.steps = s.steps[1:]
	return st
}

func (s *Scripted) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	st := s.next(r, body)
	if st.Stall {
		<-r.Context().Done()
		return
	}
	if st.Delay > 0 {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(st.Delay):
		}
	}
	for k, v := range st.Header {
		w.Header().Set(k, v)
	}
	if st.Status != 0 && st.Status != http.StatusOK {
		typ := "invalid_request_error"
		if st.Status >= 500 {
			typ = "server_error"
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st.Status)
		fmt.Fprintf(w, `{"error":{"message":"%s failed with %d","type":%q,"param":null,"code":"scripted_%d"}}`, s.Name, st.Status, typ, st.Status)
		return
	}
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	_ = json.Unmarshal(body, &req)
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions" && req.Stream:
		s.stream(w, r, req.Model, st)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-%s","object":"chat.completion","created":%d,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"Hello from %s.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`,
			s.Name, created, req.Model, s.Name)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/embeddings":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5]}],"model":%q,"usage":{"prompt_tokens":1,"total_tokens":1}}`, req.Model)
	default:
		w.Header().Set("Content-Type", "application/json")
		out, _ := json.Marshal(map[string]any{"upstream": s.Name, "method": r.Method, "path": r.URL.Path, "body": string(body)})
		w.Write(out)
	}
}

func (s *Scripted) stream(w http.ResponseWriter, r *http.Request, model string, st Step) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	if st.FirstEventDelay > 0 {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(st.FirstEventDelay):
		}
	}
	send := func(data string) bool {
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if st.ErrorEvent {
		send(`{"error":{"message":"` + s.Name + ` broke","type":"server_error","param":null,"code":null}}`)
		return
	}
	words := []string{"Hello", " from ", s.Name, "."}
	for i, wd := range words {
		if st.Cut && i == st.CutAfter {
			panic(http.ErrAbortHandler)
		}
		b, _ := json.Marshal(wd)
		delta := `{"content":` + string(b) + `}`
		if i == 0 {
			delta = `{"role":"assistant","content":` + string(b) + `}`
		}
		if !send(fmt.Sprintf(`{"id":"chatcmpl-%s","object":"chat.completion.chunk","created":%d,"model":%q,"choices":[{"index":0,"delta":%s,"finish_reason":null}]}`, s.Name, created, model, delta)) {
			return
		}
	}
	if st.Cut && st.CutAfter >= len(words) {
		panic(http.ErrAbortHandler)
	}
	send(fmt.Sprintf(`{"id":"chatcmpl-%s","object":"chat.completion.chunk","created":%d,"model":%q,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, s.Name, created, model))
	send(fmt.Sprintf(`{"id":"chatcmpl-%s","object":"chat.completion.chunk","created":%d,"model":%q,"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`, s.Name, created, model))
	send("[DONE]")
}

// Content returns the reply text a Scripted fake named name gives.
func Content(name string) string { return "Hello from " + name + "." }
