// Package runtimetest holds fakes and builders for testing the agent
// runtime without MLS: a fake drain.Sessions whose "MLS messages" are
// plain JSON envelopes, and builders for queued JSON-RPC bodies. It also
// holds a Device, the receiving agent with its real sessions and drain
// pipeline but no link, for the tests of what sends to it.
//
// The fake exercises the drain's plumbing around sessions (handshakes
// changing state in the batch transaction, sender identities feeding check
// 3, deferral of messages for unknown groups, rollback) and nothing of MLS
// itself; the real sessions (package session) are tested against the drain
// when they land.
package runtimetest

import (
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/transport/a2a"
)

var bucketGroups = []byte("runtimetest-groups")

// Sessions is a fake drain.Sessions. A "Welcome" names a group to join; a
// "wire message" is a JSON envelope naming its group, its sender and its
// plaintext. Joined groups live in bbolt, in the drain's transaction.
type Sessions struct{}

var _ drain.Sessions = Sessions{}

// envelope is the fake MLS wire message.
type envelope struct {
	Group     string `json:"group"`
	Sender    string `json:"sender,omitempty"`
	Plaintext []byte `json:"plaintext,omitempty"`
	Commit    bool   `json:"commit,omitempty"`
	Corrupt   bool   `json:"corrupt,omitempty"`
}

// Seal returns a fake wire part carrying plaintext from sender in group.
func Seal(group string, sender did.DID, plaintext []byte) a2a.Part {
	return wirePart(envelope{Group: group, Sender: sender.String(), Plaintext: plaintext})
}

// SealObject returns a fake wire part carrying {"object": obj}, the
// application data of draft Section 7.5.
func SealObject(group string, sender did.DID, obj []byte) a2a.Part {
	pt, _ := json.Marshal(map[string]json.RawMessage{"object": obj})
	return Seal(group, sender, pt)
}

// Commit returns a fake wire part carrying a Commit for group.
func Commit(group string) a2a.Part { return wirePart(envelope{Group: group, Commit: true}) }

// Corrupt returns a fake wire part that fails to decrypt.
func Corrupt(group string) a2a.Part { return wirePart(envelope{Group: group, Corrupt: true}) }

func wirePart(e envelope) a2a.Part {
	b, _ := json.Marshal(e)
	p, err := a2a.MLSWire{Wire: b}.Part()
	if err != nil {
		panic(err)
	}
	return p
}

// Welcome returns a fake handshake part admitting the agent to group.
func Welcome(group string, initiator did.DID) a2a.Part {
	p, err := a2a.Handshake{InitiatorDID: initiator, Welcome: []byte(group), RatchetTree: []byte("tree")}.Part()
	if err != nil {
		panic(err)
	}
	return p
}

// ApplyHandshake implements drain.Sessions: a Welcome joins the group it
// names.
func (Sessions) ApplyHandshake(tx *bolt.Tx, h a2a.Handshake, from did.DID) error {
	if h.Welcome == nil {
		return errors.New("runtimetest: commit-only handshake")
	}
	b, err := tx.CreateBucketIfNotExists(bucketGroups)
	if err != nil {
		return err
	}
	return b.Put(h.Welcome, []byte{0})
}

// Open implements drain.Sessions.
func (Sessions) Open(tx *bolt.Tx, w a2a.MLSWire, from did.DID) (drain.Opened, error) {
	var e envelope
	if err := json.Unmarshal(w.Wire, &e); err != nil {
		return drain.Opened{}, errors.New("runtimetest: decryption failed")
	}
	b := tx.Bucket(bucketGroups)
	if b == nil || b.Get([]byte(e.Group)) == nil {
		return drain.Opened{}, unknownGroup(e.Group)
	}
	switch {
	case e.Corrupt:
		return drain.Opened{}, errors.New("runtimetest: decryption failed")
	case e.Commit:
		epoch := b.Get([]byte(e.Group))[0]
		return drain.Opened{Commit: true}, b.Put([]byte(e.Group), []byte{epoch + 1})
	}
	sender, err := did.Parse(e.Sender)
	if err != nil {
		return drain.Opened{}, err
	}
	return drain.Opened{Plaintext: e.Plaintext, Sender: sender}, nil
}

// Epoch returns how many fake Commits group has seen (tests read it in a
// transaction of their own).
func Epoch(tx *bolt.Tx, group string) (int, bool) {
	b := tx.Bucket(bucketGroups)
	if b == nil {
		return 0, false
	}
	v := b.Get([]byte(group))
	if v == nil {
		return 0, false
	}
	return int(v[0]), true
}

type unknownGroup string

func (g unknownGroup) Error() string  { return fmt.Sprintf("runtimetest: unknown group %q", string(g)) }
func (g unknownGroup) Deferred() bool { return true }
