package tenancy

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/jcs"
)

// RecordContext is prefixed to a usage record's canonical form before it
// is signed, so that the relay's signature over a record is never valid
// as a token, a Governed Object or a link proof.
const RecordContext = "torpor usage record v1\n"

// Record is a tenant's usage in one hour of the relay's clock, signed by
// the relay: Ed25519 (RFC 8032) over RecordContext followed by the RFC
// 8785 form of the record without its signature.
type Record struct {
	Tenant string `json:"tenant"`
	Relay  string `json:"relay"`
	// Hour is the hour's start (RFC 3339, UTC); Complete says the hour
	// was over when the record was made, so its figures are final.
	Hour     string `json:"hour"`
	Complete bool   `json:"complete"`
	// Requests are the sender requests served; Refused the refusals by
	// quota.
	Requests int64           `json:"requests"`
	Refused  map[Quota]int64 `json:"refused,omitempty"`
	// The peaks held in the hour; ByteHours the queued bytes held over
	// the hour (a byte for an hour is one), in thousandths.
	PeakDevices         int64 `json:"peakDevices"`
	PeakQueuedBytes     int64 `json:"peakQueuedBytes"`
	PeakKeyPackageBytes int64 `json:"peakKeyPackageBytes"`
	MilliByteHours      int64 `json:"milliByteHours"`
	// PeakUpdateBytes is the most blob bytes the tenant's update
	// repository held in the hour. It is absent (nil) when the tenant
	// held none, and in the records of a relay from before it was
	// counted, so that those verify as they were signed; a record whose
	// member is present, even as 0, is signed with it.
	PeakUpdateBytes *int64 `json:"peakUpdateBytes,omitempty"`
	// Signature is the relay's signature, base64url without padding.
	Signature string `json:"signature,omitempty"`
}

// ErrBadRecord is wrapped by every failure to verify a record.
var ErrBadRecord = errors.New("usage record does not verify")

// signedBytes is what the signature covers.
func (r Record) signedBytes() ([]byte, error) {
	r.Signature = ""
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	c, err := jcs.Transform(b)
	if err != nil {
		return nil, err
	}
	return append([]byte(RecordContext), c...), nil
}

// Sign signs r by key (the relay's), replacing its signature.
func (r *Record) Sign(key *did.PrivateKey) error {
	m, err := r.signedBytes()
	if err != nil {
		return err
	}
	r.Signature = base64.RawURLEncoding.EncodeToString(key.Sign(m))
	return nil
}

// VerifyRecord parses a record as the relay wrote it and checks its
// signature by relay (the relay's DID, which the tenant knows out of
// band). The record's own relay member must name the same DID. Members
// the record does not define are refused, so that nothing unsigned rides
// along.
func VerifyRecord(b []byte, relay did.DID) (Record, error) {
	var r Record
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	if dec.More() {
		return r, fmt.Errorf("%w: data after the record", ErrBadRecord)
	}
	if r.Relay != relay.String() {
		return r, fmt.Errorf("%w: signed by relay %s, not %s", ErrBadRecord, r.Relay, relay)
	}
	sig, err := base64.RawURLEncoding.DecodeString(r.Signature)
	if err != nil {
		return r, fmt.Errorf("%w: signature is not base64url: %v", ErrBadRecord, err)
	}
	m, err := r.signedBytes()
	if err != nil {
		return r, fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	if !relay.Verify(m, sig) {
		return r, fmt.Errorf("%w: the signature by %s does not match the record (changed after signing?)", ErrBadRecord, relay)
	}
	return r, nil
}
