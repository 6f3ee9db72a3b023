package a2a

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/torpor-dev/torpor/internal/version"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// Agent Card extension URIs and the names that go with them. The first two
// are the Atom reference's (wire compatibility, see the vectors'
// INDEX.md); the queue-bounds one is Torpor's, and so is ExtLiveness
// (card_liveness.go).
const (
	// ExtDataObject is the Governed Object extension: required false and no
	// params (its schema forbids them).
	ExtDataObject = "https://atom.qwixl.dev/a2a/data-object/v1"
	// ExtOfflineDelivery is the offline-delivery extension, declared only
	// when the agent can be asleep; params is exactly {"mode": "sleep" |
	// "hourly_wake"} (its schema forbids any other member).
	ExtOfflineDelivery = "https://atom.qwixl.dev/a2a/offline-delivery/v1"
	// ExtQueueBounds is Torpor's extension that publishes the relay's
	// store-and-forward bounds for the agent, as the offline profile
	// requires ("Implementations MUST publish their actual bounds"). It is
	// a separate entry because the offline-delivery params may hold
	// nothing but mode.
	ExtQueueBounds = "https://github.com/torpor-dev/torpor/blob/main/docs/relay.md#queue-bounds-extension"

	// SecuritySchemeDIDBearer is the name of the DID Bearer security scheme
	// on the card, as the reference names it.
	SecuritySchemeDIDBearer = "atomDidBearer"
	// BearerFormatDID is that scheme's bearerFormat, the reference's name
	// of the DID Bearer token format (transport/bearer.Format).
	BearerFormatDID = "AtomDID"
	// BearerDescription is that scheme's description: what the token is
	// and where it is specified.
	BearerDescription = "DID Bearer (bearerFormat AtomDID): Authorization: Bearer atom.<claims>.<sig>, an Ed25519 did:key signature over canonical {v,did,aud,iat,exp} with aud = this origin; https://github.com/torpor-dev/torpor/blob/main/docs/a2a.md#the-did-bearer-token"

	// ProtocolBindingJSONRPC is the binding of both interfaces a card lists.
	ProtocolBindingJSONRPC = "JSONRPC"
	// CardPath is where an agent's card is served, relative to the agent's
	// base URL (A2A v1.0, Section 8.2).
	CardPath = "/.well-known/agent-card.json"
	// JSONRPCPath is the JSON-RPC endpoint relative to the agent's base URL.
	JSONRPCPath = "/a2a/jsonrpc"
)

// Offline-delivery modes that may appear in the extension's params: only the
// modes in which the agent can be asleep.
const (
	OfflineModeSleep      = "sleep"
	OfflineModeHourlyWake = "hourly_wake"
)

// Card is an A2A v1.0 Agent Card in its ProtoJSON serialisation (A2A v1.0,
// Section 4.4.1), as the reference builds it. Fields the project does not use
// are left out; a card from elsewhere is verified from its raw bytes
// (VerifyCard), never through this type.
type Card struct {
	Name                 string                    `json:"name"`
	Description          string                    `json:"description"`
	Version              string                    `json:"version"`
	SupportedInterfaces  []Interface               `json:"supportedInterfaces"`
	Provider             *Provider                 `json:"provider,omitempty"`
	Capabilities         Capabilities              `json:"capabilities"`
	SecuritySchemes      map[string]SecurityScheme `json:"securitySchemes,omitempty"`
	SecurityRequirements []SecurityRequirement     `json:"securityRequirements,omitempty"`
	DefaultInputModes    []string                  `json:"defaultInputModes"`
	DefaultOutputModes   []string                  `json:"defaultOutputModes"`
	Skills               []Skill                   `json:"skills"`
	Signatures           []CardSignature           `json:"signatures,omitempty"`
}

// Interface is an AgentInterface: one URL and the protocol spoken there.
type Interface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
	Tenant          string `json:"tenant,omitempty"`
}

// Provider names who runs the agent.
type Provider struct {
	Organization string `json:"organization"`
	URL          string `json:"url"`
}

// Capabilities lists optional protocol features and extensions.
type Capabilities struct {
	Streaming         bool        `json:"streaming"`
	PushNotifications bool        `json:"pushNotifications"`
	Extensions        []Extension `json:"extensions,omitempty"`
}

// Extension is an AgentExtension entry. Params is raw JSON so that each
// extension's schema decides its members.
type Extension struct {
	URI         string          `json:"uri"`
	Description string          `json:"description"`
	Required    bool            `json:"required"`
	Params      json.RawMessage `json:"params,omitempty"`
}

// SecurityScheme is the ProtoJSON oneof wrapper of a security scheme; only
// the HTTP one is used.
type SecurityScheme struct {
	HTTPAuth *HTTPAuthSecurityScheme `json:"httpAuthSecurityScheme,omitempty"`
}

// HTTPAuthSecurityScheme is an HTTP Authorization scheme such as Bearer.
type HTTPAuthSecurityScheme struct {
	Description  string `json:"description,omitempty"`
	Scheme       string `json:"scheme"`
	BearerFormat string `json:"bearerFormat,omitempty"`
}

// SecurityRequirement names schemes a caller must satisfy together.
type SecurityRequirement struct {
	Schemes map[string]StringList `json:"schemes"`
}

// StringList is ProtoJSON's wrapper for a repeated string in a map value.
type StringList struct {
	List []string `json:"list"`
}

// Skill is one AgentSkill.
type Skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
}

// CardOptions describe the card BuildCard makes.
type CardOptions struct {
	// Name, Description and Version describe the agent. Version defaults to
	// this build's (internal/version).
	Name, Description, Version string
	// BaseURL is the agent's public base URL; on a relay it is
	// <relay origin>/a/<did>. The JSON-RPC interfaces are BaseURL +
	// JSONRPCPath.
	BaseURL string
	// OfflineMode is the reachability mode; the offline-delivery extension
	// is declared iff it is OfflineModeSleep or OfflineModeHourlyWake.
	OfflineMode string
	// Bounds, when set, are published in the ExtQueueBounds extension.
	Bounds *queuebounds.Bounds
	// Liveness, when set, is published in the ExtLiveness extension (the
	// agent no longer sets it: ExtLiveness). An empty Pulse.URL becomes
	// BaseURL + PulsePath.
	Liveness *Liveness
	// Policy, when set, is published in the ExtPolicy extension.
	Policy *Policy
	// Envelope, when set, declares the ExtEnvelope extension: the agent
	// verifies Autonomy Envelope passports presented as these params say
	// (DefaultEnvelopeParams).
	Envelope *EnvelopeParams
	// Organization names the provider; empty means no provider entry.
	Organization string
	// Skills default to one messaging skill.
	Skills []Skill
}

// BuildCard returns the unsigned A2A v1.0 card described by o: interfaces
// for A2A 1.0 and 0.3 at the same JSON-RPC URL, the data-object extension,
// the offline-delivery extension when the agent can be asleep, the queue
// bounds, the policy, liveness and Autonomy Envelope extensions when set,
// and the DID Bearer security scheme required of every caller. Sign it
// with SignCard. It returns an error for a missing name or base URL, an
// offline mode outside the four reachability modes, a Liveness that
// Card.Liveness would refuse, or envelope params with an empty member.
func BuildCard(o CardOptions) (*Card, error) {
	if o.Name == "" || o.BaseURL == "" {
		return nil, fmt.Errorf("a2a: card needs a name and a base URL")
	}
	base := strings.TrimRight(o.BaseURL, "/")
	exts, err := cardExtensions(o, base)
	if err != nil {
		return nil, err
	}
	c := &Card{
		Name:        o.Name,
		Description: o.Description,
		Version:     o.Version,
		SupportedInterfaces: []Interface{
			{URL: base + JSONRPCPath, ProtocolBinding: ProtocolBindingJSONRPC, ProtocolVersion: "1.0"},
			{URL: base + JSONRPCPath, ProtocolBinding: ProtocolBindingJSONRPC, ProtocolVersion: "0.3"},
		},
		Capabilities: Capabilities{Extensions: exts},
		SecuritySchemes: map[string]SecurityScheme{SecuritySchemeDIDBearer: {HTTPAuth: &HTTPAuthSecurityScheme{
			Description:  BearerDescription,
			Scheme:       "Bearer",
			BearerFormat: BearerFormatDID,
		}}},
		SecurityRequirements: []SecurityRequirement{{Schemes: map[string]StringList{SecuritySchemeDIDBearer: {List: []string{}}}}},
		DefaultInputModes:    []string{"application/json"},
		DefaultOutputModes:   []string{"application/json"},
		Skills:               o.Skills,
	}
	if c.Version == "" {
		c.Version = version.Get().Short()
	}
	if c.Description == "" {
		c.Description = o.Name
	}
	if o.Organization != "" {
		c.Provider = &Provider{Organization: o.Organization, URL: base}
	}
	if len(c.Skills) == 0 {
		c.Skills = []Skill{{
			ID:          "torpor-messages",
			Name:        "Messages",
			Description: "Receives signed Governed Objects and MLS messages; queued while the device sleeps",
			Tags:        []string{"messaging", "offline-delivery"},
		}}
	}
	return c, nil
}

func cardExtensions(o CardOptions, base string) ([]Extension, error) {
	exts := []Extension{{
		URI:         ExtDataObject,
		Description: "Signed Governed Objects carried in A2A data parts",
	}}
	switch o.OfflineMode {
	case OfflineModeSleep, OfflineModeHourlyWake:
		p, _ := json.Marshal(map[string]string{"mode": o.OfflineMode})
		exts = append(exts, Extension{
			URI:         ExtOfflineDelivery,
			Description: "Offline delivery / reachability store-and-forward profile",
			Params:      p,
		})
	case "", "always_on", "session":
	default:
		return nil, fmt.Errorf("a2a: unknown reachability mode %q", o.OfflineMode)
	}
	if o.Bounds != nil {
		p, err := json.Marshal(o.Bounds)
		if err != nil {
			return nil, fmt.Errorf("a2a: %v", err)
		}
		exts = append(exts, Extension{
			URI:         ExtQueueBounds,
			Description: "Store-and-forward bounds the relay applies while the agent sleeps",
			Params:      p,
		})
	}
	return agentExtensions(o, base, exts)
}

// agentExtensions appends the extensions that describe the agent itself:
// its policy, its liveness and the Autonomy Envelope it verifies.
func agentExtensions(o CardOptions, base string, exts []Extension) ([]Extension, error) {
	if o.Policy != nil {
		p, err := json.Marshal(o.Policy)
		if err != nil {
			return nil, fmt.Errorf("a2a: %v", err)
		}
		exts = append(exts, Extension{
			URI:         ExtPolicy,
			Description: "What the agent takes beyond MLS-protected Atom parts; its relay refuses the rest at enqueue",
			Params:      p,
		})
	}
	if o.Liveness != nil {
		l := *o.Liveness
		if l.Pulse.URL == "" {
			l.Pulse.URL = base + PulsePath
		}
		p, err := l.MarshalJSON()
		if err != nil {
			return nil, err
		}
		exts = append(exts, Extension{
			URI:         ExtLiveness,
			Description: "The agent's latest signed liveness pulse and its next window",
			Params:      p,
		})
	}
	if o.Envelope != nil {
		e, err := envelopeExtension(o.Envelope)
		if err != nil {
			return nil, err
		}
		exts = append(exts, e)
	}
	return exts, nil
}

// Extension returns the card's extension entry with uri, if any.
func (c *Card) Extension(uri string) (Extension, bool) {
	for _, e := range c.Capabilities.Extensions {
		if e.URI == uri {
			return e, true
		}
	}
	return Extension{}, false
}

// ParseCard decodes a card's JSON. It checks nothing beyond the syntax; use
// VerifyCard on the same bytes first.
func ParseCard(raw []byte) (*Card, error) {
	var c Card
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, &CardError{Reason: "malformed", Err: err}
	}
	return &c, nil
}
