package cohere

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"

	"github.com/tidwall/gjson"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
)

// maxEmbedTexts is Cohere's limit of texts per /embed call; longer inputs
// are sent in consecutive batches and their vectors concatenated.
const maxEmbedTexts = 96

// defaultInputType is sent when the client names none. Cohere's v3+ embed
// models require input_type; OpenAI's API has no such field, and
// search_document is the neutral choice for indexing text. A client that
// knows Cohere may send "input_type" in the body (search_query,
// classification, clustering, ...), which is passed through.
const defaultInputType = "search_document"

// embedRequest is the body of POST /v2/embed.
type embedRequest struct {
	Model           string   `json:"model"`
	Texts           []string `json:"texts"`
	InputType       string   `json:"input_type"`
	EmbeddingTypes  []string `json:"embedding_types"`
	OutputDimension *int     `json:"output_dimension,omitempty"`
}

// embedResponse is Cohere's answer for embedding_types ["float"].
type embedResponse struct {
	ID         string `json:"id"`
	Embeddings struct {
		Float [][]float64 `json:"float"`
	} `json:"embeddings"`
	Meta struct {
		BilledUnits struct {
			InputTokens float64 `json:"input_tokens"`
		} `json:"billed_units"`
	} `json:"meta"`
}

// buildEmbedRequests translates an OpenAI embeddings request into one
// Cohere request per batch of texts.
func buildEmbedRequests(call *provider.EmbedCall) ([]embedRequest, error) {
	r := call.Request
	if len(r.Tokens) > 0 {
		return nil, unsupported("input", "Cohere embeds text; token-id input is not supported")
	}
	if r.User != "" {
		call.Drop("user")
	}
	inputType := defaultInputType
	if it := gjson.GetBytes(call.Body, "input_type"); it.Type == gjson.String && it.String() != "" {
		inputType = it.String()
	}
	var out []embedRequest
	for start := 0; start < len(r.Texts); start += maxEmbedTexts {
		end := min(start+maxEmbedTexts, len(r.Texts))
		out = append(out, embedRequest{Model: r.Model, Texts: r.Texts[start:end], InputType: inputType, EmbeddingTypes: []string{"float"}, OutputDimension: r.Dimensions})
	}
	return out, nil
}

// Embed translates POST /v1/embeddings to Cohere's POST /embed. Usage is
// meta.billed_units.input_tokens (Cohere reports no other count). With
// encoding_format base64 each vector is encoded as OpenAI does: the
// float32 values, little-endian, base64.
func (c *Client) Embed(ctx context.Context, call *provider.EmbedCall) (*provider.Response, error) {
	reqs, err := buildEmbedRequests(call)
	if err != nil {
		return nil, err
	}
	out := llm.EmbeddingResponse{Object: "list", Model: call.Request.Model, Data: make([]llm.Embedding, 0, len(call.Request.Texts))}
	var status int
	var header http.Header
	var tokens float64
	for _, er := range reqs {
		body, err := marshal(er)
		if err != nil {
			return nil, fmt.Errorf("cohere: encode embed request: %w", err)
		}
		resp, err := c.post(ctx, call.Target, call.Header, "/embed", body, false)
		if err != nil {
			return nil, err
		}
		raw, err := provider.ReadBody(resp)
		resp.Body.Close()
		if err != nil {
			return nil, provider.ClassifyTransportError(ctx, err)
		}
		var cr embedResponse
		if err := json.Unmarshal(raw, &cr); err != nil {
			return nil, fmt.Errorf("%w: cohere embed answer is not JSON: %v", provider.ErrBadResponse, err)
		}
		if len(cr.Embeddings.Float) != len(er.Texts) {
			return nil, fmt.Errorf("%w: cohere returned %d vectors for %d texts", provider.ErrBadResponse, len(cr.Embeddings.Float), len(er.Texts))
		}
		for _, v := range cr.Embeddings.Float {
			e := llm.Embedding{Object: "embedding", Index: len(out.Data), Embedding: v}
			if call.Request.EncodingFormat == "base64" {
				e.Embedding = encodeFloat32(v)
			}
			out.Data = append(out.Data, e)
		}
		tokens += cr.Meta.BilledUnits.InputTokens
		status, header = resp.StatusCode, resp.Header
	}
	n := int(math.Round(tokens))
	out.Usage.PromptTokens, out.Usage.TotalTokens = n, n
	b, err := marshal(out)
	if err != nil {
		return nil, fmt.Errorf("cohere: encode embeddings: %w", err)
	}
	return &provider.Response{Status: status, Header: header, Body: b, Usage: llm.Usage{PromptTokens: n, TotalTokens: n}, Model: call.Request.Model}, nil
}

// encodeFloat32 is OpenAI's base64 embedding encoding.
func encodeFloat32(v []float64) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(f)))
	}
	return base64.StdEncoding.EncodeToString(b)
}
