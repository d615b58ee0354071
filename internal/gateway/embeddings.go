package gateway

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/tidwall/gjson"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/llm"
	"github.com/ai-gateway/gateway/internal/provider"
	"github.com/ai-gateway/gateway/internal/routing"
)

// embeddings serves POST /v1/embeddings: validated, then translated by
// adapters that implement provider.Embedder and forwarded unchanged to
// OpenAI-compatible ones (each target of a config may be either).
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
	if err := c.routePlan(); err != nil {
		return err
	}
	return c.dispatch(func(ctx context.Context, rt *route) routing.Outcome {
		emb, ok := rt.provider.(provider.Embedder)
		if !ok {
			if err := nativeOnly(rt.provider, "/v1/embeddings"); err != nil {
				return c.failure(err, nil)
			}
			return c.forwardTo(ctx, rt, body, true)
		}
		b, r := body, req
		if len(rt.overrides) > 0 {
			var err error
			if b, err = patchBody(body, rt); err != nil {
				return c.failure(err, nil)
			}
			if r, err = llm.DecodeEmbeddingRequest(b); err != nil {
				return c.failure(requestError(err), nil)
			}
		}
		c.rec.Model = r.Model
		call := &provider.EmbedCall{Target: rt.target, Request: r, Body: b, Header: forwardedHeaders(c.r.Header, rt.target.ForwardHeaders)}
		resp, err := emb.Embed(ctx, call)
		c.logDropped(call.Dropped)
		if err != nil {
			return c.failure(err, nil)
		}
		return committed(resp.Status, c.writeResponse(resp))
	})
}

// completions serves POST /v1/completions (the legacy text completions):
// forwarded to providers that offer it.
func (g *Gateway) completions(c *call) error {
	body, err := c.readBody()
	if err != nil {
		return err
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
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
	if err := c.routePlan(); err != nil {
		return err
	}
	return c.dispatch(func(ctx context.Context, rt *route) routing.Outcome {
		if err := nativeOnly(rt.provider, "/v1/completions"); err != nil {
			return c.failure(err, nil)
		}
		return c.forwardTo(ctx, rt, body, true)
	})
}

// nativeOnly refuses routes a translating adapter's provider does not have.
func nativeOnly(p provider.Provider, route string) error {
	if n, ok := p.(provider.Native); ok && n.Native() {
		return httpx.BadRequest("unsupported_endpoint", "", "%s is not offered by provider %s", route, p.Name())
	}
	return nil
}
