package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/ai-gateway/gateway/internal/admin"
	"github.com/ai-gateway/gateway/internal/auth"
	"github.com/ai-gateway/gateway/internal/gateway"
	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/limits"
	"github.com/ai-gateway/gateway/internal/registry"
	"github.com/ai-gateway/gateway/internal/reqlog"
	"github.com/ai-gateway/gateway/internal/secret"
)

// deploymentSource reads deployments; the store satisfies it.
type deploymentSource interface {
	Deployment(ctx context.Context, organisationID, slugOrID string) (*registry.Deployment, error)
}

// deployment is the gateway deployment this process serves (--deployment,
// API.md §6 "Deployments"): its data plane admits only the deployment's
// workspaces, routes requests that name no routing with its config, and
// counts every request (and the tokens of every answer) against its rate
// limits. The copy in use is replaced by a periodic reload, so changes
// made on the control plane reach the process within one reload interval.
//
// Every method is safe on a nil *deployment, which stands for a process
// serving no deployment.
type deployment struct {
	src     deploymentSource
	orgID   string
	box     *secret.Box
	limiter limits.Limiter
	log     *slog.Logger
	cur     atomic.Pointer[deploymentState]
}

// deploymentState is one loaded copy of the deployment, with what the
// data plane derives from it.
type deploymentState struct {
	d *registry.Deployment
	// config is what gateway.Options.DeploymentConfig returns: the saved
	// config's slug, the inline config's JSON, or "".
	config string
	rules  []limits.Rule
	// key names the deployment's counters in the limiter.
	key string
	// tokens reports whether a rule counts tokens.
	tokens bool
}

// openDeployment loads the deployment named by slug (nil when slug is
// empty). An unknown slug is an error: a process must not serve something
// other than what it was started for.
func openDeployment(ctx context.Context, src deploymentSource, orgID, slug string, box *secret.Box, limiter limits.Limiter, log *slog.Logger) (*deployment, error) {
	if slug == "" {
		return nil, nil
	}
	d := &deployment{src: src, orgID: orgID, box: box, limiter: limiter, log: log}
	st, err := d.load(ctx, slug)
	if err != nil {
		return nil, fmt.Errorf("deployment %q (--deployment / GATEWAY_DEPLOYMENT): %w", slug, err)
	}
	d.cur.Store(st)
	log.Info("serving deployment", "deployment", st.d.Slug, "id", st.d.ID, "type", st.d.Type, "workspaces", len(st.d.WorkspaceIDs))
	return d, nil
}

// load reads the deployment named by slugOrID and derives its state.
func (d *deployment) load(ctx context.Context, slugOrID string) (*deploymentState, error) {
	dep, err := d.src.Deployment(ctx, d.orgID, slugOrID)
	if err != nil {
		return nil, err
	}
	st := &deploymentState{d: dep, config: dep.ConfigRef, key: "deployment:" + dep.ID}
	if dep.Config != nil {
		plain, err := admin.OpenDeploymentConfig(d.box, dep)
		if err != nil {
			return nil, err
		}
		st.config = string(plain)
	}
	if len(dep.Limits.RateLimits) > 0 {
		if err := json.Unmarshal(dep.Limits.RateLimits, &st.rules); err != nil {
			return nil, fmt.Errorf("rate_limits: %w", err)
		}
	}
	for _, r := range st.rules {
		st.tokens = st.tokens || r.Type == limits.TypeTokens
	}
	return st, nil
}

// refresh reloads the deployment every interval until ctx ends. It reloads
// by id, so a renamed slug keeps being served; when a reload fails (the
// database is down, the deployment was deleted) the last good copy stays
// in use.
func (d *deployment) refresh(ctx context.Context, every time.Duration) {
	if d == nil {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		id := d.cur.Load().d.ID
		st, err := d.load(ctx, id)
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("reloading the deployment failed; serving the last copy loaded", "deployment", id, "err", err)
			}
			continue
		}
		d.cur.Store(st)
	}
}

// gate is the data-plane middleware, after authentication: a principal
// whose workspace the deployment does not serve is refused (403
// workspace_not_in_deployment), then the request counts against the
// deployment's rate limits (429 past them).
func (d *deployment) gate(next http.Handler) http.Handler {
	if d == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := d.cur.Load()
		p := auth.PrincipalFrom(r.Context())
		if p == nil || p.OrganisationID != st.d.OrganisationID || !st.d.Serves(p.WorkspaceID) {
			httpx.WriteError(w, httpx.Forbidden("workspace_not_in_deployment",
				fmt.Sprintf("this gateway serves deployment %q, which does not include this API key's workspace", st.d.Slug)))
			return
		}
		if len(st.rules) > 0 {
			dec, err := d.limiter.Allow(r.Context(), limits.Counter{Key: st.key, Rules: st.rules})
			switch {
			case err != nil:
				// Failing open: an unreachable limiter must not stop
				// the data plane.
				d.log.Warn("deployment rate limit unavailable; request admitted", "deployment", st.d.Slug, "err", err)
			case !dec.Allowed:
				he := limits.TooMany(dec)
				he.Message = "deployment " + st.d.Slug + ": " + he.Message
				httpx.WriteError(w, he)
				return
			}
			// An admitted request carries no x-ratelimit-* headers of the
			// deployment: the provider's own, which the data plane passes
			// on, have the same names.
		}
		next.ServeHTTP(w, r)
	})
}

// configFunc is gateway.Options.DeploymentConfig: nil without a deployment.
func (d *deployment) configFunc() func(*auth.Principal) string {
	if d == nil {
		return nil
	}
	return func(*auth.Principal) string { return d.cur.Load().config }
}

// logs wraps the data plane's log queue so that the tokens of every
// answered request count against the deployment's tokens rules: each
// record is enqueued after its response, with the usage the gateway
// measured for every provider and for streams alike. Every request of this
// process belongs to the deployment (gate admits no other).
func (d *deployment) logs(q gateway.LogQueue) gateway.LogQueue {
	if d == nil {
		return q
	}
	return deploymentLogs{LogQueue: q, d: d}
}

type deploymentLogs struct {
	gateway.LogQueue
	d *deployment
}

// Enqueue counts rec's tokens, then enqueues it.
func (q deploymentLogs) Enqueue(rec *reqlog.Record) error {
	st := q.d.cur.Load()
	if n := int64(rec.Usage.TotalTokens); st.tokens && n > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if err := q.d.limiter.AddTokens(ctx, n, limits.Counter{Key: st.key, Rules: st.rules}); err != nil {
			q.d.log.Warn("counting tokens against the deployment's limits failed", "deployment", st.d.Slug, "err", err)
		}
		cancel()
	}
	return q.LogQueue.Enqueue(rec)
}
