// Command gen regenerates the embedded model catalog (../data/models.json)
// from litellm's price table:
//
//	go generate ./internal/catalog
//	go run ./internal/catalog/gen -src path/to/model_prices_and_context_window.json -out internal/catalog/data/models.json
//
// The default source is the vendored copy in ../shared/data/pricing (see
// its README for the upstream commit). Refresh data/README.md's source
// line when the source changes.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ai-gateway/gateway/internal/catalog"
)

func main() {
	src := flag.String("src", "../../../shared/data/pricing/litellm/model_prices_and_context_window.json", "litellm price table")
	out := flag.String("out", "data/models.json", "catalog file to write")
	flag.Parse()
	if err := run(*src, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(src, out string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	c, err := catalog.FromLiteLLM(b)
	if err != nil {
		return err
	}
	enc, err := c.Encode()
	if err != nil {
		return err
	}
	n := 0
	for _, ms := range c {
		n += len(ms)
	}
	fmt.Fprintf(os.Stderr, "gen: %d providers, %d models, %d bytes\n", len(c), n, len(enc))
	return os.WriteFile(out, enc, 0o644)
}
