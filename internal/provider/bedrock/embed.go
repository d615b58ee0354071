package bedrock

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
)

const (
	// titanParallel bounds concurrent InvokeModel calls for Titan, which
	// embeds one text per call.
	titanParallel = 4
	// cohereBatch is Cohere's limit of texts per call.
	cohereBatch = 96
)

// Embed translates /v1/embeddings to InvokeModel (POST /model/{id}/invoke)
// for the Titan text embedding models ({inputText, dimensions, normalize},
// one call per input, at most titanParallel at once) and the Cohere embed
// models ({texts, input_type: "search_document"}, up to 96 texts a call).
func (c *Client) Embed(ctx context.Context, call *provider.EmbedCall) (*provider.Response, error) {
	r := call.Request
	if len(r.Tokens) > 0 {
		return nil, unsupported("input", "Bedrock embedding models take text, not token ids")
	}
	if r.User != "" {
		call.Drop("user")
	}
	model := strings.ToLower(r.Model)
	var (
		vecs   [][]float64
		tokens int
		err    error
	)
	switch {
	case strings.Contains(model, "amazon.titan-embed"):
		vecs, tokens, err = c.embedTitan(ctx, call)
	case strings.Contains(model, "cohere.embed"):
		vecs, tokens, err = c.embedCohere(ctx, call)
	default:
		return nil, unsupported("model", "Bedrock embeddings support the amazon.titan-embed-* and cohere.embed-* models")
	}
	if err != nil {
		return nil, err
	}
	out := llm.EmbeddingResponse{Object: "list", Model: r.Model, Data: make([]llm.Embedding, len(vecs))}
	for i, v := range vecs {
		var e any = v
		if r.EncodingFormat == "base64" {
			e = float32Base64(v)
		}
		out.Data[i] = llm.Embedding{Object: "embedding", Index: i, Embedding: e}
	}
	out.Usage.PromptTokens, out.Usage.TotalTokens = tokens, tokens
	body, err := marshal(out)
	if err != nil {
		return nil, err
	}
	return &provider.Response{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: body,
		Usage: llm.Usage{PromptTokens: tokens, TotalTokens: tokens}, Model: r.Model}, nil
}

// float32Base64 encodes v as OpenAI does for encoding_format base64:
// little-endian float32s.
func float32Base64(v []float64) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(f)))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// invoke posts body to the model's InvokeModel endpoint and decodes the
// JSON answer into v; it returns the input token count header when set.
func (c *Client) invoke(ctx context.Context, call *provider.EmbedCall, body []byte, v any) (int, error) {
	resp, err := c.post(ctx, call.Target, call.Header, modelPath(call.Request.Model, "invoke"), body, "application/json")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := readBody(resp.Body, maxResponseBytes)
	if err != nil {
		return 0, provider.ClassifyTransportError(ctx, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 0, upstreamError(resp, raw)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return 0, fmt.Errorf("%w: bedrock answered an embedding body that is not JSON: %v", provider.ErrBadResponse, err)
	}
	n, _ := strconv.Atoi(resp.Header.Get("X-Amzn-Bedrock-Input-Token-Count"))
	return n, nil
}

func (c *Client) embedTitan(ctx context.Context, call *provider.EmbedCall) ([][]float64, int, error) {
	r := call.Request
	// Titan v1 takes inputText only; v2 adds dimensions and normalize.
	v1 := strings.Contains(strings.ToLower(r.Model), "titan-embed-text-v1") || strings.Contains(strings.ToLower(r.Model), "titan-embed-g1-text")
	if v1 && r.Dimensions != nil {
		return nil, 0, unsupported("dimensions", "this Titan model has a fixed size; dimensions needs amazon.titan-embed-text-v2")
	}
	type titanRequest struct {
		InputText  string `json:"inputText"`
		Dimensions *int   `json:"dimensions,omitempty"`
		Normalize  *bool  `json:"normalize,omitempty"`
	}
	var normalize *bool
	if !v1 {
		// OpenAI's embeddings are unit length.
		t := true
		normalize = &t
	}
	vecs := make([][]float64, len(r.Texts))
	counts := make([]int, len(r.Texts))
	var (
		once     sync.Once
		firstErr error
	)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, titanParallel)
	var wg sync.WaitGroup
	for i, text := range r.Texts {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			body, _ := json.Marshal(titanRequest{InputText: text, Dimensions: r.Dimensions, Normalize: normalize})
			var out struct {
				Embedding           []float64 `json:"embedding"`
				InputTextTokenCount int       `json:"inputTextTokenCount"`
			}
			hdr, err := c.invoke(ctx, call, body, &out)
			if err != nil {
				// The first failure is reported; the calls it cancels
				// fail after it.
				once.Do(func() { firstErr = err; cancel() })
				return
			}
			vecs[i] = out.Embedding
			counts[i] = out.InputTextTokenCount
			if counts[i] == 0 {
				counts[i] = hdr
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, 0, firstErr
	}
	if err := parent.Err(); err != nil {
		return nil, 0, provider.ClassifyTransportError(parent, err)
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	return vecs, total, nil
}

func (c *Client) embedCohere(ctx context.Context, call *provider.EmbedCall) ([][]float64, int, error) {
	r := call.Request
	type cohereRequest struct {
		Texts           []string `json:"texts"`
		InputType       string   `json:"input_type"`
		OutputDimension *int     `json:"output_dimension,omitempty"`
	}
	if r.Dimensions != nil && !strings.Contains(strings.ToLower(r.Model), "embed-v4") {
		return nil, 0, unsupported("dimensions", "this Cohere model has a fixed size; dimensions needs cohere.embed-v4")
	}
	var vecs [][]float64
	total := 0
	for start := 0; start < len(r.Texts); start += cohereBatch {
		batch := r.Texts[start:min(start+cohereBatch, len(r.Texts))]
		body, _ := json.Marshal(cohereRequest{Texts: batch, InputType: "search_document", OutputDimension: r.Dimensions})
		var out struct {
			Embeddings json.RawMessage `json:"embeddings"`
		}
		n, err := c.invoke(ctx, call, body, &out)
		if err != nil {
			return nil, 0, err
		}
		// v3 answers [[...]]; v4 may answer {"float": [[...]]}.
		var got [][]float64
		if err := json.Unmarshal(out.Embeddings, &got); err != nil {
			var typed struct {
				Float [][]float64 `json:"float"`
			}
			if err := json.Unmarshal(out.Embeddings, &typed); err != nil {
				return nil, 0, fmt.Errorf("%w: bedrock answered Cohere embeddings in an unknown shape", provider.ErrBadResponse)
			}
			got = typed.Float
		}
		if len(got) != len(batch) {
			return nil, 0, fmt.Errorf("%w: bedrock answered %d embeddings for %d texts", provider.ErrBadResponse, len(got), len(batch))
		}
		vecs = append(vecs, got...)
		total += n
	}
	return vecs, total, nil
}
