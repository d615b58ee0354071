package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// EmbeddingRequest is an OpenAI POST /v1/embeddings body.
type EmbeddingRequest struct {
	Model string `json:"model"`
	// Input is a string, an array of strings, an array of token ids, or an
	// array of token-id arrays; Texts holds the string forms and Tokens the
	// token forms (exactly one is set after decoding).
	Input          json.RawMessage `json:"input"`
	Texts          []string        `json:"-"`
	Tokens         [][]int         `json:"-"`
	EncodingFormat string          `json:"encoding_format,omitempty"`
	Dimensions     *int            `json:"dimensions,omitempty"`
	User           string          `json:"user,omitempty"`
}

// maxEmbeddingInputs bounds the inputs of one request, as OpenAI does.
const maxEmbeddingInputs = 2048

// DecodeEmbeddingRequest decodes and validates an embeddings body.
func DecodeEmbeddingRequest(body []byte) (*EmbeddingRequest, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return nil, &Error{Code: CodeInvalidJSON, Message: "request body: must be a JSON object"}
	}
	var r EmbeddingRequest
	if err := json.Unmarshal(body, &r); err != nil {
		if te, ok := err.(*json.UnmarshalTypeError); ok {
			return nil, &Error{Param: te.Field, Code: CodeInvalidType, Message: fmt.Sprintf("%s: must be %s", te.Field, te.Type)}
		}
		return nil, &Error{Code: CodeInvalidJSON, Message: "request body: malformed JSON: " + err.Error()}
	}
	if r.Model == "" {
		return nil, &Error{Param: "model", Code: CodeMissingRequired, Message: "model: is required"}
	}
	in := bytes.TrimSpace(r.Input)
	switch {
	case len(in) == 0 || string(in) == "null":
		return nil, &Error{Param: "input", Code: CodeMissingRequired, Message: "input: is required"}
	case in[0] == '"':
		var s string
		if err := json.Unmarshal(in, &s); err != nil {
			return nil, &Error{Param: "input", Code: CodeInvalidType, Message: "input: malformed string"}
		}
		r.Texts = []string{s}
	case in[0] == '[':
		if err := json.Unmarshal(in, &r.Texts); err != nil {
			r.Texts = nil
			var ids []int
			if err := json.Unmarshal(in, &ids); err == nil {
				r.Tokens = [][]int{ids}
			} else if err := json.Unmarshal(in, &r.Tokens); err != nil {
				return nil, &Error{Param: "input", Code: CodeInvalidType, Message: "input: must be a string, an array of strings, an array of token ids or an array of token-id arrays"}
			}
		}
		n := len(r.Texts) + len(r.Tokens)
		if n == 0 || n > maxEmbeddingInputs {
			return nil, &Error{Param: "input", Code: CodeInvalidValue, Message: fmt.Sprintf("input: must have 1 to %d items, got %d", maxEmbeddingInputs, n)}
		}
	default:
		return nil, &Error{Param: "input", Code: CodeInvalidType, Message: "input: must be a string or an array"}
	}
	switch r.EncodingFormat {
	case "", "float", "base64":
	default:
		return nil, &Error{Param: "encoding_format", Code: CodeInvalidValue, Message: fmt.Sprintf("encoding_format: must be float or base64, got %q", r.EncodingFormat)}
	}
	if r.Dimensions != nil && *r.Dimensions < 1 {
		return nil, &Error{Param: "dimensions", Code: CodeInvalidValue, Message: "dimensions: must be at least 1"}
	}
	return &r, nil
}

// EmbeddingResponse is OpenAI's embeddings answer.
type EmbeddingResponse struct {
	Object string      `json:"object"` // "list"
	Data   []Embedding `json:"data"`
	Model  string      `json:"model"`
	Usage  struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// Embedding is one vector of an EmbeddingResponse; Embedding holds
// []float64 or, for encoding_format base64, a string.
type Embedding struct {
	Object    string `json:"object"` // "embedding"
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}
