// Package llm holds the provider-neutral, OpenAI-shaped types of the data
// plane (chat request, usage) and the validation of every bound SPEC.md sets
// on a chat request. It decodes a body once; the gateway forwards the
// original bytes to OpenAI-compatible providers, so unknown fields survive.
//
// llm is a leaf: it must not import any other internal package.
package llm
