package admin

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ai-gateway/gateway/internal/httpx"
	"github.com/ai-gateway/gateway/internal/tenancy"
)

func itoa(i int) string { return strconv.Itoa(i) }

type userView struct {
	Object string `json:"object"`
	*tenancy.User
}

func viewUser(u *tenancy.User) userView { return userView{Object: "user", User: u} }

// listUsers lists the organisation's users, filtered by ?role= and ?email=.
func (a *API) listUsers(w http.ResponseWriter, r *http.Request) error {
	act := actorFrom(r)
	pg, size, err := page(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := tenancy.UserFilter{Role: q.Get("role"), Email: strings.ToLower(q.Get("email"))}
	if f.Role != "" && !tenancy.ValidRole(f.Role) {
		return httpx.BadRequest("invalid_value", "role", "role: must be owner, admin or member")
	}
	users, total, err := a.d.Tenancy.ListUsers(r.Context(), act.p.OrganisationID, f, pg, size)
	if err != nil {
		return err
	}
	return writeList(w, total, users, viewUser)
}

func (a *API) getUser(w http.ResponseWriter, r *http.Request) error {
	u, err := a.d.Tenancy.User(r.Context(), actorFrom(r).p.OrganisationID, r.PathValue("id"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, viewUser(u))
	return nil
}

// updateUser changes a user's organisation role. Owners and admins have
// the same rights (SPEC.md), so an admin may make owners; the store keeps
// at least one owner.
func (a *API) updateUser(w http.ResponseWriter, r *http.Request) error {
	act := actorFrom(r)
	var in struct {
		Role string `json:"role"`
	}
	if err := decodeBody(w, r, &in); err != nil {
		return err
	}
	if !tenancy.ValidRole(in.Role) {
		return httpx.BadRequest("invalid_value", "role", "role: must be owner, admin or member, got %q", in.Role)
	}
	u, err := a.d.Tenancy.UpdateUserRole(r.Context(), act.p.OrganisationID, r.PathValue("id"), in.Role)
	if err != nil {
		return err
	}
	noteResource(r, u.ID, "")
	httpx.WriteJSON(w, http.StatusOK, viewUser(u))
	return nil
}

// deleteUser removes a user with their memberships and API keys.
func (a *API) deleteUser(w http.ResponseWriter, r *http.Request) error {
	act := actorFrom(r)
	u, err := a.d.Tenancy.DeleteUser(r.Context(), act.p.OrganisationID, r.PathValue("id"))
	if err != nil {
		return err
	}
	a.d.Authenticator.Invalidate()
	noteResource(r, u.ID, "")
	httpx.WriteJSON(w, http.StatusOK, deleted{ID: u.ID, Object: "user", Deleted: true})
	return nil
}

// inviteValidity is how long an invite (or a resent one) stays pending by
// default, and the longest a caller may ask for.
const (
	inviteValidity    = 7 * 24 * time.Hour
	maxInviteValidity = 30
)

type inviteView struct {
	Object string `json:"object"`
	*tenancy.Invite
}

func (a *API) viewInvite(i *tenancy.Invite) inviteView {
	cp := *i
	cp.Status = i.EffectiveStatus(a.now())
	return inviteView{Object: "invite", Invite: &cp}
}

// createInvite invites someone by email with an organisation role and
// workspace roles: {"email", "role", "workspaces": [{"id", "role"}],
// "expires_in_days"}. Workspaces may be named by id or slug.
func (a *API) createInvite(w http.ResponseWriter, r *http.Request) error {
	act := actorFrom(r)
	var in struct {
		Email         string                    `json:"email"`
		Role          string                    `json:"role"`
		Workspaces    []tenancy.InviteWorkspace `json:"workspaces"`
		ExpiresInDays *int                      `json:"expires_in_days"`
	}
	if err := decodeBody(w, r, &in); err != nil {
		return err
	}
	email := strings.ToLower(strings.TrimSpace(in.Email))
	if email == "" {
		return httpx.BadRequest("missing_required", "email", "email: is required")
	}
	if err := validEmail(email); err != nil {
		return httpx.BadRequest("invalid_value", "email", "email: %v", err)
	}
	if in.Role == "" {
		in.Role = tenancy.RoleMember
	}
	if !tenancy.ValidRole(in.Role) {
		return httpx.BadRequest("invalid_value", "role", "role: must be owner, admin or member, got %q", in.Role)
	}
	validity := inviteValidity
	if d := in.ExpiresInDays; d != nil {
		if *d < 1 || *d > maxInviteValidity {
			return httpx.BadRequest("invalid_value", "expires_in_days", "expires_in_days: must be between 1 and %d", maxInviteValidity)
		}
		validity = time.Duration(*d) * 24 * time.Hour
	}
	seen := map[string]bool{}
	for i, iw := range in.Workspaces {
		param := "workspaces[" + itoa(i) + "]"
		ws, err := a.d.Tenancy.Workspace(r.Context(), act.p.OrganisationID, iw.ID)
		if err != nil {
			return httpx.BadRequest("invalid_value", param+".id", "%s.id: no workspace %q", param, iw.ID)
		}
		if !tenancy.ValidWorkspaceRole(iw.Role) {
			return httpx.BadRequest("invalid_value", param+".role", "%s.role: must be manager or member, got %q", param, iw.Role)
		}
		if seen[ws.ID] {
			return httpx.BadRequest("invalid_value", param+".id", "%s.id: workspace %q is listed twice", param, iw.ID)
		}
		seen[ws.ID] = true
		in.Workspaces[i].ID = ws.ID
	}
	inv := &tenancy.Invite{
		OrganisationID: act.p.OrganisationID, Email: email, Role: in.Role, Workspaces: in.Workspaces,
		InvitedBy: actorID(act), ExpiresAt: a.now().Add(validity).UTC().Truncate(time.Microsecond),
	}
	if err := a.d.Tenancy.CreateInvite(r.Context(), inv); err != nil {
		return err
	}
	noteResource(r, inv.ID, "")
	httpx.WriteJSON(w, http.StatusOK, a.viewInvite(inv))
	return nil
}

// actorID names who acts: the key's user, else the key.
func actorID(act *actor) string {
	if act.p.UserID != "" {
		return act.p.UserID
	}
	return act.p.APIKeyID
}

// listInvites lists invites, filtered by ?status= and ?email=.
func (a *API) listInvites(w http.ResponseWriter, r *http.Request) error {
	act := actorFrom(r)
	pg, size, err := page(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := tenancy.InviteFilter{Status: q.Get("status"), Email: strings.ToLower(q.Get("email"))}
	switch f.Status {
	case "", tenancy.InvitePending, tenancy.InviteAccepted, tenancy.InviteExpired, tenancy.InviteCancelled:
	default:
		return httpx.BadRequest("invalid_value", "status", "status: must be pending, accepted, expired or cancelled")
	}
	invs, total, err := a.d.Tenancy.ListInvites(r.Context(), act.p.OrganisationID, f, a.now(), pg, size)
	if err != nil {
		return err
	}
	return writeList(w, total, invs, a.viewInvite)
}

func (a *API) getInvite(w http.ResponseWriter, r *http.Request) error {
	i, err := a.d.Tenancy.Invite(r.Context(), actorFrom(r).p.OrganisationID, r.PathValue("id"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, a.viewInvite(i))
	return nil
}

// deleteInvite withdraws an invite: a pending one (expired or not) is
// cancelled and stays listed with that status, so the history shows it;
// an accepted or cancelled one is removed.
func (a *API) deleteInvite(w http.ResponseWriter, r *http.Request) error {
	act := actorFrom(r)
	i, err := a.d.Tenancy.Invite(r.Context(), act.p.OrganisationID, r.PathValue("id"))
	if err != nil {
		return err
	}
	if i.Status == tenancy.InvitePending {
		_, err = a.d.Tenancy.CancelInvite(r.Context(), act.p.OrganisationID, i.ID)
	} else {
		_, err = a.d.Tenancy.DeleteInvite(r.Context(), act.p.OrganisationID, i.ID)
	}
	if err != nil {
		return err
	}
	noteResource(r, i.ID, "")
	httpx.WriteJSON(w, http.StatusOK, deleted{ID: i.ID, Object: "invite", Deleted: true})
	return nil
}

// resendInvite makes a pending or expired invite pending for another
// validity period. No mail is sent: the gateway has no mailer yet.
func (a *API) resendInvite(w http.ResponseWriter, r *http.Request) error {
	act := actorFrom(r)
	i, err := a.d.Tenancy.ResendInvite(r.Context(), act.p.OrganisationID, r.PathValue("id"), a.now().Add(inviteValidity))
	if err != nil {
		return err
	}
	noteResource(r, i.ID, "")
	httpx.WriteJSON(w, http.StatusOK, a.viewInvite(i))
	return nil
}
