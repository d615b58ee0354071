package google

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
)

// Embeddings: the Gemini API embeds a list of texts with
// models/{m}:batchEmbedContents and reports no token usage, so the usage
// of its answers is 0; Vertex embeds with the publisher model's :predict
// ({instances:[{content}], parameters:{outputDimensionality}}) and counts
// tokens per instance in embeddings.statistics.token_count.

type batchEmbedRequest struct {
	Requests []embedContentRequest `json:"requests"`
}

type embedContentRequest struct {
	Model                string  `json:"model"`
	Content              content `json:"content"`
	OutputDimensionality *int    `json:"outputDimensionality,omitempty"`
}

type batchEmbedResponse struct {
	Embeddings []struct {
		Values []float64 `json:"values"`
	} `json:"embeddings"`
}

type predictRequest struct {
	Instances  []predictInstance  `json:"instances"`
	Parameters *predictParameters `json:"parameters,omitempty"`
}

type predictInstance struct {
	Content string `json:"content"`
}

type predictParameters struct {
	OutputDimensionality *int `json:"outputDimensionality,omitempty"`
}

type predictResponse struct {
	Predictions []struct {
		Embeddings struct {
			Values     []float64 `json:"values"`
			Statistics struct {
				TokenCount float64 `json:"token_count"`
			} `json:"statistics"`
		} `json:"embeddings"`
	} `json:"predictions"`
}

// embedBody builds the native request and the model method it goes to.
func (c *Client) embedBody(call *provider.EmbedCall) (method string, body []byte, err error) {
	r := call.Request
	if len(r.Tokens) > 0 {
		return "", nil, &provider.UnsupportedParameterError{Provider: c.name, Param: "input", Reason: "Google embedding models take text, not token ids"}
	}
	if r.User != "" {
		call.Drop("user")
	}
	if c.vertex {
		pr := predictRequest{Instances: make([]predictInstance, len(r.Texts))}
		for i, t := range r.Texts {
			pr.Instances[i] = predictInstance{Content: t}
		}
		if r.Dimensions != nil {
			pr.Parameters = &predictParameters{OutputDimensionality: r.Dimensions}
		}
		body, err = json.Marshal(pr)
		return "predict", body, err
	}
	model := "models/" + strings.TrimPrefix(r.Model, "models/")
	br := batchEmbedRequest{Requests: make([]embedContentRequest, len(r.Texts))}
	for i, t := range r.Texts {
		br.Requests[i] = embedContentRequest{Model: model, Content: content{Parts: []part{textPart(t)}}, OutputDimensionality: r.Dimensions}
	}
	body, err = json.Marshal(br)
	return "batchEmbedContents", body, err
}

// Embed translates POST /v1/embeddings.
func (c *Client) Embed(ctx context.Context, call *provider.EmbedCall) (*provider.Response, error) {
	if err := c.checkModel(call.Request.Model); err != nil {
		return nil, err
	}
	method, body, err := c.embedBody(call)
	if err != nil {
		return nil, err
	}
	u, err := c.modelURL(call.Target, call.Request.Model, method, "")
	if err != nil {
		return nil, err
	}
	resp, err := c.post(ctx, call.Target, call.Header, u, body, false)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, c.errorFromResponse(ctx, resp)
	}
	raw, err := provider.ReadBody(resp)
	if err != nil {
		return nil, provider.ClassifyTransportError(ctx, err)
	}
	out, err := c.toEmbeddingResponse(call.Request, raw)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("%s: encode response: %w", c.name, err)
	}
	u2 := llm.Usage{PromptTokens: out.Usage.PromptTokens, TotalTokens: out.Usage.TotalTokens}
	return &provider.Response{Status: http.StatusOK, Header: resp.Header, Body: b, Usage: u2, Model: out.Model}, nil
}

// toEmbeddingResponse reads either native answer into OpenAI's list.
func (c *Client) toEmbeddingResponse(r *llm.EmbeddingRequest, raw []byte) (*llm.EmbeddingResponse, error) {
	var vectors [][]float64
	tokens := 0
	if c.vertex {
		var pr predictResponse
		if err := json.Unmarshal(raw, &pr); err != nil {
			return nil, fmt.Errorf("%w: %s answered a body that is not a PredictResponse: %v", provider.ErrBadResponse, c.name, err)
		}
		for _, p := range pr.Predictions {
			vectors = append(vectors, p.Embeddings.Values)
			tokens += int(p.Embeddings.Statistics.TokenCount)
		}
	} else {
		var br batchEmbedResponse
		if err := json.Unmarshal(raw, &br); err != nil {
			return nil, fmt.Errorf("%w: %s answered a body that is not a BatchEmbedContentsResponse: %v", provider.ErrBadResponse, c.name, err)
		}
		for _, e := range br.Embeddings {
			vectors = append(vectors, e.Values)
		}
	}
	if len(vectors) != len(r.Texts) {
		return nil, fmt.Errorf("%w: %s returned %d embeddings for %d inputs", provider.ErrBadResponse, c.name, len(vectors), len(r.Texts))
	}
	out := &llm.EmbeddingResponse{Object: "list", Model: r.Model, Data: make([]llm.Embedding, len(vectors))}
	for i, v := range vectors {
		var emb any = v
		if v == nil {
			emb = []float64{}
		}
		if r.EncodingFormat == "base64" {
			emb = float32Base64(v)
		}
		out.Data[i] = llm.Embedding{Object: "embedding", Index: i, Embedding: emb}
	}
	out.Usage.PromptTokens, out.Usage.TotalTokens = tokens, tokens
	return out, nil
}

// float32Base64 encodes a vector as OpenAI's base64 format does: little-
// endian float32s.
func float32Base64(v []float64) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(f)))
	}
	return base64.StdEncoding.EncodeToString(b)
}
