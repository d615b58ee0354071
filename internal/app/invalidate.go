package app

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/rueidis"

	"github.com/ai-gateway/gateway/internal/auth"
)

// invalidationChannel is the Redis pub/sub channel on which every gateway
// process announces a committed control-plane change (DESIGN.md "Many
// machines": every process drops its cached copy within a second).
const invalidationChannel = "gateway:invalidate"

// Kinds of cached thing an invalidation names.
const (
	invalidateAPIKeys     = "api_keys"     // every cached API key (no id)
	invalidateVirtualKeys = "virtual_keys" // one virtual key by slug or id
	invalidateConfigs     = "configs"      // one saved config by slug or id
	invalidateProviders   = "providers"    // one workspace provider by slug or id
	invalidateIntegration = "integrations" // every provider using one integration
	invalidateSessions    = "sessions"     // one SSO session by token hash (logout)
)

// invalidation is one message on the channel.
type invalidation struct {
	Origin string `json:"o"`
	Kind   string `json:"k"`
	Org    string `json:"org,omitempty"`
	ID     string `json:"id,omitempty"`
}

// bus carries cache invalidations between gateway processes. Each process
// drops its own copy at once (the caller does that) and publishes; the
// others drop theirs when the message arrives. Without Redis, or while it
// is unreachable, publishing does nothing and the caches' TTLs (at most
// --key-cache-ttl) bound how stale another process can be.
type bus struct {
	origin string
	log    *slog.Logger

	mu       sync.Mutex
	client   rueidis.Client
	ready    chan struct{} // closed when the client is set
	handlers map[string]func(org, id string)
}

func newBus(log *slog.Logger) *bus {
	return &bus{origin: uuid.NewString(), log: log, ready: make(chan struct{}), handlers: map[string]func(org, id string){}}
}

// handle registers what this process does when another announces kind.
// Call it before run.
func (b *bus) handle(kind string, fn func(org, id string)) {
	b.mu.Lock()
	b.handlers[kind] = fn
	b.mu.Unlock()
}

// setClient gives the bus its Redis client once connected.
func (b *bus) setClient(c rueidis.Client) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.client == nil {
		b.client = c
		close(b.ready)
	}
}

func (b *bus) redis() rueidis.Client {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.client
}

// publish announces a change to the other processes. It never blocks the
// caller for long and never fails the control-plane write: a lost message
// costs staleness bounded by the cache TTL.
func (b *bus) publish(kind, org, id string) {
	c := b.redis()
	if c == nil {
		return
	}
	msg, _ := json.Marshal(invalidation{Origin: b.origin, Kind: kind, Org: org, ID: id})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := c.Do(ctx, c.B().Publish().Channel(invalidationChannel).Message(string(msg)).Build()).Error(); err != nil {
		b.log.Warn("cache invalidation not published; other gateway processes refresh at their cache TTL", "kind", kind, "err", err)
	}
}

// run subscribes once the client is set and applies other processes'
// invalidations until ctx ends, subscribing again after an error.
func (b *bus) run(ctx context.Context) {
	select {
	case <-ctx.Done():
		return
	case <-b.ready:
	}
	c := b.redis()
	delay := time.Second
	for ctx.Err() == nil {
		err := c.Receive(ctx, c.B().Subscribe().Channel(invalidationChannel).Build(), b.apply)
		if ctx.Err() != nil {
			return
		}
		b.log.Warn("cache invalidation subscription ended; subscribing again", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, 30*time.Second)
	}
}

func (b *bus) apply(m rueidis.PubSubMessage) {
	var inv invalidation
	if err := json.Unmarshal([]byte(m.Message), &inv); err != nil || inv.Origin == b.origin {
		return
	}
	b.mu.Lock()
	fn := b.handlers[inv.Kind]
	b.mu.Unlock()
	if fn != nil {
		fn(inv.Org, inv.ID)
	}
}

// slugCache is a data-plane cache of things looked up by organisation and
// slug or id (virtual keys, saved configs, providers).
type slugCache interface {
	Invalidate(organisationID, slugOrID string)
}

// broadcast invalidates a slug cache here and in every other process.
type broadcast struct {
	local slugCache
	kind  string
	bus   *bus
}

func (b broadcast) Invalidate(organisationID, slugOrID string) {
	b.local.Invalidate(organisationID, slugOrID)
	b.bus.publish(b.kind, organisationID, slugOrID)
}

// share registers local as the handler of kind and returns the
// invalidator the control plane should call.
func (b *bus) share(kind string, local slugCache) broadcast {
	b.handle(kind, local.Invalidate)
	return broadcast{local: local, kind: kind, bus: b}
}

// broadcastKeys is the authenticator the control plane uses: dropping its
// key cache drops every other process's too.
type broadcastKeys struct {
	*auth.Authenticator
	bus *bus
}

func (b broadcastKeys) Invalidate() {
	b.Authenticator.Invalidate()
	b.bus.publish(invalidateAPIKeys, "", "")
}

// providerCache is the data plane's cache of stored providers.
type providerCache interface {
	InvalidateProvider(organisationID, slug string)
	InvalidateIntegration(organisationID, integrationID string)
}

// broadcastProviders invalidates stored providers here and in every other
// process.
type broadcastProviders struct {
	local providerCache
	bus   *bus
}

func (b broadcastProviders) InvalidateProvider(organisationID, slug string) {
	b.local.InvalidateProvider(organisationID, slug)
	b.bus.publish(invalidateProviders, organisationID, slug)
}

func (b broadcastProviders) InvalidateIntegration(organisationID, integrationID string) {
	b.local.InvalidateIntegration(organisationID, integrationID)
	b.bus.publish(invalidateIntegration, organisationID, integrationID)
}

// shareProviders registers local for provider and integration
// invalidations and returns the invalidator the control plane should call.
func (b *bus) shareProviders(local providerCache) broadcastProviders {
	b.handle(invalidateProviders, local.InvalidateProvider)
	b.handle(invalidateIntegration, local.InvalidateIntegration)
	return broadcastProviders{local: local, bus: b}
}
