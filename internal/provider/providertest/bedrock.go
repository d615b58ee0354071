package providertest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/smithy-go/aws-http-auth/credentials"
	"github.com/aws/smithy-go/aws-http-auth/sigv4"
	v4 "github.com/aws/smithy-go/aws-http-auth/v4"
)

// Credentials the Bedrock fake accepts: AWS's public documentation example
// keys for SigV4, and a Bedrock API key for Bearer auth.
const (
	BedrockAccessKeyID     = "AKIDEXAMPLE"
	BedrockSecretAccessKey = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	BedrockAPIKey          = "bedrock-api-key-fake"
	// BedrockRequestID is the x-amzn-RequestId of every answer.
	BedrockRequestID = "7f3c1e2a-fake-4b5c-9d8e-bedrock00001"
	// BedrockSignature is the reasoning signature of thinking answers; a
	// later turn must send it back before its tool use, as Claude requires.
	BedrockSignature = "EqQBCkYIBRgCKkBfakeSignature=="
)

// BedrockUsage is the usage of every Converse answer: Bedrock counts cache
// reads and writes apart from inputTokens.
const BedrockUsage = `{"inputTokens":10,"outputTokens":6,"totalTokens":21,"cacheReadInputTokens":3,"cacheWriteInputTokens":2}`

// Bedrock is a fake bedrock-runtime speaking Converse, ConverseStream (real
// binary event-stream frames, encoded with aws-sdk-go-v2's eventstream
// encoder) and InvokeModel (Titan and Cohere embeddings). Scenarios follow
// the model name as in the package doc: "err-<status>" answers the matching
// Bedrock exception (x-amzn-ErrorType and {"message"}; 429 also carries
// Retry-After so tests can see it pass), "stall", "slow", "cut-after-<n>"
// (n frames), and "exception-event" (one text delta, then a
// throttlingException frame after the 200). A request with tools whose last
// turn holds no tool result gets a toolUse; thinking in
// additionalModelRequestFields adds a signed reasoning block. It verifies
// SigV4 signatures made with BedrockAccessKeyID (service bedrock, payload
// hash over the body, by signing the signed headers again) or accepts a
// Bearer BedrockAPIKey, and checks the conversation as Bedrock and Claude
// do: turns alternate starting with user, no empty turn, one member per
// content block, toolUse/toolResult need a toolConfig, and with thinking an
// assistant tool-use turn must start with the signed reasoning block.
type Bedrock struct {
	Server *httptest.Server

	mu sync.Mutex
	requestLog
	regions []string
}

// NewBedrock starts a fake and stops it when the test ends.
func NewBedrock(t testing.TB) *Bedrock {
	f := &Bedrock{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /model/{model}/converse", f.converse)
	mux.HandleFunc("POST /model/{model}/converse-stream", f.converse)
	mux.HandleFunc("POST /model/{model}/invoke", f.invoke)
	f.Server = httptest.NewServer(f.record(mux))
	t.Cleanup(f.Server.Close)
	return f
}

// URL is the fake's base URL, for x-gateway-custom-host (Bedrock's base URL
// has no version segment).
func (f *Bedrock) URL() string { return f.Server.URL }

// Regions returns the regions of the verified SigV4 signatures so far.
func (f *Bedrock) Regions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.regions...)
}

func (f *Bedrock) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := f.note(r, true) // Path as sent: model ids are escaped
		w.Header().Set("x-amzn-RequestId", BedrockRequestID)
		if status, typ, msg := f.checkAuth(r, body); status != 0 {
			WriteBedrockError(w, status, typ, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// WriteBedrockError writes a restJson1 error: the status, x-amzn-ErrorType
// and {"message": ...}.
func WriteBedrockError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-amzn-ErrorType", typ+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "2")
	}
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"message": msg})
	w.Write(b)
}

// bedrockErrors are the exceptions the fake answers for err-<status>.
var bedrockErrors = map[int][2]string{
	400: {"ValidationException", "Malformed input request, please reformat your input and try again."},
	403: {"AccessDeniedException", "You don't have access to the model with the specified model ID."},
	404: {"ResourceNotFoundException", "Could not resolve the foundation model from the provided model identifier."},
	408: {"ModelTimeoutException", "Model has timed out in processing the request."},
	424: {"ModelErrorException", "The model returned an error."},
	429: {"ThrottlingException", "Too many requests, please wait before trying again."},
	500: {"InternalServerException", "The server encountered an internal error."},
	503: {"ServiceUnavailableException", "Service is temporarily unable to handle the request."},
}

func (f *Bedrock) checkAuth(r *http.Request, body []byte) (int, string, string) {
	authz := r.Header.Get("Authorization")
	if key, ok := strings.CutPrefix(authz, "Bearer "); ok {
		if key != BedrockAPIKey {
			return 403, "AccessDeniedException", "Invalid API Key format: Must start with pre-defined prefix"
		}
		return 0, "", ""
	}
	rest, ok := strings.CutPrefix(authz, "AWS4-HMAC-SHA256 ")
	if !ok {
		return 403, "AccessDeniedException", "Authorization header requires 'Credential' parameter."
	}
	var cred, signed string
	for _, p := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		switch k {
		case "Credential":
			cred = v
		case "SignedHeaders":
			signed = v
		}
	}
	scope := strings.Split(cred, "/")
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return 403, "IncompleteSignatureException", "Authorization header requires a valid Credential."
	}
	if scope[0] != BedrockAccessKeyID {
		return 403, "UnrecognizedClientException", "The security token included in the request is invalid."
	}
	if scope[3] != "bedrock" {
		return 403, "InvalidSignatureException", "Credential should be scoped to correct service: 'bedrock'."
	}
	sum := sha256.Sum256(body)
	if h := r.Header.Get("X-Amz-Content-Sha256"); h != "" && h != hex.EncodeToString(sum[:]) {
		return 400, "ValidationException", "The provided 'x-amz-content-sha256' header does not match what was computed."
	}
	tm, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || tm.Format("20060102") != scope[1] {
		return 403, "IncompleteSignatureException", "Date must be in ISO-8601 'basic format'."
	}
	// Sign again what was signed and compare.
	names := map[string]bool{}
	for _, n := range strings.Split(signed, ";") {
		names[n] = true
	}
	if !names["host"] {
		return 403, "InvalidSignatureException", "'Host' must be a signed header."
	}
	u := &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
	again, _ := http.NewRequest(r.Method, u.String(), nil)
	again.URL, again.Host = u, r.Host
	for k, vs := range r.Header {
		if lk := strings.ToLower(k); names[lk] && lk != "host" {
			again.Header[k] = vs
		}
	}
	s := sigv4.New(func(o *v4.SignerOptions) { o.HeaderRules = headerSet(names) })
	err = s.SignRequest(&sigv4.SignRequestInput{
		Request: again, PayloadHash: sum[:], Service: scope[3], Region: scope[2], Time: tm,
		Credentials: credentials.Credentials{AccessKeyID: BedrockAccessKeyID, SecretAccessKey: BedrockSecretAccessKey, SessionToken: r.Header.Get("X-Amz-Security-Token")},
	})
	if err != nil || again.Header.Get("Authorization") != authz {
		return 403, "InvalidSignatureException", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method."
	}
	f.mu.Lock()
	f.regions = append(f.regions, scope[2])
	f.mu.Unlock()
	return 0, "", ""
}

type headerSet map[string]bool

func (h headerSet) IsSigned(name string) bool { return h[name] }

// bedrockRequest is the part of a Converse body the fake looks at.
type bedrockRequest struct {
	Messages []struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	} `json:"messages"`
	ToolConfig *struct {
		Tools []struct {
			ToolSpec struct {
				Name string `json:"name"`
			} `json:"toolSpec"`
		} `json:"tools"`
	} `json:"toolConfig"`
	AdditionalModelRequestFields struct {
		Thinking *struct {
			Type string `json:"type"`
		} `json:"thinking"`
	} `json:"additionalModelRequestFields"`
}

// validate applies Bedrock's own conversation checks.
func (req *bedrockRequest) validate() string {
	if len(req.Messages) == 0 {
		return "A conversation must start with a user message. Try again with a conversation that starts with a user message."
	}
	thinking := req.AdditionalModelRequestFields.Thinking != nil && req.AdditionalModelRequestFields.Thinking.Type == "enabled"
	for i, m := range req.Messages {
		want := "user"
		if i%2 == 1 {
			want = "assistant"
		}
		if m.Role != want {
			return "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again."
		}
		if len(m.Content) == 0 {
			return fmt.Sprintf("The content field in the Message object at messages.%d is empty. Add a ContentBlock object to the content field and try again.", i)
		}
		for j, c := range m.Content {
			var blk map[string]json.RawMessage
			if json.Unmarshal(c, &blk) != nil || len(blk) != 1 {
				return fmt.Sprintf("messages.%d.content.%d: a ContentBlock must have exactly one member", i, j)
			}
			_, use := blk["toolUse"]
			_, result := blk["toolResult"]
			if (use || result) && (req.ToolConfig == nil || len(req.ToolConfig.Tools) == 0) {
				return "The toolConfig field must be defined when using toolUse and toolResult content blocks."
			}
			if use && thinking {
				var first map[string]struct {
					ReasoningText struct {
						Signature string `json:"signature"`
					} `json:"reasoningText"`
				}
				json.Unmarshal(m.Content[0], &first)
				if first["reasoningContent"].ReasoningText.Signature != BedrockSignature {
					return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. When `thinking` is enabled, a final `assistant` message must start with a thinking block.", i)
				}
			}
		}
	}
	return ""
}

// lastHasToolResult reports whether the last user turn carries a tool result.
func (req *bedrockRequest) lastHasToolResult() bool {
	if len(req.Messages) == 0 {
		return false
	}
	for _, c := range req.Messages[len(req.Messages)-1].Content {
		if bytes.HasPrefix(bytes.TrimSpace(c), []byte(`{"toolResult"`)) {
			return true
		}
	}
	return false
}

// bedrockAnswer is what the fake says to req: optional reasoning, then a
// tool call or text.
type bedrockAnswer struct {
	reasoning string
	toolName  string
	text      []string
}

func (req *bedrockRequest) answer(model string) bedrockAnswer {
	var a bedrockAnswer
	if t := req.AdditionalModelRequestFields.Thinking; t != nil && t.Type == "enabled" {
		a.reasoning = "The user wants the weather; I should call the tool."
	}
	switch {
	case req.ToolConfig != nil && len(req.ToolConfig.Tools) > 0 && !req.lastHasToolResult():
		a.toolName = req.ToolConfig.Tools[0].ToolSpec.Name
	case req.lastHasToolResult():
		a.text = []string{"It is", " sunny in", " Paris."}
	case model == "slow":
		for range 50 {
			a.text = append(a.text, " w")
		}
	default:
		a.text = StreamWords
	}
	return a
}

func (f *Bedrock) converse(w http.ResponseWriter, r *http.Request) {
	model := r.PathValue("model")
	if s, ok := strings.CutPrefix(model, "err-"); ok {
		status, _ := strconv.Atoi(s)
		e, ok := bedrockErrors[status]
		if !ok {
			e = [2]string{"InternalServerException", "fake upstream failure " + s}
		}
		WriteBedrockError(w, status, e[0], e[1])
		return
	}
	if model == "stall" {
		<-r.Context().Done()
		return
	}
	var req bedrockRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		WriteBedrockError(w, 400, "ValidationException", "Malformed input request: "+err.Error())
		return
	}
	if msg := req.validate(); msg != "" {
		WriteBedrockError(w, 400, "ValidationException", msg)
		return
	}
	a := req.answer(model)
	if strings.HasSuffix(r.URL.Path, "/converse-stream") {
		f.stream(w, r, model, a)
		return
	}
	var content []any
	stop := "end_turn"
	if a.reasoning != "" {
		content = append(content, map[string]any{"reasoningContent": map[string]any{"reasoningText": map[string]string{"text": a.reasoning, "signature": BedrockSignature}}})
	}
	if a.toolName != "" {
		content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": "tooluse_kZJ1fake", "name": a.toolName, "input": map[string]string{"city": "Paris"}}})
		stop = "tool_use"
	} else {
		content = append(content, map[string]string{"text": strings.Join(a.text, "")})
	}
	out, _ := json.Marshal(map[string]any{
		"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
		"stopReason": stop, "usage": json.RawMessage(BedrockUsage), "metrics": map[string]int{"latencyMs": 42},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// stream answers ConverseStream with binary event-stream frames, metadata
// after messageStop as Bedrock sends it.
func (f *Bedrock) stream(w http.ResponseWriter, r *http.Request, model string, a bedrockAnswer) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	cutAfter := -1
	if s, ok := strings.CutPrefix(model, "cut-after-"); ok {
		cutAfter, _ = strconv.Atoi(s)
	}
	pause := time.Duration(0)
	if model == "slow" {
		pause = 20 * time.Millisecond
	}
	enc := eventstream.NewEncoder()
	sent := 0
	send := func(eventType string, payload any) bool {
		if sent == cutAfter {
			panic(http.ErrAbortHandler)
		}
		sent++
		b, _ := json.Marshal(payload)
		if err := EncodeBedrockEvent(enc, w, eventType, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("messageStart", map[string]string{"role": "assistant"}) {
		return
	}
	block := 0
	if a.reasoning != "" {
		half := len(a.reasoning) / 2
		for _, part := range []string{a.reasoning[:half], a.reasoning[half:]} {
			send("contentBlockDelta", map[string]any{"contentBlockIndex": block, "delta": map[string]any{"reasoningContent": map[string]string{"text": part}}})
		}
		send("contentBlockDelta", map[string]any{"contentBlockIndex": block, "delta": map[string]any{"reasoningContent": map[string]string{"signature": BedrockSignature}}})
		send("contentBlockStop", map[string]int{"contentBlockIndex": block})
		block++
	}
	stop := "end_turn"
	if a.toolName != "" {
		send("contentBlockStart", map[string]any{"contentBlockIndex": block, "start": map[string]any{"toolUse": map[string]string{"toolUseId": "tooluse_kZJ1fake", "name": a.toolName}}})
		for _, part := range []string{`{"city":`, `"Paris"}`} {
			send("contentBlockDelta", map[string]any{"contentBlockIndex": block, "delta": map[string]any{"toolUse": map[string]string{"input": part}}})
		}
		send("contentBlockStop", map[string]int{"contentBlockIndex": block})
		stop = "tool_use"
	} else {
		for i, t := range a.text {
			if model == "exception-event" && i == 1 {
				enc.Encode(w, eventstream.Message{Headers: bedrockHeaders("exception", ":exception-type", "throttlingException"),
					Payload: []byte(`{"message":"Too many tokens, please wait before trying again."}`)})
				rc.Flush()
				return
			}
			if pause > 0 {
				select {
				case <-r.Context().Done():
					return
				case <-time.After(pause):
				}
			}
			if !send("contentBlockDelta", map[string]any{"contentBlockIndex": block, "delta": map[string]string{"text": t}}) {
				return
			}
		}
		send("contentBlockStop", map[string]int{"contentBlockIndex": block})
	}
	send("messageStop", map[string]string{"stopReason": stop})
	send("metadata", map[string]any{"usage": json.RawMessage(BedrockUsage), "metrics": map[string]int{"latencyMs": 42}})
}

func bedrockHeaders(messageType, typeHeader, typ string) eventstream.Headers {
	var h eventstream.Headers
	h.Set(typeHeader, eventstream.StringValue(typ))
	h.Set(":content-type", eventstream.StringValue("application/json"))
	h.Set(":message-type", eventstream.StringValue(messageType))
	return h
}

// EncodeBedrockEvent writes one ConverseStream event frame.
func EncodeBedrockEvent(enc *eventstream.Encoder, w io.Writer, eventType string, payload []byte) error {
	return enc.Encode(w, eventstream.Message{Headers: bedrockHeaders("event", ":event-type", eventType), Payload: payload})
}

// EncodeBedrockException writes one exception frame, as Bedrock sends a
// failure after the 200.
func EncodeBedrockException(enc *eventstream.Encoder, w io.Writer, exceptionType string, payload []byte) error {
	return enc.Encode(w, eventstream.Message{Headers: bedrockHeaders("exception", ":exception-type", exceptionType), Payload: payload})
}

// BedrockFrames encodes decoded stream events, one {"<eventType>": payload}
// JSON object per line (the vercel-ai *.chunks.txt fixtures), as the binary
// frames Bedrock sends.
func BedrockFrames(lines []byte) ([]byte, error) {
	var out bytes.Buffer
	enc := eventstream.NewEncoder()
	sc := bufio.NewScanner(bytes.NewReader(lines))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var ev map[string]json.RawMessage
		if err := json.Unmarshal(line, &ev); err != nil || len(ev) != 1 {
			return nil, fmt.Errorf("bedrock fixture line %q: want one {\"eventType\": payload} object", line)
		}
		for typ, payload := range ev {
			if err := EncodeBedrockEvent(enc, &out, typ, payload); err != nil {
				return nil, err
			}
		}
	}
	return out.Bytes(), sc.Err()
}

func (f *Bedrock) invoke(w http.ResponseWriter, r *http.Request) {
	model := r.PathValue("model")
	var req struct {
		InputText *string  `json:"inputText"`
		Texts     []string `json:"texts"`
		InputType string   `json:"input_type"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		WriteBedrockError(w, 400, "ValidationException", "Malformed input request: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.Contains(model, "amazon.titan-embed"):
		if req.InputText == nil {
			WriteBedrockError(w, 400, "ValidationException", "Malformed input request: #: required key [inputText] not found")
			return
		}
		n := len(strings.Fields(*req.InputText))
		w.Header().Set("X-Amzn-Bedrock-Input-Token-Count", strconv.Itoa(n))
		fmt.Fprintf(w, `{"embedding":[0.1,-0.2,%d.5],"inputTextTokenCount":%d}`, n, n)
	case strings.Contains(model, "cohere.embed"):
		if len(req.Texts) == 0 || req.InputType == "" {
			WriteBedrockError(w, 400, "ValidationException", "Malformed input request: texts and input_type are required")
			return
		}
		vecs := make([]string, len(req.Texts))
		n := 0
		for i, t := range req.Texts {
			vecs[i] = fmt.Sprintf("[0.3,%d.25]", i)
			n += len(strings.Fields(t))
		}
		w.Header().Set("X-Amzn-Bedrock-Input-Token-Count", strconv.Itoa(n))
		fmt.Fprintf(w, `{"id":"emb-fake","embeddings":[%s],"response_type":"embeddings_floats","texts":[]}`, strings.Join(vecs, ","))
	default:
		WriteBedrockError(w, 400, "ValidationException", "The provided model identifier is invalid.")
	}
}
