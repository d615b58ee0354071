package gateway

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
)

// embeddings serves POST /v1/embeddings: validated, then translated by
// adapters that implement provider.Embedder and forwarded unchanged to
// OpenAI-compatible ones.
func (g *Gateway) embeddings(c *call) error {
	body, err := c.readBody()
	if err != nil {
		return err
	}
	req, err := llm.DecodeEmbeddingRequest(body)
	if err != nil {
		return requestError(err)
	}
	c.rec.Model = req.Model
	rt, err := c.resolve()
	if err != nil {
		return err
	}
	emb, ok := rt.provider.(provider.Embedder)
	if !ok {
		if err := nativeOnly(rt.provider, "/v1/embeddings"); err != nil {
			return err
		}
		return c.forwardTo(rt, body)
	}
	if len(rt.overrides) > 0 {
		if body, err = patchBody(body, rt.overrides); err != nil {
			return err
		}
		if req, err = llm.DecodeEmbeddingRequest(body); err != nil {
			return requestError(err)
		}
		c.rec.Model = req.Model
	}
	ctx, cancel, err := c.upstreamContext(rt)
	if err != nil {
		return err
	}
	defer cancel()
	call := &provider.EmbedCall{Target: rt.target, Request: req, Body: body, Header: forwardedHeaders(c.r.Header, rt.target.ForwardHeaders)}
	c.upstreamStart = g.now()
	resp, err := emb.Embed(ctx, call)
	c.upstreamDur = g.now().Sub(c.upstreamStart)
	c.logDropped(call.Dropped)
	if err != nil {
		return upstreamError(err)
	}
	return c.writeResponse(resp)
}

// completions serves POST /v1/completions (the legacy text completions):
// forwarded to providers that offer it.
func (g *Gateway) completions(c *call) error {
	body, err := c.readBody()
	if err != nil {
		return err
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' || !gjson.ValidBytes(trimmed) {
		return httpx.BadRequest(llm.CodeInvalidJSON, "", "request body: must be a JSON object")
	}
	res := gjson.GetManyBytes(body, "model", "prompt")
	if res[0].Type != gjson.String || res[0].String() == "" {
		return httpx.BadRequest(llm.CodeMissingRequired, "model", "model: is required")
	}
	if !res[1].Exists() {
		return httpx.BadRequest(llm.CodeMissingRequired, "prompt", "prompt: is required")
	}
	c.rec.Model = res[0].String()
	rt, err := c.resolve()
	if err != nil {
		return err
	}
	if err := nativeOnly(rt.provider, "/v1/completions"); err != nil {
		return err
	}
	if len(rt.overrides) > 0 {
		if body, err = patchBody(body, rt.overrides); err != nil {
			return err
		}
	}
	return c.forwardTo(rt, body)
}

// nativeOnly refuses routes a translating adapter's provider does not have.
func nativeOnly(p provider.Provider, route string) error {
	if n, ok := p.(provider.Native); ok && n.Native() {
		return httpx.BadRequest("unsupported_endpoint", "", "%s is not offered by provider %s", route, p.Name())
	}
	return nil
}
