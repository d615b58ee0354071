package admin

import (
	"net/http"
	"slices"
	"strings"

	"github.com/ai-gateway/gateway/internal/auth"
)

// role is the effective role a request acts with, ordered by power. It is
// derived on every control-plane request from the key and, for a user's
// key, from the user's organisation role and workspace membership as they
// are now (see API.effectiveRole), so a demotion takes effect at once.
type role int

const (
	// roleNone may do nothing: a user key whose user lost the role the key
	// needs (an organisation key of a demoted admin, a workspace key of a
	// user no longer in the workspace).
	roleNone role = iota
	// roleMember is SPEC.md's Workspace Member: "limited workspace access".
	roleMember
	// roleManager is SPEC.md's Workspace Manager, and what a workspace
	// service key or an owner's or admin's workspace key acts as.
	roleManager
	// roleAdmin is SPEC.md's Organization Owner or Admin (the two tables
	// give them the same rights), and what an organisation service key
	// (the Admin API key) acts as.
	roleAdmin
)

func (r role) String() string {
	return [...]string{"none", "member", "manager", "admin"}[r]
}

// keyKinds are the kinds of API key an operation admits (SPEC.md's second
// table: Admin key, Workspace key).
type keyKinds uint8

const (
	orgKeys keyKinds = 1 << iota
	wsKeys
	anyKeys = orgKeys | wsKeys
)

func kindOf(p *auth.Principal) keyKinds {
	if p.IsOrganisationKey() {
		return orgKeys
	}
	return wsKeys
}

// access says who may use a scope: which key kinds, from which role up.
// Every control-plane route needs one scope, so this table is the RBAC of
// the whole control plane; it also decides which scopes a new key may hold
// and which it gets when created without any.
type access struct {
	keys keyKinds
	role role
}

// Classes of resource family, after SPEC.md's operation table.
var (
	// Workspace resources ("Create and manage configs / virtual keys: Admin
	// key yes, all workspaces; Workspace key yes, single workspace"):
	// managers write, members read.
	classWorkspace = map[string]access{
		"create": {anyKeys, roleManager}, "update": {anyKeys, roleManager}, "delete": {anyKeys, roleManager},
		"read": {anyKeys, roleMember}, "list": {anyKeys, roleMember},
	}
	// Organisation resources ("Create and manage workspaces: Admin key yes,
	// Workspace key no"): only an admin key writes; a workspace key may
	// read what belongs to its own workspace.
	classOrgWrite = map[string]access{
		"create": {orgKeys, roleAdmin}, "update": {orgKeys, roleAdmin}, "delete": {orgKeys, roleAdmin},
		"read": {anyKeys, roleMember}, "list": {anyKeys, roleMember},
	}
	// Organisation administration ("Manage organization settings", "Manage
	// users and permissions": Admin key yes, Workspace key no).
	classOrgOnly = map[string]access{
		"create": {orgKeys, roleAdmin}, "update": {orgKeys, roleAdmin}, "delete": {orgKeys, roleAdmin},
		"read": {orgKeys, roleAdmin}, "list": {orgKeys, roleAdmin},
	}
	// Workspace members: managing them is "Manage users and permissions"
	// (admin key only); a workspace's manager may see who is in it.
	classMembers = map[string]access{
		"create": {orgKeys, roleAdmin}, "update": {orgKeys, roleAdmin}, "delete": {orgKeys, roleAdmin},
		"read": {anyKeys, roleManager}, "list": {anyKeys, roleManager},
	}
)

// resourceClasses gives each scope resource of API.md §2 its class.
var resourceClasses = map[string]map[string]access{
	"configs":               classWorkspace,
	"virtual_keys":          classWorkspace,
	"api_keys":              classWorkspace, // the handlers add SPEC.md's first table
	"providers":             classWorkspace,
	"prompts":               classWorkspace,
	"guardrails":            classWorkspace,
	"mcp_servers":           classWorkspace,
	"model_pricing":         classWorkspace,
	"workspaces":            classOrgWrite,
	"integrations":          classOrgWrite,
	"mcp_integrations":      classOrgWrite,
	"deployments":           classOrgWrite,
	"policies":              classOrgWrite,
	"workspace_users":       classMembers,
	"organisation_users":    classOrgOnly,
	"invites":               classOrgOnly,
	"organisation_settings": classOrgOnly,
}

// scopeAccess is who may use each scope.
var scopeAccess = func() map[string]access {
	m := map[string]access{
		auth.ScopeCompletionsWrite: {anyKeys, roleMember},
		auth.ScopeMCPInvoke:        {anyKeys, roleMember},
		auth.ScopeLogsList:         {anyKeys, roleMember},
		auth.ScopeLogsView:         {anyKeys, roleMember},
		auth.ScopeLogsExport:       {anyKeys, roleMember},
		auth.ScopeLogsWrite:        {anyKeys, roleManager},
		// "Access analytics: Admin key yes, all workspaces; Workspace key
		// yes, single workspace", further limited by the workspace's
		// membersViewAnalytics and managersViewAnalytics.
		auth.ScopeAnalyticsView: {anyKeys, roleMember},
		// "Create or update feedback: Admin key no; Workspace key yes".
		auth.ScopeFeedbackWrite: {wsKeys, roleMember},
		// The audit log is organisation administration.
		auth.ScopeAuditLogsList: {orgKeys, roleAdmin},
	}
	for res, class := range resourceClasses {
		for verb, acc := range class {
			m[res+"."+verb] = acc
		}
	}
	return m
}()

// allows reports whether a key of kind acting as r may use scope.
func allows(scope string, kind keyKinds, r role) bool {
	acc, ok := scopeAccess[auth.NormalizeScope(scope)]
	return ok && acc.keys&kind != 0 && r >= acc.role && r > roleNone
}

// scopesFor returns, sorted, every scope a key of kind acting as r may
// hold: what a key created without scopes gets.
func scopesFor(kind keyKinds, r role) []string {
	var out []string
	for s := range scopeAccess {
		if allows(s, kind, r) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// rule is what a control-plane route requires, and how the audit log names
// it.
type rule struct {
	// scope is the scope needed ("" for a route without a rule: the JSON
	// 404 of unknown paths).
	scope string
	// action names the operation in the audit log, e.g. "api_keys.rotate".
	action string
	// resource is the audit log's resource type, e.g. "api_key".
	resource string
	// orgLevel marks resources outside any workspace (users, invites,
	// organisation settings, workspaces themselves).
	orgLevel bool
}

// family is a group of routes under one path prefix.
type family struct {
	scopeResource string // "" for the families with scopes of their own
	resource      string
	orgLevel      bool
}

// families maps the first path segment(s) after /v1 to their family.
var families = map[string]family{
	"configs":          {"configs", "config", false},
	"virtual-keys":     {"virtual_keys", "virtual_key", false},
	"api-keys":         {"api_keys", "api_key", false},
	"integrations":     {"integrations", "integration", true},
	"providers":        {"providers", "provider", false},
	"prompts":          {"prompts", "prompt", false},
	"collections":      {"prompts", "prompt_collection", false},
	"labels":           {"prompts", "prompt_label", false},
	"guardrails":       {"guardrails", "guardrail", false},
	"mcp-integrations": {"mcp_integrations", "mcp_integration", true},
	"mcp-servers":      {"mcp_servers", "mcp_server", false},
	"policies":         {"policies", "policy", true},
	"model-configs":    {"model_pricing", "model_pricing", false},
	"deployments":      {"deployments", "deployment", true},
	"logs":             {"", "log", false},
	"audit-logs":       {"", "audit_log", true},
	"feedback":         {"", "feedback", false},
	"analytics":        {"", "analytics", false},

	"admin/workspaces":       {"workspaces", "workspace", true},
	"admin/workspaces/users": {"workspace_users", "workspace_member", false},
	"admin/users":            {"organisation_users", "user", true},
	"admin/users/invites":    {"invites", "invite", true},
	"admin/organisation":     {"organisation_settings", "organisation", true},
}

func isWildcard(seg string) bool { return strings.HasPrefix(seg, "{") }

// ruleFor derives the rule of a request from the pattern that matched it
// (segments such as "{id}" are wildcards) or, for a path no route matches,
// from the path itself, so that a family's rule holds even before its
// routes exist (feedback and analytics answer 403 to a key that may not
// use them, 404 to one that may).
func ruleFor(method, pattern, path string) rule {
	fromPattern := pattern != ""
	p := path
	if fromPattern {
		m, rest, ok := strings.Cut(pattern, " ")
		if !ok {
			// A pattern without a method is a catch-all; judge by the path.
			fromPattern, p = false, path
		} else {
			method, p = m, rest
		}
	}
	segs := strings.Split(strings.Trim(p, "/"), "/")
	if len(segs) < 2 || segs[0] != "v1" {
		return rule{}
	}
	segs = segs[1:]
	var fam family
	var rest []string
	switch {
	case segs[0] == "admin" && len(segs) >= 2 && segs[1] == "workspaces":
		if len(segs) >= 4 && segs[3] == "users" {
			fam, rest = families["admin/workspaces/users"], segs[4:]
		} else {
			fam, rest = families["admin/workspaces"], segs[2:]
		}
	case segs[0] == "admin" && len(segs) >= 2 && segs[1] == "users":
		if len(segs) >= 3 && segs[2] == "invites" {
			fam, rest = families["admin/users/invites"], segs[3:]
		} else {
			fam, rest = families["admin/users"], segs[2:]
		}
	case segs[0] == "admin" && len(segs) >= 2:
		f, ok := families["admin/"+segs[1]]
		if !ok {
			return rule{}
		}
		fam, rest = f, segs[2:]
	default:
		f, ok := families[segs[0]]
		if !ok {
			return rule{}
		}
		fam, rest = f, segs[1:]
	}
	r := rule{resource: fam.resource, orgLevel: fam.orgLevel}
	switch fam.resource {
	case "log":
		switch {
		case len(rest) > 0 && rest[0] == "exports":
			r.scope = auth.ScopeLogsExport
		case method == http.MethodPost:
			r.scope = auth.ScopeLogsWrite
		case len(rest) == 0:
			r.scope = auth.ScopeLogsList
		default:
			r.scope = auth.ScopeLogsView
		}
		r.action = r.scope
		return r
	case "audit_log":
		r.scope, r.action = auth.ScopeAuditLogsList, auth.ScopeAuditLogsList
		return r
	case "feedback":
		r.scope, r.action = auth.ScopeFeedbackWrite, "feedback."+verbOf(method, rest, fromPattern)
		return r
	case "analytics":
		r.scope, r.action = auth.ScopeAnalyticsView, auth.ScopeAnalyticsView
		return r
	}
	verb := verbOf(method, rest, fromPattern)
	r.scope = fam.scopeResource + "." + verb
	r.action = r.scope
	// A POST to a sub-resource of an item (/api-keys/{id}/rotate,
	// /invites/{id}/resend) updates the item; the audit log names it.
	if method == http.MethodPost && len(rest) >= 2 && !isWildcard(rest[len(rest)-1]) && (isWildcard(rest[len(rest)-2]) || !fromPattern) {
		r.action = fam.scopeResource + "." + rest[len(rest)-1]
	}
	return r
}

// readSubresources are sub-resources of an item that describe the item
// itself rather than list things in it: reading them is reading the item
// (GET /mcp-servers/{id}/metadata needs mcp_servers.read).
var readSubresources = map[string]bool{"metadata": true}

// verbOf is the scope verb of a request: list or read for GET, create,
// update or delete for the writes.
func verbOf(method string, rest []string, fromPattern bool) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		if len(rest) == 0 {
			return "list"
		}
		if !fromPattern || isWildcard(rest[len(rest)-1]) || readSubresources[rest[len(rest)-1]] {
			return "read"
		}
		return "list" // e.g. /configs/{slug}/versions
	case http.MethodPut, http.MethodPatch:
		return "update"
	case http.MethodDelete:
		return "delete"
	}
	if len(rest) >= 2 && !isWildcard(rest[len(rest)-1]) {
		return "update"
	}
	return "create"
}
