// Package reqlog owns the request-log record, the bounded queue every
// data-plane request hands its record to, and the batch writer that drains
// the queue into the store. Records are never dropped: a full queue makes
// the request wait (backpressure) and the wait is counted in metrics.
//
// reqlog imports only llm and httpx; the store satisfies its Sink interface.
package reqlog

import (
	"time"

	"github.com/ai-gateway/gateway/internal/llm"
)

// Record is one data-plane request as stored and listed by /v1/logs.
// Field names follow API.md §2 "Records".
type Record struct {
	ID           string            `json:"id"`
	TraceID      string            `json:"trace_id"`
	SpanID       string            `json:"span_id,omitempty"`
	ParentSpanID string            `json:"parent_span_id,omitempty"`
	SpanName     string            `json:"span_name,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`

	OrganisationID string `json:"organisation_id,omitempty"`
	WorkspaceID    string `json:"workspace_id,omitempty"`
	APIKeyID       string `json:"api_key_id,omitempty"`
	VirtualKey     string `json:"virtual_key,omitempty"`
	Config         string `json:"config,omitempty"`

	Provider string `json:"provider,omitempty"`
	// Model is the model the client asked for; ModelServed the one the
	// provider reported.
	Model       string `json:"model,omitempty"`
	ModelServed string `json:"model_served,omitempty"`

	RequestPath string `json:"request_path"`
	Method      string `json:"method"`
	StatusCode  int    `json:"status_code"`
	IsSuccess   bool   `json:"is_success"`
	Stream      bool   `json:"is_streaming"`
	// ErrorMessage is a short, client-safe description of a failure.
	ErrorMessage string `json:"error_message,omitempty"`

	// Latencies: total wall time; time spent waiting on the provider;
	// gateway overhead = total - upstream; time to first token (streams).
	LatencyMS         float64 `json:"latency_ms"`
	UpstreamLatencyMS float64 `json:"upstream_latency_ms"`
	OverheadMS        float64 `json:"gateway_overhead_ms"`
	TTFTMS            float64 `json:"ttft_ms,omitempty"`

	Usage               llm.Usage `json:"usage"`
	Cost                float64   `json:"cost"`
	CacheStatus         string    `json:"cache_status,omitempty"`
	RetryCount          int       `json:"retry_count"`
	LastUsedOptionIndex string    `json:"last_used_option_index,omitempty"`
	// Attempts lists every call made to a provider for this request, in
	// order: retries and fallbacks included, and targets skipped because
	// their circuit was open.
	Attempts []Attempt `json:"attempts,omitempty"`

	// RequestBody and ResponseBody hold JSON (or text) as logged; empty when
	// body logging is off. Secrets never appear: credentials travel in
	// headers, which are not stored.
	RequestBody  string `json:"request_body,omitempty"`
	ResponseBody string `json:"response_body,omitempty"`

	CreatedAt time.Time `json:"created_at"`
}

// Attempt is one call to a provider made while serving a request.
type Attempt struct {
	// Target is the JSON path of the config target called (config,
	// config.targets[1], …); empty when no config routed the request.
	Target   string `json:"target,omitempty"`
	Provider string `json:"provider,omitempty"`
	// Retry is 0 for a target's first try, then 1, 2, …
	Retry int `json:"retry"`
	// Status is the answer's HTTP status, or the status the gateway gave
	// for a failure without one (502 unreachable, 504 timeout, 503 circuit
	// open).
	Status    int     `json:"status"`
	LatencyMS float64 `json:"latency_ms"`
	// Error is a short, client-safe description of a failure.
	Error string `json:"error,omitempty"`
}
