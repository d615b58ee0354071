// Package tenancy holds the records of the control plane's tenancy:
// organisations and their settings, workspaces and their settings, users,
// workspace memberships and invites, with their roles and states (SPEC.md
// "Administrative resources", "States and transitions"). The store persists
// them and the control plane serves them; neither owns the other, so the
// types live here.
//
// tenancy is a leaf: it must not import any other internal package.
package tenancy

import (
	"encoding/json"
	"time"
)

// Organisation roles of a user (SPEC.md: Organization Owner, Organization
// Admin). Users who are neither have the role member and act only through
// their workspace memberships.
const (
	RoleOwner  = "owner"
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// Workspace roles of a member (SPEC.md: Workspace Manager, Workspace
// Member).
const (
	WorkspaceRoleManager = "manager"
	WorkspaceRoleMember  = "member"
)

// ValidRole reports whether r is an organisation role.
func ValidRole(r string) bool { return r == RoleOwner || r == RoleAdmin || r == RoleMember }

// ValidWorkspaceRole reports whether r is a workspace role.
func ValidWorkspaceRole(r string) bool { return r == WorkspaceRoleManager || r == WorkspaceRoleMember }

// IsOrgAdmin reports whether an organisation role administers the whole
// organisation (owner or admin).
func IsOrgAdmin(role string) bool { return role == RoleOwner || role == RoleAdmin }

// Invite states (API.md §2 "Invites"). An invite is pending until it is
// accepted (a first-time user logs in, SPEC.md "States and transitions"),
// cancelled (deleted while pending) or expired (its expires_at passed while
// pending).
const (
	InvitePending   = "pending"
	InviteAccepted  = "accepted"
	InviteExpired   = "expired"
	InviteCancelled = "cancelled"
)

// Organisation is the tenant.
type Organisation struct {
	ID        string      `json:"id"`
	Name      string      `json:"name"`
	Settings  OrgSettings `json:"settings"`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"last_updated_at"`
}

// OrgSettings are the organisation-wide defaults that workspaces may
// override. Nil means "not set": analytics visibility then defaults to
// enabled (SPEC.md "Workspace settings").
type OrgSettings struct {
	MembersViewAnalytics  *bool `json:"membersViewAnalytics,omitempty"`
	ManagersViewAnalytics *bool `json:"managersViewAnalytics,omitempty"`
}

// Workspace is a unit of isolation inside the organisation.
type Workspace struct {
	ID             string            `json:"id"`
	OrganisationID string            `json:"organisation_id"`
	Slug           string            `json:"slug"`
	Name           string            `json:"name"`
	Description    string            `json:"description"`
	IsDefault      bool              `json:"is_default"`
	Settings       WorkspaceSettings `json:"settings"`
	UsageLimits    json.RawMessage   `json:"usage_limits,omitempty"`
	RateLimits     json.RawMessage   `json:"rate_limits,omitempty"`
	CreatedAt      time.Time         `json:"created_at"`
	UpdatedAt      time.Time         `json:"last_updated_at"`
}

// WorkspaceSettings are a workspace's own settings. A nil field is not set
// on the workspace: the analytics flags then fall back to the
// organisation's (and finally to enabled), the key limits to none.
type WorkspaceSettings struct {
	MembersViewAnalytics  *bool `json:"membersViewAnalytics,omitempty"`
	ManagersViewAnalytics *bool `json:"managersViewAnalytics,omitempty"`
	// MaxUserAPIKeys bounds how many user API keys one user may hold in
	// the workspace (SPEC.md "Limits").
	MaxUserAPIKeys *int `json:"maxUserApiKeys,omitempty"`
	// DefaultUserAPIKeyExpiryDays is the expiry given to a user API key
	// created without expires_at.
	DefaultUserAPIKeyExpiryDays *int `json:"defaultUserApiKeyExpiryDays,omitempty"`
	// MaxUserAPIKeyExpiryDays bounds how far ahead a user API key's
	// expires_at may be.
	MaxUserAPIKeyExpiryDays *int `json:"maxUserApiKeyExpiryDays,omitempty"`
}

// Analytics returns whether members and managers of the workspace may view
// analytics: the workspace's setting, else the organisation's, else true.
// Owners and admins always may (SPEC.md).
func (w WorkspaceSettings) Analytics(org OrgSettings) (members, managers bool) {
	pick := func(ws, o *bool) bool {
		switch {
		case ws != nil:
			return *ws
		case o != nil:
			return *o
		}
		return true
	}
	return pick(w.MembersViewAnalytics, org.MembersViewAnalytics), pick(w.ManagersViewAnalytics, org.ManagersViewAnalytics)
}

// User is a person of the organisation.
type User struct {
	ID             string    `json:"id"`
	OrganisationID string    `json:"organisation_id"`
	Email          string    `json:"email"`
	Name           string    `json:"name"`
	Role           string    `json:"role"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"last_updated_at"`
}

// UserFilter narrows a user list; empty fields do not filter.
type UserFilter struct {
	Role  string
	Email string
}

// Member is a user's membership of a workspace, with the user's fields.
type Member struct {
	WorkspaceID string    `json:"workspace_id"`
	UserID      string    `json:"user_id"`
	Role        string    `json:"role"`
	Email       string    `json:"email"`
	Name        string    `json:"name"`
	OrgRole     string    `json:"organisation_role"`
	CreatedAt   time.Time `json:"created_at"`
}

// Invite asks someone to join the organisation with a role, and workspaces
// with roles of their own.
type Invite struct {
	ID             string            `json:"id"`
	OrganisationID string            `json:"organisation_id"`
	Email          string            `json:"email"`
	Role           string            `json:"role"`
	Workspaces     []InviteWorkspace `json:"workspaces"`
	// Status is the stored state; see EffectiveStatus.
	Status string `json:"status"`
	// InvitedBy is the id of the user, or else the API key, that invited.
	InvitedBy   string     `json:"invited_by"`
	ExpiresAt   time.Time  `json:"expires_at"`
	AcceptedAt  *time.Time `json:"accepted_at"`
	LastSentAt  time.Time  `json:"last_sent_at"`
	ResendCount int        `json:"resend_count"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"last_updated_at"`
}

// InviteWorkspace is a workspace an invite grants, with the role in it.
type InviteWorkspace struct {
	ID   string `json:"id"`
	Role string `json:"role"`
}

// EffectiveStatus is the invite's state at now: a pending invite whose
// expiry has passed is expired even before a worker stores that.
func (i *Invite) EffectiveStatus(now time.Time) string {
	if i.Status == InvitePending && !now.Before(i.ExpiresAt) {
		return InviteExpired
	}
	return i.Status
}

// InviteFilter narrows an invite list; empty fields do not filter. Status
// is compared with the effective status.
type InviteFilter struct {
	Status string
	Email  string
}
