package admin

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ai-gateway/gateway/internal/audit"
	"github.com/ai-gateway/gateway/internal/httpx"
)

// auditView is an audit record as GET /v1/audit-logs answers (API.md §2
// "Records").
type auditView struct {
	Object string `json:"object"`
	*audit.Record
}

// listAuditLogs lists the audit log, newest first. Filters (all optional):
// start_time and end_time (RFC 3339 or Unix seconds), method, actor_id
// (also as user), actor_type, resource_type, resource_id, action,
// status_code (or status), workspace_id (or x-gateway-workspace); and
// current_page, page_size.
func (a *API) listAuditLogs(w http.ResponseWriter, r *http.Request) error {
	act := actorFrom(r)
	q := r.URL.Query()
	f := audit.Filter{
		OrganisationID: act.p.OrganisationID, Method: strings.ToUpper(q.Get("method")), ActorType: q.Get("actor_type"),
		ActorID: q.Get("actor_id"), ResourceType: q.Get("resource_type"), ResourceID: q.Get("resource_id"),
		Action: q.Get("action"), WorkspaceID: act.listWorkspace(),
	}
	if f.ActorID == "" {
		f.ActorID = q.Get("user")
	}
	var err error
	if f.Page, f.PageSize, err = page(r); err != nil {
		return err
	}
	for _, tf := range []struct {
		names []string
		dst   *time.Time
	}{{[]string{"start_time", "time_of_generation_min"}, &f.From}, {[]string{"end_time", "time_of_generation_max"}, &f.To}} {
		for _, name := range tf.names {
			if v := q.Get(name); v != "" {
				t, err := parseTime(v)
				if err != nil {
					return httpx.BadRequest("invalid_value", name, "%s: must be an RFC 3339 time or Unix seconds", name)
				}
				*tf.dst = t
			}
		}
	}
	for _, name := range []string{"status_code", "status"} {
		if v := q.Get(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 100 || n > 999 {
				return httpx.BadRequest("invalid_value", name, "%s: must be an HTTP status", name)
			}
			f.StatusCode = n
		}
	}
	if f.ActorType != "" && f.ActorType != audit.ActorUser && f.ActorType != audit.ActorAPIKey {
		return httpx.BadRequest("invalid_value", "actor_type", "actor_type: must be user or api_key")
	}
	recs, total, err := a.d.Audit.ListAuditRecords(r.Context(), f)
	if err != nil {
		return err
	}
	out := list[auditView]{Object: "list", Total: total, Data: make([]auditView, 0, len(recs))}
	for _, rec := range recs {
		out.Data = append(out.Data, auditView{Object: "audit-log", Record: rec})
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}
