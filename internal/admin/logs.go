package admin

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/reqlog"
)

// logView is a record as GET /v1/logs returns it.
type logView struct {
	Object string `json:"object"`
	*reqlog.Record
}

func (a *API) listLogs(w http.ResponseWriter, r *http.Request) error {
	f, err := logFilter(r, actorFrom(r))
	if err != nil {
		return err
	}
	// LOG_RETENTION_DISPLAY: older records are not shown, whatever the
	// filter asks.
	if oldest := a.oldestShownLog(); !oldest.IsZero() && f.From.Before(oldest) {
		f.From = oldest
	}
	recs, total, err := a.d.Logs.ListLogs(r.Context(), f)
	if err != nil {
		return err
	}
	out := list[logView]{Object: "list", Total: total, Data: make([]logView, 0, len(recs))}
	for _, rec := range recs {
		out.Data = append(out.Data, logView{Object: "log", Record: rec})
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// logFilter reads GET /v1/logs filters: start_time and end_time (RFC 3339
// or Unix seconds), trace_id, status_code, provider, model, metadata (a
// JSON object of strings), workspace_id or x-gateway-workspace
// (organisation keys; a workspace key sees only its own), and paging.
func logFilter(r *http.Request, act *actor) (reqlog.Filter, error) {
	p := act.p
	q := r.URL.Query()
	f := reqlog.Filter{OrganisationID: p.OrganisationID, TraceID: q.Get("trace_id"), Provider: q.Get("provider"), Model: q.Get("model")}
	var err error
	if f.Page, f.PageSize, err = page(r); err != nil {
		return f, err
	}
	for _, tf := range []struct {
		names []string
		dst   *time.Time
	}{{[]string{"start_time", "time_of_generation_min"}, &f.From}, {[]string{"end_time", "time_of_generation_max"}, &f.To}} {
		for _, name := range tf.names {
			if v := q.Get(name); v != "" {
				t, err := parseTime(v)
				if err != nil {
					return f, httpx.BadRequest("invalid_value", name, "%s: must be an RFC 3339 time or Unix seconds", name)
				}
				*tf.dst = t
			}
		}
	}
	if v := q.Get("status_code"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 || n > 999 {
			return f, httpx.BadRequest("invalid_value", "status_code", "status_code: must be an HTTP status")
		}
		f.StatusCode = n
	}
	if v := q.Get("metadata"); v != "" {
		if err := json.Unmarshal([]byte(v), &f.Metadata); err != nil {
			return f, httpx.BadRequest("invalid_value", "metadata", "metadata: must be a JSON object of strings")
		}
	}
	f.WorkspaceID = act.listWorkspace()
	return f, nil
}

// oldestShownLog is the earliest creation time of a log that GET /v1/logs
// shows (SPEC.md LOG_RETENTION_DISPLAY, default 90 days); zero for no bound.
func (a *API) oldestShownLog() time.Time {
	if a.d.LogRetention <= 0 {
		return time.Time{}
	}
	return a.now().Add(-a.d.LogRetention)
}

func parseTime(v string) (time.Time, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Unix(n, 0).UTC(), nil
	}
	return time.Parse(time.RFC3339Nano, v)
}

func (a *API) getLog(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	rec, err := a.d.Logs.Log(r.Context(), p.OrganisationID, r.PathValue("id"))
	if err != nil {
		return err
	}
	if !p.IsOrganisationKey() && rec.WorkspaceID != p.WorkspaceID {
		return httpx.NotFound("log " + r.PathValue("id") + " not found")
	}
	if oldest := a.oldestShownLog(); !oldest.IsZero() && rec.CreatedAt.Before(oldest) {
		return httpx.NotFound("log " + r.PathValue("id") + " is older than this deployment shows (LOG_RETENTION_DISPLAY)")
	}
	httpx.WriteJSON(w, http.StatusOK, logView{Object: "log", Record: rec})
	return nil
}

// maxInsertLogs bounds one POST /v1/logs call.
const maxInsertLogs = 1000

// insertLogs stores records produced outside the gateway (POST /v1/logs):
// one record object or an array of them, in the record shape of GET.
func (a *API) insertLogs(w http.ResponseWriter, r *http.Request) error {
	p := principal(r)
	body, err := httpx.ReadBody(w, r, 32<<20)
	if err != nil {
		return err
	}
	var recs []*reqlog.Record
	if trimmed := strings.TrimSpace(string(body)); strings.HasPrefix(trimmed, "[") {
		err = httpx.DecodeStrict(body, &recs)
	} else {
		rec := new(reqlog.Record)
		err = httpx.DecodeStrict(body, rec)
		recs = []*reqlog.Record{rec}
	}
	if err != nil {
		return err
	}
	if len(recs) == 0 || len(recs) > maxInsertLogs {
		return httpx.BadRequest("invalid_value", "", "between 1 and %d records per call", maxInsertLogs)
	}
	now := time.Now().UTC()
	for i, rec := range recs {
		if rec == nil {
			return httpx.BadRequest("invalid_type", "["+strconv.Itoa(i)+"]", "[%d]: must be a record object", i)
		}
		if rec.ID == "" {
			rec.ID = uuid.Must(uuid.NewV7()).String()
		} else if _, err := uuid.Parse(rec.ID); err != nil {
			return httpx.BadRequest("invalid_value", "["+strconv.Itoa(i)+"].id", "[%d].id: must be a UUID", i)
		}
		if rec.TraceID == "" {
			rec.TraceID = rec.ID
		}
		if rec.CreatedAt.IsZero() {
			rec.CreatedAt = now
		}
		if rec.Method == "" {
			rec.Method = http.MethodPost
		}
		rec.OrganisationID = p.OrganisationID
		if !p.IsOrganisationKey() || rec.WorkspaceID == "" {
			rec.WorkspaceID = p.WorkspaceID
		}
		rec.APIKeyID = p.APIKeyID
		if rec.Usage.TotalTokens == 0 {
			rec.Usage.TotalTokens = rec.Usage.PromptTokens + rec.Usage.CompletionTokens
		}
	}
	if err := a.d.Logs.InsertLogs(r.Context(), recs); err != nil {
		return err
	}
	out := list[logView]{Object: "list", Total: len(recs)}
	for _, rec := range recs {
		out.Data = append(out.Data, logView{Object: "log", Record: rec})
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}
