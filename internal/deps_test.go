// Package internal_test enforces the import direction of DESIGN.md:
// cmd -> app -> {gateway, admin} -> {routing, auth, reqlog, provider, ...}
// -> {llm, sse, httpx}. Each internal package lists the internal packages
// it may import; a new package must add itself here, which is the moment to
// decide where it sits.
package internal_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/ai-gateway/gateway/"

// allowed maps a package (relative to the module) to the internal packages
// its non-test files may import. "*" allows any internal package.
var allowed = map[string][]string{
	"internal/httpx":   {},
	"internal/llm":     {},
	"internal/sse":     {},
	"internal/secret":  {},
	"internal/metrics": {},
	"internal/config":  {},
	// The control plane's records: tenancy (organisations, workspaces,
	// users, members, invites) and audit (records, secret masking).
	"internal/tenancy": {},
	"internal/audit":   {},
	// The model catalog (generated from litellm's price table) and its generator.
	"internal/catalog":     {},
	"internal/catalog/gen": {"internal/catalog"},
	// Integrations, providers, deployments and MCP records.
	"internal/registry": {},
	// Rate limits, in process or in Redis.
	"internal/limits": {"internal/httpx"},
	// MCP: metadata sync with the official SDK.
	"internal/mcp": {"internal/registry"},
	// Single sign-on (OIDC) and console sessions.
	"internal/sso": {"internal/auth", "internal/audit", "internal/httpx", "internal/tenancy"},

	"internal/provider":              {"internal/llm"},
	"internal/provider/openai":       {"internal/provider", "internal/llm", "internal/sse"},
	"internal/provider/providertest": {},
	"internal/provider/anthropic":    {"internal/provider", "internal/llm", "internal/sse"},
	"internal/provider/google":       {"internal/provider", "internal/llm", "internal/sse"},
	"internal/provider/bedrock":      {"internal/provider", "internal/llm", "internal/sse"},
	"internal/provider/cohere":       {"internal/provider", "internal/llm", "internal/sse"},

	// routing owns configs and plans; it does not call providers.
	"internal/routing": {"internal/httpx"},
	"internal/auth":    {"internal/httpx", "internal/secret", "internal/registry"},
	"internal/reqlog":  {"internal/llm", "internal/httpx"},

	// The data plane never imports the control plane or the store.
	"internal/gateway": {"internal/auth", "internal/limits", "internal/registry", "internal/catalog", "internal/httpx", "internal/llm", "internal/metrics", "internal/provider", "internal/reqlog", "internal/routing", "internal/sse"},
	// The control plane never imports the data plane or provider adapters.
	// It validates saved configs with routing (no provider call there).
	"internal/admin": {"internal/auth", "internal/limits", "internal/registry", "internal/audit", "internal/httpx", "internal/reqlog", "internal/routing", "internal/secret", "internal/tenancy"},
	// The store implements interfaces of the packages above it.
	"internal/store": {"internal/auth", "internal/registry", "internal/audit", "internal/reqlog", "internal/routing", "internal/httpx", "internal/llm", "internal/tenancy"},

	"internal/app":      {"*"},
	"internal/loadtest": {"internal/app", "internal/config", "internal/provider/providertest"},
	"cmd/gateway":       {"internal/app", "internal/config", "internal/store"},
	"cmd/loadtest":      {"internal/app", "internal/config", "internal/loadtest", "internal/provider/providertest"},
}

func TestImportDirection(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string]map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") || name == "data" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if imports[rel] == nil {
			imports[rel] = map[string]bool{}
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if dep, ok := strings.CutPrefix(p, module); ok {
				imports[rel][dep] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < 10 {
		t.Fatalf("found only %d packages under %s", len(imports), root)
	}
	for pkg, deps := range imports {
		allow, known := allowed[pkg]
		if !known {
			t.Errorf("package %s is not in the layering table of internal/deps_test.go: decide what it may import and add it", pkg)
			continue
		}
		if slices.Contains(allow, "*") {
			for dep := range deps {
				if strings.HasPrefix(dep, "cmd/") {
					t.Errorf("%s imports %s: nothing imports a command", pkg, dep)
				}
			}
			continue
		}
		for dep := range deps {
			if !slices.Contains(allow, dep) {
				t.Errorf("%s imports %s, which breaks the import direction (allowed: %v)", pkg, dep, allow)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Errorf("module root not found: %v", err)
	}
}
