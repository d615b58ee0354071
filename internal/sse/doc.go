// Package sse reads server-sent events from upstream providers and writes
// them to clients, flushing every event.
//
// The Reader follows the WHATWG parsing rules for text/event-stream
// (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation)
// and copes with what upstreams actually send (PROVIDERS.md §0.10): comment
// lines such as DeepSeek's ": keep-alive", CRLF and lone CR line breaks
// (Gemini's "\r\n\r\n" separators), multi-line data, Anthropic's "event:"
// names, and streams that end without "data: [DONE]". It leaves trimming to
// its callers, so Anthropic's trailing-space padding survives in Event.Data.
//
// The Writer emits one complete event per Write call and flushes it through
// http.ResponseController, so wrappers that implement Unwrap do not buffer a
// stream (STYLE.md §4).
//
// sse is a leaf: it imports no other internal package.
package sse
