// Package metrics owns the gateway's Prometheus collectors. Labels are
// bounded (API.md §1): route pattern, provider slug, status class, never
// raw paths, keys or user ids.
//
// metrics imports no other internal package.
package metrics

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds every collector. Its methods are safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	upstream   *prometheus.HistogramVec
	overhead   prometheus.Histogram
	tokens     *prometheus.CounterVec
	authFailed prometheus.Counter

	LogQueueWaits       prometheus.Counter
	LogQueueWaitSeconds prometheus.Counter
	LogRecordsWritten   prometheus.Counter
	LogRecordsDropped   prometheus.Counter
	LogWriteErrors      prometheus.Counter
	LogBatchSeconds     prometheus.Histogram
}

// New registers the collectors on a fresh registry. queueDepth, when not
// nil, is sampled for the log-queue gauge.
func New(queueDepth func() float64) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_requests_total", Help: "Requests answered, by route pattern, provider and status class.",
		}, []string{"route", "provider", "status_class"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_request_duration_seconds", Help: "Wall time of requests, by route pattern and provider.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"route", "provider"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_upstream_duration_seconds", Help: "Time spent waiting on the provider, by provider.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"provider"}),
		overhead: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "gateway_overhead_seconds", Help: "Gateway time per proxied request: total minus upstream.",
			Buckets: []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1},
		}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_tokens_total", Help: "Tokens counted, by provider and kind (prompt, completion).",
		}, []string{"provider", "kind"}),
		authFailed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_auth_failures_total", Help: "Requests rejected for a missing or invalid API key.",
		}),
		LogQueueWaits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_log_queue_waits_total", Help: "Requests that waited for room in the full log queue (backpressure).",
		}),
		LogQueueWaitSeconds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_log_queue_wait_seconds_total", Help: "Total time requests waited for room in the log queue.",
		}),
		LogRecordsWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_log_records_written_total", Help: "Request-log records stored.",
		}),
		LogRecordsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_log_records_dropped_total", Help: "Request-log records that could be neither stored nor spilled to disk.",
		}),
		LogWriteErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_log_write_errors_total", Help: "Failed attempts to store a batch of request-log records (retried).",
		}),
		LogBatchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "gateway_log_batch_seconds", Help: "Time to store one batch of request-log records.",
			Buckets: prometheus.DefBuckets,
		}),
	}
	reg.MustRegister(m.requests, m.duration, m.upstream, m.overhead, m.tokens, m.authFailed,
		m.LogQueueWaits, m.LogQueueWaitSeconds, m.LogRecordsWritten, m.LogRecordsDropped, m.LogWriteErrors, m.LogBatchSeconds)
	if queueDepth != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "gateway_log_queue_depth", Help: "Request-log records waiting to be stored.",
		}, queueDepth))
	}
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry exposes the registry for collectors registered elsewhere.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

var statusClasses = [...]string{"0xx", "1xx", "2xx", "3xx", "4xx", "5xx"}

// StatusClass returns "2xx" etc.; unusual codes fall into the nearest class.
func StatusClass(code int) string {
	c := code / 100
	if c < 0 || c >= len(statusClasses) {
		return strconv.Itoa(c) + "xx"
	}
	return statusClasses[c]
}

// Request is one answered data-plane or control-plane request.
type Request struct {
	Route, Provider  string
	Status           int
	Seconds          float64
	UpstreamSeconds  float64
	PromptTokens     int
	CompletionTokens int
}

// Observe records r.
func (m *Metrics) Observe(r Request) {
	if r.Provider == "" {
		r.Provider = "none"
	}
	m.requests.WithLabelValues(r.Route, r.Provider, StatusClass(r.Status)).Inc()
	m.duration.WithLabelValues(r.Route, r.Provider).Observe(r.Seconds)
	if r.UpstreamSeconds > 0 {
		m.upstream.WithLabelValues(r.Provider).Observe(r.UpstreamSeconds)
		m.overhead.Observe(max(0, r.Seconds-r.UpstreamSeconds))
	}
	if r.PromptTokens > 0 {
		m.tokens.WithLabelValues(r.Provider, "prompt").Add(float64(r.PromptTokens))
	}
	if r.CompletionTokens > 0 {
		m.tokens.WithLabelValues(r.Provider, "completion").Add(float64(r.CompletionTokens))
	}
}

// AuthFailed counts a rejected API key.
func (m *Metrics) AuthFailed() { m.authFailed.Inc() }
