// Package catalog owns the model catalog: which models each provider of
// this gateway offers, with their mode, context window, output limit and
// per-token prices. The data is generated from litellm's price table
// (MIT, data/LICENSE) by ./gen and embedded, so the binary carries only the
// chat and embedding models of the providers the gateway serves.
//
// catalog is a leaf: it imports no internal package.
package catalog

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

//go:generate go run ./gen -out data/models.json

// Modes of the catalog's models.
const (
	ModeChat      = "chat"
	ModeEmbedding = "embedding"
)

// Model is one model a provider offers. Prices are in USD per token, as in
// litellm's table (2.5e-06 is $2.50 per million tokens); zero means the
// table gives none.
type Model struct {
	// ID is the model name a client sends for this provider ("gpt-4o",
	// "claude-sonnet-4-5", "accounts/fireworks/models/deepseek-v3").
	ID   string `json:"id"`
	Mode string `json:"mode"`
	// ContextWindow is the most input tokens the model takes.
	ContextWindow   int `json:"context_window,omitempty"`
	MaxOutputTokens int `json:"max_output_tokens,omitempty"`

	InputCostPerToken  float64 `json:"input_cost_per_token,omitempty"`
	OutputCostPerToken float64 `json:"output_cost_per_token,omitempty"`
	// CacheReadCostPerToken prices input tokens read from the provider's
	// prompt cache; CacheWriteCostPerToken those written to it (5-minute
	// lifetime where the provider has several).
	CacheReadCostPerToken  float64 `json:"cache_read_cost_per_token,omitempty"`
	CacheWriteCostPerToken float64 `json:"cache_write_cost_per_token,omitempty"`
}

// Catalog maps a provider slug to its models, sorted by id.
type Catalog map[string][]Model

//go:embed data/models.json
var embedded []byte

// builtin is the embedded catalog, decoded on first use. The file is
// generated and checked by this package's tests, so a decode error is a
// build defect.
var builtin = sync.OnceValue(func() Catalog {
	c, err := Decode(embedded)
	if err != nil {
		panic(fmt.Sprintf("catalog: embedded data/models.json: %v", err))
	}
	return c
})

// Models returns the chat and embedding models of provider (a gateway
// provider slug), sorted by id; nil for a provider the catalog does not
// know. The caller may modify the slice.
func Models(provider string) []Model { return slices.Clone(builtin()[provider]) }

// Providers returns the provider slugs the catalog has models for, sorted.
func Providers() []string { return slices.Sorted(maps.Keys(builtin())) }

// Lookup returns provider's model id.
func Lookup(provider, id string) (Model, bool) {
	ms := builtin()[provider]
	i, ok := slices.BinarySearchFunc(ms, id, func(m Model, id string) int { return strings.Compare(m.ID, id) })
	if !ok {
		return Model{}, false
	}
	return ms[i], true
}

// Decode reads a catalog in the form Encode writes, and checks that each
// provider's models are sorted by id without duplicates.
func Decode(b []byte) (Catalog, error) {
	var c Catalog
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	for p, ms := range c {
		for i := 1; i < len(ms); i++ {
			if ms[i-1].ID >= ms[i].ID {
				return nil, fmt.Errorf("provider %s: model %q is out of order or repeated", p, ms[i].ID)
			}
		}
	}
	return c, nil
}

// Encode writes c as JSON with one model per line, so that a regenerated
// file diffs model by model.
func (c Catalog) Encode() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("{")
	for i, p := range slices.Sorted(maps.Keys(c)) {
		if i > 0 {
			b.WriteString(",")
		}
		name, _ := json.Marshal(p)
		fmt.Fprintf(&b, "\n%s: [", name)
		for j, m := range c[p] {
			if j > 0 {
				b.WriteString(",")
			}
			line, err := json.Marshal(m)
			if err != nil {
				return nil, err
			}
			b.WriteString("\n")
			b.Write(line)
		}
		b.WriteString("\n]")
	}
	b.WriteString("\n}\n")
	return b.Bytes(), nil
}
