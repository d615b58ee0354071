package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ai-gateway/gateway/internal/httpx"
)

// StoredConfig is a saved config (API.md §6 "Configs") at one version, as
// the store keeps it. Each PUT makes a new version; the config's id and
// slug stay.
type StoredConfig struct {
	ID             string
	Slug           string
	OrganisationID string
	WorkspaceID    string
	Name           string
	// Config is the config object as saved (validated JSON).
	Config json.RawMessage
	// Version counts from 1; VersionID identifies this version's row.
	Version   int
	VersionID string
	CreatedAt time.Time
	// UpdatedAt is when the latest version was saved (for a version: when
	// it was saved).
	UpdatedAt time.Time
}

// ConfigStore reads saved configs; the store satisfies it.
type ConfigStore interface {
	// Config returns the latest version of the organisation's config named
	// by slug or id, or an error wrapping httpx.ErrNotFound.
	Config(ctx context.Context, organisationID, slugOrID string) (*StoredConfig, error)
}

// SavedConfigs resolves saved configs for the data plane through an
// in-memory cache: each entry holds the parsed Plan of one config version
// and is re-read from the store after ttl (so that other processes' changes
// arrive) or at once when the control plane calls Invalidate. A re-read
// that finds the same version keeps the cached Plan.
type SavedConfigs struct {
	store ConfigStore
	ttl   time.Duration
	opt   ParseOptions
	open  func(*StoredConfig) ([]byte, error)
	now   func() time.Time

	mu    sync.RWMutex
	cache map[string]*savedEntry
}

type savedEntry struct {
	cfg   *StoredConfig
	plan  *Plan
	err   error
	until time.Time
}

// negativeTTL bounds how long an unknown slug is remembered.
const negativeTTL = 5 * time.Second

// NewSavedConfigs returns a resolver over store caching for ttl. opt
// validates configs as they are loaded (a config saved before a provider
// was removed fails here with AB01). open, if set, turns a stored config's
// Config into its JSON (the control plane seals configs at rest).
func NewSavedConfigs(store ConfigStore, ttl time.Duration, opt ParseOptions, open func(*StoredConfig) ([]byte, error)) *SavedConfigs {
	return &SavedConfigs{store: store, ttl: ttl, opt: opt, open: open, now: time.Now, cache: make(map[string]*savedEntry)}
}

func savedKey(organisationID, slugOrID string) string { return organisationID + "\x00" + slugOrID }

// Plan returns the plan of the latest version of a saved config and the
// config itself. An unknown config is a 400 AB01_CONFIG_NOT_FOUND naming
// param; a store failure is a 503.
func (s *SavedConfigs) Plan(ctx context.Context, organisationID, slugOrID, param string) (*Plan, *StoredConfig, error) {
	k := savedKey(organisationID, slugOrID)
	now := s.now()
	s.mu.RLock()
	e := s.cache[k]
	s.mu.RUnlock()
	if e != nil && now.Before(e.until) {
		return e.result(slugOrID, param)
	}
	cfg, err := s.store.Config(ctx, organisationID, slugOrID)
	switch {
	case errors.Is(err, httpx.ErrNotFound):
		e = &savedEntry{err: httpx.ErrNotFound, until: now.Add(negativeTTL)}
	case err != nil:
		return nil, nil, &httpx.Error{Status: 503, Type: httpx.TypeServer, Code: "config_unavailable", Message: "cannot read the saved config right now", Err: err}
	case e != nil && e.cfg != nil && e.cfg.ID == cfg.ID && e.cfg.Version == cfg.Version:
		e = &savedEntry{cfg: cfg, plan: e.plan, err: e.err, until: now.Add(s.ttl)}
	default:
		data := []byte(cfg.Config)
		if s.open != nil {
			if data, err = s.open(cfg); err != nil {
				return nil, nil, &httpx.Error{Status: 500, Type: httpx.TypeServer, Code: "config_unreadable", Message: "the saved config cannot be read", Err: err}
			}
		}
		plan, perr := Compile(data, "saved:"+cfg.ID+":"+strconv.Itoa(cfg.Version), s.opt)
		e = &savedEntry{cfg: cfg, plan: plan, err: perr, until: now.Add(s.ttl)}
	}
	s.mu.Lock()
	if len(s.cache) > 100_000 {
		clear(s.cache)
	}
	s.cache[k] = e
	s.mu.Unlock()
	return e.result(slugOrID, param)
}

func (e *savedEntry) result(slugOrID, param string) (*Plan, *StoredConfig, error) {
	if errors.Is(e.err, httpx.ErrNotFound) {
		return nil, nil, NotFound(slugOrID, param)
	}
	if e.err != nil {
		return nil, e.cfg, e.err
	}
	return e.plan, e.cfg, nil
}

// NotFound is the answer for a saved config that does not exist (or that
// the caller's workspace may not see).
func NotFound(slugOrID, param string) error {
	if len(slugOrID) > 64 {
		slugOrID = slugOrID[:64] + "…"
	}
	return httpx.BadRequest(CodeConfigNotFound, param, "%s: saved config %q not found", param, slugOrID)
}

// Invalidate drops the cached copy of a config named by slug or id; the
// control plane calls it after every change, with the slug and the id.
func (s *SavedConfigs) Invalidate(organisationID, slugOrID string) {
	s.mu.Lock()
	delete(s.cache, savedKey(organisationID, slugOrID))
	s.mu.Unlock()
}

// String describes a stored config for logs.
func (c *StoredConfig) String() string { return fmt.Sprintf("%s@v%d", c.Slug, c.Version) }
