package vectors

import (
	"fmt"
	"sort"

	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

// messages: every RFC 9420 structure decodes and re-encodes byte for byte
// (Sections 6, 7, 10, 12). The file has no cipher_suite field; its cases
// are filtered to suite 1 by the suite inside their KeyPackage, which is
// checked here.
func init() {
	register(&kind{name: "messages", requires: []string{"mls_welcome", "mls_group_info"}, run: runMessages})
}

// roundTrip decodes data as a structure and re-encodes it.
type roundTrip func(data []byte) ([]byte, error)

func mlsMessage(wf mls.WireFormat) roundTrip {
	return func(data []byte) ([]byte, error) {
		m, err := mls.ParseMLSMessage(data)
		if err != nil {
			return nil, err
		}
		if m.WireFormat != wf {
			return nil, fmt.Errorf("wire format %d, want %d", m.WireFormat, wf)
		}
		return m.Marshal()
	}
}

func proposalBody(t mls.ProposalType) roundTrip {
	return func(data []byte) ([]byte, error) {
		p, err := mls.ParseProposalBody(t, data)
		if err != nil {
			return nil, err
		}
		return mls.MarshalProposalBody(p), nil
	}
}

var messageFields = map[string]roundTrip{
	"mls_welcome":     mlsMessage(mls.WireFormatWelcome),
	"mls_group_info":  mlsMessage(mls.WireFormatGroupInfo),
	"mls_key_package": mlsMessage(mls.WireFormatKeyPackage),
	"ratchet_tree": func(data []byte) ([]byte, error) {
		t, err := mls.ParseRatchetTree(data)
		if err != nil {
			return nil, err
		}
		return t.Marshal(), nil
	},
	"group_secrets": func(data []byte) ([]byte, error) {
		g, err := mls.ParseGroupSecrets(data)
		if err != nil {
			return nil, err
		}
		return g.Marshal(), nil
	},
	"add_proposal":                      proposalBody(mls.ProposalTypeAdd),
	"update_proposal":                   proposalBody(mls.ProposalTypeUpdate),
	"remove_proposal":                   proposalBody(mls.ProposalTypeRemove),
	"pre_shared_key_proposal":           proposalBody(mls.ProposalTypePSK),
	"re_init_proposal":                  proposalBody(mls.ProposalTypeReInit),
	"external_init_proposal":            proposalBody(mls.ProposalTypeExternalInit),
	"group_context_extensions_proposal": proposalBody(mls.ProposalTypeGroupContextExtensions),
	"commit": func(data []byte) ([]byte, error) {
		c, err := mls.ParseCommit(data)
		if err != nil {
			return nil, err
		}
		return c.Marshal(), nil
	},
	"public_message_application": mlsMessage(mls.WireFormatPublicMessage),
	"public_message_proposal":    mlsMessage(mls.WireFormatPublicMessage),
	"public_message_commit":      mlsMessage(mls.WireFormatPublicMessage),
	"private_message":            mlsMessage(mls.WireFormatPrivateMessage),
}

func runMessages(c fields) error {
	v := vectorfmt.Messages{}
	if err := decode(c, &v); err != nil {
		return err
	}
	kp, err := mls.ParseMLSMessage(v["mls_key_package"])
	if err == nil && kp.KeyPackage != nil && kp.KeyPackage.CipherSuite != mls.CipherSuiteX25519AES128SHA256Ed25519 {
		return skipf("cipher suite %d is not supported", kp.KeyPackage.CipherSuite)
	}
	var ck checker
	names := make([]string, 0, len(v))
	for f := range v {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		rt, ok := messageFields[f]
		if !ok {
			ck.errorf("unknown field %q", f)
			continue
		}
		out, err := rt(v[f])
		if ck.fail(f, err) {
			continue
		}
		ck.bytes(f+" re-encoded", out, v[f])
	}
	for f := range messageFields {
		if _, ok := v[f]; !ok {
			ck.errorf("field %q missing", f)
		}
	}
	return ck.err()
}
