package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// DefaultPrefix is the topic prefix of Torpor's device topics
// (transport/mqtt.DefaultPrefix; the broker does not link that package).
const DefaultPrefix = "torpor/v1"

// authHook authenticates every client and checks every topic it uses.
//
// CONNECT (MQTT 5.0 Section 3.1.3.5, 3.1.3.6): the User Name is a did:key,
// the Password a DID Bearer token (transport/bearer) for one of the
// broker's audiences, issued by that DID. An operator (Config.Operators)
// may use any client id that is not a device name; any other DID is a
// device, whose client id is its name, bound to its DID in the registry
// (the first authenticated connection pins it; see registry). A will must
// go to a topic the client may publish on.
//
// ACL: a device publishes on its own status, reply, event and sync topics
// and subscribes to its own cmd and sync topics; an operator publishes on
// any device's cmd topic and subscribes to reply, status and event topics
// (one device's, or all through '+'). An observer (Config.Observers)
// subscribes to every device topic and publishes nothing. Nothing else,
// $SYS included. With a Scope (a hosted relay's tenants), a tenant's
// operators are operators too, and each device's topics are its tenant's
// operators' alone (scoped, scope.go).
type authHook struct {
	mqtt.HookBase
	log    *slog.Logger
	prefix string
	reg    *registry
	clock  clock.Clock
	first  *bearer.Verifier // for tokens naming no audience of ours
	scope  Scope            // nil: no tenants

	mu sync.RWMutex
	// mu guards operators and verifiers.
	operators map[did.DID]bool
	observers map[did.DID]bool
	verifiers map[string]*bearer.Verifier // by normalised audience
}

func newAuthHook(cfg Config, audiences []string, reg *registry, log *slog.Logger) (*authHook, error) {
	h := &authHook{log: log, prefix: cfg.Prefix, reg: reg, clock: clock.Unscaled(cfg.Clock), scope: newScopeCache(cfg.Enrollment.Tenants, clock.Unscaled(cfg.Clock)),
		verifiers: map[string]*bearer.Verifier{}, operators: map[did.DID]bool{}, observers: map[did.DID]bool{}}
	for _, a := range audiences {
		if err := h.addAudience(a); err != nil {
			return nil, err
		}
	}
	for _, o := range cfg.Operators {
		h.operators[o] = true
	}
	for _, o := range cfg.Observers {
		h.observers[o] = true
	}
	return h, nil
}

// addAudience accepts tokens for the broker URL a (bearer.MQTTAudience).
func (h *authHook) addAudience(a string) error {
	n, err := bearer.MQTTAudience(a)
	if err != nil {
		return fmt.Errorf("broker: audience: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	v := &bearer.Verifier{Audience: n, Clock: h.clock}
	h.verifiers[n] = v
	if h.first == nil {
		h.first = v
	}
	return nil
}

// verifier returns the verifier of the token's audience, or the first one
// (which then refuses the token for its audience).
func (h *authHook) verifier(tok string) *bearer.Verifier {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if t, err := bearer.Parse(tok); err == nil {
		if n, err := bearer.MQTTAudience(t.Claims.Aud); err == nil && h.verifiers[n] != nil {
			return h.verifiers[n]
		}
	}
	return h.first
}

// ID implements mqtt.Hook.
func (h *authHook) ID() string { return "torpor-did-auth" }

// Provides implements mqtt.Hook.
func (h *authHook) Provides(b byte) bool {
	return b == mqtt.OnConnectAuthenticate || b == mqtt.OnACLCheck
}

func (h *authHook) isOperator(d did.DID) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.operators[d]
}

func (h *authHook) isObserver(d did.DID) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.observers[d]
}

func (h *authHook) addOperator(d did.DID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.operators[d] = true
}

func (h *authHook) addObserver(d did.DID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.observers[d] = true
}

// OnConnectAuthenticate implements mqtt.Hook. It never logs the password.
func (h *authHook) OnConnectAuthenticate(cl *mqtt.Client, pk packets.Packet) bool {
	id := pk.Connect.ClientIdentifier
	d, err := h.authenticate(pk)
	if err == nil {
		err = h.bind(id, d, pk)
	}
	if err == nil && pk.Connect.WillFlag && !h.allowed(id, d, pk.Connect.WillTopic, true) {
		err = fmt.Errorf("will topic %q is not one the client may publish on", truncate(pk.Connect.WillTopic))
	}
	if err != nil {
		h.log.Warn("MQTT connection refused", "clientId", truncate(id), "remote", cl.Net.Remote, "err", err)
		return false
	}
	h.log.Debug("MQTT client authenticated", "clientId", id, "did", d, "operator", h.role(d) == roleOperator || h.role(d) == roleTenantOperator)
	return true
}

// authenticate checks the user name and the token in the password and
// returns the DID they prove.
func (h *authHook) authenticate(pk packets.Packet) (did.DID, error) {
	if len(pk.Connect.Username) == 0 || len(pk.Connect.Password) == 0 {
		return did.DID{}, fmt.Errorf("no credentials (user name: the DID; password: a DID Bearer token)")
	}
	user, err := did.Parse(string(pk.Connect.Username))
	if err != nil {
		return did.DID{}, fmt.Errorf("user name is not a did:key")
	}
	tok := string(pk.Connect.Password)
	got, err := h.verifier(tok).Verify(tok)
	if err != nil {
		return did.DID{}, fmt.Errorf("token of %s: %w", user, err)
	}
	if got != user {
		return did.DID{}, fmt.Errorf("user name %s, token of %s", user, got)
	}
	return got, nil
}

// bind checks the client id against the DID: a device's client id is its
// name, pinned to its DID (or handed to it by the pinned DID's key
// handover); an operator's is any id that is no device's.
func (h *authHook) bind(id string, d did.DID, pk packets.Packet) error {
	if err := checkName(id); err != nil {
		return fmt.Errorf("client id: %w", err)
	}
	if h.role(d) != roleDevice {
		if owner, ok, err := h.reg.lookup(id); err != nil || ok {
			return fmt.Errorf("operator %s may not use client id %q: it is the name of device %s", d, id, owner)
		}
		return nil
	}
	err := h.reg.bind(id, d)
	if !errors.Is(err, ErrNameTaken) {
		return err
	}
	owner, ok, lerr := h.reg.lookup(id)
	if lerr != nil || !ok {
		return err
	}
	if herr := handover(pk, id, owner, d); herr != nil {
		return fmt.Errorf("%w (%v)", err, herr)
	}
	if err := h.reg.repin(id, owner, d); err != nil {
		return err
	}
	h.log.Info("device name handed to a rotated key", "name", id, "old", owner, "new", d)
	return nil
}

// OnACLCheck implements mqtt.Hook.
func (h *authHook) OnACLCheck(cl *mqtt.Client, topic string, write bool) bool {
	d, err := did.Parse(string(cl.Properties.Username))
	if err != nil {
		return false
	}
	ok := h.allowed(cl.ID, d, topic, write)
	if !ok {
		h.log.Info("MQTT topic refused", "clientId", cl.ID, "did", d, "topic", truncate(topic), "publish", write)
	}
	return ok
}

// allowed is the ACL: may the client id of DID d publish on (write) or
// subscribe to topic?
func (h *authHook) allowed(id string, d did.DID, topic string, write bool) bool {
	rest, ok := strings.CutPrefix(topic, h.prefix+"/")
	if !ok {
		return false
	}
	name, kind, ok := strings.Cut(rest, "/")
	if !ok || strings.Contains(kind, "/") {
		return false
	}
	switch r := h.role(d); r {
	case roleObserver:
		return !write && h.scoped(r, d, name, false)
	case roleOperator, roleTenantOperator:
		if write {
			return kind == "cmd" && checkName(name) == nil && h.scoped(r, d, name, true)
		}
		return (kind == "reply" || kind == "status" || kind == "event") && (name == "+" || checkName(name) == nil) && h.scoped(r, d, name, false)
	}
	if name != id {
		return false
	}
	if write {
		return kind == "status" || kind == "reply" || kind == "event" || kind == "sync"
	}
	return kind == "cmd" || kind == "sync"
}

// checkName is transport/mqtt.CheckName: 1 to 128 characters from A–Z,
// a–z, 0–9, '.', '_', '-', ':'; never a wildcard, a level separator or a
// $-topic (MQTT 5.0 Section 4.7).
func checkName(name string) error {
	if name == "" || len(name) > 128 {
		return fmt.Errorf("must be 1 to 128 characters")
	}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-', r == ':':
		default:
			return fmt.Errorf("%q: character %q not allowed", truncate(name), r)
		}
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
