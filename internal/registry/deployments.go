package registry

import (
	"encoding/json"
	"time"
)

// Deployment types (SPEC.md "Deployments"): categories, not states; each
// deployment has limits of its own.
const (
	DeploymentProduction    = "production"
	DeploymentNonProduction = "non-production"
)

// ValidDeploymentType reports whether t is a deployment type.
func ValidDeploymentType(t string) bool {
	return t == DeploymentProduction || t == DeploymentNonProduction
}

// Deployment is a gateway deployment of an organisation (API.md §6
// "Deployments"): a gateway process started with its slug serves only its
// workspaces, routes with its config and counts against its limits.
type Deployment struct {
	ID             string
	OrganisationID string
	// Slug is human-readable and unique in the organisation.
	Slug        string
	Name        string
	Description string
	// Type is DeploymentProduction or DeploymentNonProduction.
	Type string
	// ConfigRef is the slug of the saved config the deployment routes
	// with; "" when it has none or an inline one.
	ConfigRef string
	// Config is an inline config's JSON as the control plane stores it
	// (sealed at rest: it may hold provider credentials); nil when none.
	Config []byte
	// WorkspaceIDs restricts the deployment to these workspaces; empty
	// means every workspace of the organisation.
	WorkspaceIDs []string
	Limits       DeploymentLimits
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// DeploymentLimits are a deployment's limits, validated by the control
// plane before they are stored: rate_limits is a JSON array of
// {type, unit, value}, usage_limits a usage-limit object; either is empty
// when not set.
type DeploymentLimits struct {
	RateLimits  json.RawMessage `json:"rate_limits,omitempty"`
	UsageLimits json.RawMessage `json:"usage_limits,omitempty"`
}

// Serves reports whether the deployment serves workspaceID: every
// workspace when it has no restriction.
func (d *Deployment) Serves(workspaceID string) bool {
	if len(d.WorkspaceIDs) == 0 {
		return true
	}
	for _, id := range d.WorkspaceIDs {
		if id == workspaceID {
			return true
		}
	}
	return false
}

// DeploymentFilter narrows a list of deployments; empty fields do not
// narrow.
type DeploymentFilter struct {
	// Type is DeploymentProduction or DeploymentNonProduction.
	Type string
	// WorkspaceID keeps the deployments that serve this workspace.
	WorkspaceID string
}
