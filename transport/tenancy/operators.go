package tenancy

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
)

// PurposeOperators is the purpose of an owner's operator list: a
// Governed Object issued and signed by the tenant's owner whose payload is
// an OperatorList (torporctl tenant operators).
const PurposeOperators = "torpor:tenant-operators"

// OperatorList is the payload of an owner's operator list.
type OperatorList struct {
	// Operators are the DIDs that operate the owner's devices on this
	// relay: they see them in the console and the fleet API, purge their
	// queues, admit and halt them.
	Operators []string `json:"operators"`
	// HostSeesDevices lets the relay's host operators see the tenant's
	// devices (not act on them); without it they see only totals.
	HostSeesDevices bool `json:"hostSeesDevices,omitempty"`
}

// ParseOperatorList checks obj's form, purpose and signature.
func ParseOperatorList(obj []byte) (*governed.Object, OperatorList, error) {
	var list OperatorList
	o, err := governed.Parse(obj)
	if err != nil {
		return nil, list, fmt.Errorf("tenancy: operator list: %v", err)
	}
	if o.Governance.Purpose != PurposeOperators {
		return nil, list, fmt.Errorf("tenancy: operator list has purpose %q, want %q", o.Governance.Purpose, PurposeOperators)
	}
	if err := o.VerifySignature(); err != nil {
		return nil, list, fmt.Errorf("tenancy: operator list: %v", err)
	}
	if err := json.Unmarshal(o.Payload, &list); err != nil {
		return nil, list, fmt.Errorf("tenancy: operator list payload: %v", err)
	}
	for _, op := range list.Operators {
		if _, err := did.Parse(op); err != nil {
			return nil, list, fmt.Errorf("tenancy: operator list names %q: %v", op, err)
		}
	}
	return o, list, nil
}

// OperatorListSchema is the semantic schema of an operator list.
const OperatorListSchema = "urn:torpor:tenant-operators"

// SignOperatorList is the owner's act: list as a Governed Object signed
// by owner, issued at issued, valid for ttl (zero: no expiry).
func SignOperatorList(owner *did.PrivateKey, list OperatorList, issued time.Time, ttl time.Duration) ([]byte, error) {
	if list.Operators == nil {
		list.Operators = []string{}
	}
	o, err := governed.Sign(owner, governed.Template{IssuedAt: issued, Semantic: governed.Semantic{Schema: OperatorListSchema},
		Payload: list, Purpose: PurposeOperators, TTL: ttl})
	if err != nil {
		return nil, err
	}
	return json.Marshal(o)
}
