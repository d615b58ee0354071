package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/ai-gateway/gateway/internal/audit"
	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/tenancy"
)

// Authenticator resolves x-gateway-api-key to a principal and drops its
// cache after a key changes.
type Authenticator interface {
	Authenticate(ctx context.Context, raw string) (*auth.Principal, error)
	Invalidate()
}

// AuditStore keeps the audit log.
type AuditStore interface {
	InsertAuditRecord(ctx context.Context, r *audit.Record) error
	ListAuditRecords(ctx context.Context, f audit.Filter) ([]*audit.Record, int, error)
}

// HeaderWorkspace names the workspace an organisation key acts in (API.md
// §2), by id or slug.
const HeaderWorkspace = "x-gateway-workspace"

// maxControlBody bounds a control-plane request body; POST /v1/logs takes
// the largest.
const maxControlBody = 32 << 20

// maxUnauthenticatedBody bounds what is read, for the audit log, of the
// body of a request whose key failed.
const maxUnauthenticatedBody = 64 << 10

// actor is who a control-plane request acts as, once authenticated and
// authorised: the principal (a copy, with the workspace the request names),
// its effective role, and what the audit log should say.
type actor struct {
	p    *auth.Principal
	role role
	// orgAdmin: the key is an organisation service key, or its user is an
	// owner or admin, who always see analytics (SPEC.md).
	orgAdmin bool
	// named: the request named its workspace (header, query or body), so a
	// list by an organisation key narrows to it.
	named bool
	rule  rule
	note  *auditNote
}

// auditNote lets a handler tell the audit log what it acted on.
type auditNote struct {
	resourceID  string
	workspaceID string
}

type actorKey struct{}

// actorFrom returns the request's actor; control-plane handlers always
// have one.
func actorFrom(r *http.Request) *actor {
	a, _ := r.Context().Value(actorKey{}).(*actor)
	return a
}

// noteResource records the id of the resource a write acted on, and its
// workspace when the handler knows better than the request.
func noteResource(r *http.Request, id, workspaceID string) {
	if a := actorFrom(r); a != nil {
		a.note.resourceID = id
		if workspaceID != "" {
			a.note.workspaceID = workspaceID
		}
	}
}

// listWorkspace is the workspace a list narrows to: a workspace key's own,
// the one an organisation key named, or "" for every workspace.
func (act *actor) listWorkspace() string {
	if !act.p.IsOrganisationKey() || act.named {
		return act.p.WorkspaceID
	}
	return ""
}

// sees reports whether the actor may see a resource of workspaceID: an
// organisation key sees every workspace, a workspace key only its own.
func (act *actor) sees(workspaceID string) bool {
	return act.p.IsOrganisationKey() || workspaceID == act.p.WorkspaceID
}

// control is the one wrapper around every control-plane handler: it
// authenticates, resolves the workspace, applies the RBAC table to the
// route, and writes the audit record of every write and of every
// authentication failure.
func (a *API) control(inner *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := a.now()
		_, pattern := inner.Handler(r)
		if pattern == "/v1/" {
			pattern = "" // the catch-all 404: judge by the path
		}
		rl := ruleFor(r.Method, pattern, r.URL.Path)
		write := isWrite(r.Method)
		rec := &capture{Recorder: httpx.NewRecorder(w), keep: write && r.Method == http.MethodPost}

		if err := a.featureGate(r, rl); err != nil {
			httpx.WriteError(rec, err)
			return
		}
		p, err := a.d.Authenticator.Authenticate(r.Context(), auth.CredentialFrom(r))
		if err == nil {
			err = a.apiAccessGate(p)
		}
		if err != nil {
			if a.d.OnAuthFail != nil {
				a.d.OnAuthFail()
			}
			body, _ := io.ReadAll(io.LimitReader(r.Body, maxUnauthenticatedBody))
			he := httpx.WriteError(rec, err)
			a.record(r, start, rl, nil, &auditNote{}, he.Status, body)
			return
		}
		act := &actor{p: p, rule: rl, note: &auditNote{}}
		var body []byte
		if write {
			body, err = httpx.ReadBody(w, r, maxControlBody)
			if err == nil {
				r.Body = io.NopCloser(bytes.NewReader(body))
			}
		}
		if err == nil {
			err = a.authorize(r, act, body)
		}
		if err == nil && write {
			err = a.usageLimitsGate(body)
		}
		if err != nil {
			he := httpx.WriteError(rec, err)
			if he.Status >= 500 && he.Err != nil {
				a.d.Logger.Error("control-plane request failed", "path", r.URL.Path, "err", he.Err)
			}
			if write {
				a.record(r, start, rl, act, act.note, he.Status, body)
			}
			return
		}
		ctx := context.WithValue(auth.WithPrincipal(r.Context(), act.p), actorKey{}, act)
		inner.ServeHTTP(rec, r.WithContext(ctx))
		if write {
			if act.note.resourceID == "" {
				act.note.resourceID = resourceID(pattern, r.URL.Path, rec)
			}
			a.record(r, start, rl, act, act.note, rec.Status(), body)
		}
	})
}

func isWrite(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// authorize resolves the workspace the request acts in and the actor's
// effective role, then applies the route's rule: the key kind and role the
// scope admits (RBAC table) and the scope itself.
func (a *API) authorize(r *http.Request, act *actor, body []byte) error {
	p := act.p
	ctx := r.Context()
	named := r.Header.Get(HeaderWorkspace)
	if named == "" {
		named = r.URL.Query().Get("workspace_id")
	}
	if trimmed := bytes.TrimSpace(body); named == "" && len(trimmed) > 0 && trimmed[0] == '{' {
		var b struct {
			WorkspaceID any `json:"workspace_id"`
		}
		if json.Unmarshal(body, &b) == nil {
			if s, ok := b.WorkspaceID.(string); ok {
				named = s
			}
		}
	}
	cp := *p
	act.p = &cp
	if named != "" {
		ws, err := a.d.Tenancy.Workspace(ctx, p.OrganisationID, named)
		if errors.Is(err, httpx.ErrNotFound) || (err == nil && !p.IsOrganisationKey() && ws.ID != p.WorkspaceID) {
			// A workspace key never learns that another workspace exists.
			return httpx.NotFound("workspace " + quote(named) + " not found")
		}
		if err != nil {
			return err
		}
		act.p.WorkspaceID, act.named = ws.ID, true
	}
	var err error
	act.role, act.orgAdmin, err = a.effectiveRole(ctx, act.p)
	if err != nil {
		return err
	}
	rl := act.rule
	if rl.scope == "" {
		return nil
	}
	if !allows(rl.scope, kindOf(p), act.role) {
		return httpx.Forbidden("role_not_allowed", forbiddenMessage(rl, p, act.role))
	}
	if err := p.Require(rl.scope); err != nil {
		return err
	}
	if rl.scope == auth.ScopeAnalyticsView {
		return a.checkAnalytics(ctx, act)
	}
	return nil
}

func forbiddenMessage(rl rule, p *auth.Principal, r role) string {
	kind := "a workspace API key"
	if p.IsOrganisationKey() {
		kind = "an organisation (admin) API key"
	}
	if r == roleNone {
		return "this API key's user no longer holds the role the key needs"
	}
	return rl.action + " is not allowed with " + kind + " acting as " + r.String()
}

// effectiveRole is the role p acts with now (see role).
func (a *API) effectiveRole(ctx context.Context, p *auth.Principal) (role, bool, error) {
	if p.UserID == "" {
		if p.IsOrganisationKey() {
			return roleAdmin, true, nil
		}
		return roleManager, false, nil
	}
	u, err := a.d.Tenancy.User(ctx, p.OrganisationID, p.UserID)
	if errors.Is(err, httpx.ErrNotFound) {
		return roleNone, false, nil
	}
	if err != nil {
		return roleNone, false, err
	}
	admin := tenancy.IsOrgAdmin(u.Role)
	switch {
	case p.IsOrganisationKey() && admin:
		return roleAdmin, true, nil
	case p.IsOrganisationKey():
		return roleNone, false, nil
	case admin:
		return roleManager, true, nil
	}
	m, err := a.d.Tenancy.Member(ctx, p.WorkspaceID, p.UserID)
	if errors.Is(err, httpx.ErrNotFound) {
		return roleNone, false, nil
	}
	if err != nil {
		return roleNone, false, err
	}
	if m.Role == tenancy.WorkspaceRoleManager {
		return roleManager, false, nil
	}
	return roleMember, false, nil
}

// checkAnalytics applies the workspace's membersViewAnalytics and
// managersViewAnalytics to a user key of a member or manager; owners,
// admins and service keys always see analytics (SPEC.md).
func (a *API) checkAnalytics(ctx context.Context, act *actor) error {
	if act.orgAdmin || act.p.UserID == "" {
		return nil
	}
	ws, err := a.d.Tenancy.Workspace(ctx, act.p.OrganisationID, act.p.WorkspaceID)
	if err != nil {
		return err
	}
	org, err := a.d.Tenancy.Organisation(ctx, act.p.OrganisationID)
	if err != nil {
		return err
	}
	members, managers := ws.Settings.Analytics(org.Settings)
	if (act.role == roleManager && !managers) || (act.role == roleMember && !members) {
		return httpx.Forbidden("analytics_not_allowed", "this workspace does not let its "+act.role.String()+"s view analytics")
	}
	return nil
}

// record writes the audit record of a request. Failures are logged: the
// answer has been sent.
func (a *API) record(r *http.Request, start time.Time, rl rule, act *actor, note *auditNote, status int, body []byte) {
	if !a.enabled(FeatureAuditLogs) {
		return
	}
	ids := httpx.IDsFrom(r.Context())
	rec := &audit.Record{
		OrganisationID: a.d.OrganisationID, Timestamp: start.UTC(), ActorType: audit.ActorAPIKey,
		Method: r.Method, URI: r.URL.RequestURI(), Action: rl.action, ResourceType: rl.resource,
		ResourceID: note.resourceID, WorkspaceID: note.workspaceID, StatusCode: status, ClientIP: clientIP(r),
		RequestID: ids.RequestID, RequestBody: audit.MaskBody(body),
	}
	if rec.Action == "" {
		rec.Action = "unknown"
	}
	if act != nil {
		p := act.p
		rec.OrganisationID, rec.APIKeyID, rec.ActorID = p.OrganisationID, p.APIKeyID, p.APIKeyID
		switch {
		case p.UserID != "":
			rec.ActorType, rec.ActorID = audit.ActorUser, p.UserID
		case p.Subject != "":
			// A JWT's service identity: no key and no user to name.
			rec.ActorID = p.Method + ":" + p.Subject
		}
		// Workspace resources are acted on in the request's workspace;
		// organisation resources name theirs through the handler's note.
		if rec.WorkspaceID == "" && !rl.orgLevel && rl.resource != "" {
			rec.WorkspaceID = p.WorkspaceID
		}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	if err := a.d.Audit.InsertAuditRecord(ctx, rec); err != nil {
		a.d.Logger.Error("audit record not stored", "request_id", ids.RequestID, "action", rec.Action, "err", err)
	}
}

// clientIP is the peer's address. Forwarded headers are not trusted: any
// client could set them.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// resourceID names what a write acted on when the handler did not say: the
// last wildcard of the route's pattern, or the id of a created object.
func resourceID(pattern, path string, rec *capture) string {
	if rec.Status() < 300 && len(rec.buf) > 0 {
		var obj struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(rec.buf, &obj) == nil && obj.ID != "" {
			return obj.ID
		}
	}
	_, pat, ok := strings.Cut(pattern, " ")
	if !ok {
		return ""
	}
	ps := strings.Split(strings.Trim(pat, "/"), "/")
	xs := strings.Split(strings.Trim(path, "/"), "/")
	id := ""
	for i, s := range ps {
		if isWildcard(s) && i < len(xs) {
			id = xs[i]
		}
	}
	return id
}

// capture keeps the first bytes of a POST's answer so that the audit log
// can name the object it created. They are never stored: the answer to a
// key's creation holds the raw key.
type capture struct {
	*httpx.Recorder
	keep bool
	buf  []byte
}

const maxCapture = 64 << 10

func (c *capture) Write(p []byte) (int, error) {
	if c.keep && len(c.buf) < maxCapture {
		c.buf = append(c.buf, p[:min(len(p), maxCapture-len(c.buf))]...)
	}
	return c.Recorder.Write(p)
}

// Unwrap returns the wrapped writer for http.ResponseController.
func (c *capture) Unwrap() http.ResponseWriter { return c.Recorder }

func quote(s string) string { return `"` + s + `"` }
