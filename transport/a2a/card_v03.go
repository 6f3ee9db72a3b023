package a2a

import (
	"encoding/json"
	"fmt"
	"strings"
)

// A2A 0.3 view of a card. A2A 1.0 (Section 3.6.2) has a client name the
// protocol version it speaks in the A2A-Version request header, and an
// agent read a request without one, or with an empty one, as 0.3. The
// relay therefore serves the card the device signed, byte for byte, to a
// client that asks for 1.0, and CardV03 of those bytes to one that asks
// for 0.3 or does not say, such as a2a-go v0.3.3's card resolver
// (https://github.com/a2aproject/a2a-go/blob/v0.3.3/a2aclient/agentcard/resolver.go).
//
// The view carries no signature: the device signed the 1.0 card, and a
// relay holds no agent key. A 0.3 client that wants the device's word
// fetches the 1.0 card (A2A-Version: 1.0), checks it with VerifyCard and
// applies CardV03 to it; the view is a pure function of the signed bytes,
// so it gets the relay's view exactly (docs/a2a.md, "The card").

// ProtocolVersionV03 is the protocolVersion of the 0.3 view.
const ProtocolVersionV03 = "0.3.0"

// cardV03 is an A2A 0.3 AgentCard (the 0.3 JSON schema, as
// https://github.com/a2aproject/A2A/blob/v0.3.0/specification/json/a2a.json
// defines it), with the members the view fills.
type cardV03 struct {
	ProtocolVersion      string                      `json:"protocolVersion"`
	Name                 string                      `json:"name"`
	Description          string                      `json:"description"`
	URL                  string                      `json:"url"`
	PreferredTransport   string                      `json:"preferredTransport"`
	AdditionalInterfaces []interfaceV03              `json:"additionalInterfaces,omitempty"`
	Provider             *Provider                   `json:"provider,omitempty"`
	Version              string                      `json:"version"`
	Capabilities         Capabilities                `json:"capabilities"`
	SecuritySchemes      map[string]securitySchemeV3 `json:"securitySchemes,omitempty"`
	Security             []map[string][]string       `json:"security,omitempty"`
	DefaultInputModes    []string                    `json:"defaultInputModes"`
	DefaultOutputModes   []string                    `json:"defaultOutputModes"`
	Skills               []Skill                     `json:"skills"`
}

type interfaceV03 struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

// securitySchemeV3 is 0.3's HTTPAuthSecurityScheme, an OpenAPI 3.0
// Security Scheme Object of type http
// (https://spec.openapis.org/oas/v3.0.3#security-scheme-object).
type securitySchemeV3 struct {
	Type         string `json:"type"`
	Scheme       string `json:"scheme"`
	BearerFormat string `json:"bearerFormat,omitempty"`
	Description  string `json:"description,omitempty"`
}

// CardV03 returns the A2A 0.3 view of raw, a 1.0 card as BuildCard makes
// it: url is the 0.3 JSON-RPC interface's URL (preferredTransport JSONRPC),
// each HTTP security scheme becomes {"type":"http", "scheme" lower-cased as
// OpenAPI registers it, ...}, securityRequirements become security, and
// name, description, version, provider, capabilities (extensions with their
// params unchanged), input and output modes and skills are copied. It has
// no signatures. It returns an error if raw is not a card or lists no 0.3
// JSON-RPC interface, or a security scheme other than HTTP.
func CardV03(raw []byte) ([]byte, error) {
	c, err := ParseCard(raw)
	if err != nil {
		return nil, err
	}
	v := cardV03{
		ProtocolVersion: ProtocolVersionV03, PreferredTransport: ProtocolBindingJSONRPC,
		Name: c.Name, Description: c.Description, Version: c.Version, Provider: c.Provider,
		Capabilities: c.Capabilities, DefaultInputModes: c.DefaultInputModes,
		DefaultOutputModes: c.DefaultOutputModes, Skills: c.Skills,
	}
	for _, i := range c.SupportedInterfaces {
		if i.ProtocolBinding != ProtocolBindingJSONRPC || i.ProtocolVersion != "0.3" {
			continue
		}
		if v.URL == "" {
			v.URL = i.URL
		} else {
			v.AdditionalInterfaces = append(v.AdditionalInterfaces, interfaceV03{URL: i.URL, Transport: ProtocolBindingJSONRPC})
		}
	}
	if v.URL == "" {
		return nil, &CardError{Reason: "malformed", Err: fmt.Errorf("%w: no A2A 0.3 JSON-RPC interface", ErrCardMalformed)}
	}
	// 0.3 requires the lists: never null.
	for _, l := range []*[]string{&v.DefaultInputModes, &v.DefaultOutputModes} {
		if *l == nil {
			*l = []string{}
		}
	}
	if v.Skills == nil {
		v.Skills = []Skill{}
	}
	if v.SecuritySchemes, err = securitySchemesV03(c.SecuritySchemes); err != nil {
		return nil, err
	}
	for _, r := range c.SecurityRequirements {
		s := map[string][]string{}
		for name, scopes := range r.Schemes {
			s[name] = append([]string{}, scopes.List...)
		}
		v.Security = append(v.Security, s)
	}
	return json.Marshal(v)
}

func securitySchemesV03(in map[string]SecurityScheme) (map[string]securitySchemeV3, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(map[string]securitySchemeV3, len(in))
	for name, s := range in {
		if s.HTTPAuth == nil {
			return nil, &CardError{Reason: "malformed", Err: fmt.Errorf("%w: security scheme %q is not an HTTP one", ErrCardMalformed, name)}
		}
		out[name] = securitySchemeV3{Type: "http", Scheme: strings.ToLower(s.HTTPAuth.Scheme),
			BearerFormat: s.HTTPAuth.BearerFormat, Description: s.HTTPAuth.Description}
	}
	return out, nil
}

// WantsCardV03 reports whether a request whose A2A-Version header is
// version asks for the 0.3 view: an empty or absent header (A2A 1.0,
// Section 3.6.2) and any 0.x version do; 1.x and anything else get the
// signed card.
func WantsCardV03(version string) bool {
	v := strings.TrimSpace(version)
	return v == "" || strings.HasPrefix(v, "0.")
}
