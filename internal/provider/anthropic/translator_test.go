package anthropic

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ai-gateway/gateway/internal/provider"
)

// TestTranslatorBuildBody: without a version the body is Chat's; with one
// it has anthropic_version and no model, and nothing else changes.
func TestTranslatorBuildBody(t *testing.T) {
	in := []byte(`{"model":"claude-sonnet-4@20250514","messages":[{"role":"system","content":"Be terse."},{"role":"user","content":"hi"}],"temperature":1.5,"seed":3}`)
	plain, err := buildRequest(chatCall(t, in), true)
	if err != nil {
		t.Fatal(err)
	}
	same, err := Translator{}.BuildBody(chatCall(t, in), true, "")
	if err != nil || string(same) != string(plain) {
		t.Fatalf("BuildBody without version = %s, %v; want %s", same, err, plain)
	}
	call := chatCall(t, in)
	v, err := Translator{Provider: "vertex-ai"}.BuildBody(call, true, "vertex-2023-10-16")
	if err != nil {
		t.Fatal(err)
	}
	body := gjson.ParseBytes(v)
	if body.Get("model").Exists() || body.Get("anthropic_version").String() != "vertex-2023-10-16" || !body.Get("stream").Bool() {
		t.Errorf("versioned body = %s", v)
	}
	if body.Get("max_tokens").Int() != 32000 || body.Get("temperature").Float() != 1 || body.Get("system.0.text").String() != "Be terse." {
		t.Errorf("versioned body lost the mapping: %s", v)
	}
	if len(call.Dropped) != 1 || call.Dropped[0] != "seed" {
		t.Errorf("dropped = %v", call.Dropped)
	}
}

func TestTranslatorErrorsNameTheHost(t *testing.T) {
	_, err := Translator{Provider: "vertex-ai"}.BuildBody(chatCall(t, []byte(`{"model":"claude-x","n":2,"messages":[{"role":"user","content":"hi"}]}`)), false, "vertex-2023-10-16")
	var ue *provider.UnsupportedParameterError
	if !errors.As(err, &ue) || ue.Provider != "vertex-ai" || ue.Param != "n" {
		t.Errorf("err = %#v", err)
	}
	_, err = Translator{}.BuildBody(chatCall(t, []byte(`{"model":"claude-x","n":2,"messages":[{"role":"user","content":"hi"}]}`)), false, "")
	if !errors.As(err, &ue) || ue.Provider != Name {
		t.Errorf("zero Translator: err = %#v", err)
	}

	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-x\",\"usage\":{\"input_tokens\":1}}}\n\n" +
			"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"))}
	s, err := Translator{Provider: "vertex-ai"}.NewStream(context.Background(), resp, chatCall(t, []byte(`{"model":"claude-x","messages":[{"role":"user","content":"hi"}]}`)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for {
		_, err = s.Next()
		if err != nil {
			break
		}
	}
	var se *provider.StreamError
	if !errors.As(err, &se) || se.Provider != "vertex-ai" {
		t.Errorf("stream err = %#v", err)
	}

	resp = &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(`{}`))}
	if _, err := (Translator{Provider: "vertex-ai"}).NewStream(context.Background(), resp, chatCall(t, []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))); !errors.Is(err, provider.ErrBadResponse) || !strings.Contains(err.Error(), "vertex-ai") {
		t.Errorf("json answer to a stream: %v", err)
	}
}

func TestTranslatorReadResponse(t *testing.T) {
	raw := `{"id":"msg_vrtx_01","type":"message","role":"assistant","model":"claude-sonnet-4-20250514","content":[{"type":"text","text":"Hi."}],"stop_reason":"end_turn","usage":{"input_tokens":4,"output_tokens":2}}`
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(raw))}
	out, err := Translator{Provider: "vertex-ai"}.ReadResponse(context.Background(), resp, chatCall(t, []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)))
	if err != nil {
		t.Fatal(err)
	}
	b := gjson.ParseBytes(out.Body)
	if b.Get("id").String() != "chatcmpl-msg_vrtx_01" || b.Get("choices.0.message.content").String() != "Hi." || b.Get("usage.total_tokens").Int() != 6 ||
		out.Model != "claude-sonnet-4-20250514" || out.Usage.PromptTokens != 4 || out.Header.Get("Content-Type") != "application/json" {
		t.Errorf("response = %+v %s", out, out.Body)
	}
}
