package mls

import (
	"errors"
	"testing"

	"github.com/torpor-dev/torpor/mls/internal/suite"
)

// externalSendersGroup is a group of alice, bob and carol whose
// external_senders extension lists ds0 and ds1; it returns ds1.
func externalSendersGroup(t *testing.T) (alice, bob, carol, ds1 *client) {
	t.Helper()
	alice, bob, carol = newClient(t, "alice"), newClient(t, "bob"), newClient(t, "carol")
	ds0 := newClient(t, "ds0")
	ds1 = newClient(t, "ds1")
	senders := []ExternalSender{
		{SignatureKey: suite.SignaturePublicKey(ds0.sig), Credential: ds0.cred()},
		{SignatureKey: suite.SignaturePublicKey(ds1.sig), Credential: ds1.cred()},
	}
	var err error
	alice.g, err = NewGroup(alice.cfg, []byte("with external senders"), alice.cred(), alice.sig,
		[]Extension{ExternalSendersExtension(senders)})
	if err != nil {
		t.Fatal(err)
	}
	kpB, privB := bob.keyPackage(t)
	kpC, privC := carol.keyPackage(t)
	pc := alice.commit(t, &CommitOptions{Proposals: []Proposal{&AddProposal{KeyPackage: *kpB}, &AddProposal{KeyPackage: *kpC}}, RatchetTreeInWelcome: true})
	bob.join(t, pc, kpB, privB, nil)
	carol.join(t, pc, kpC, privC, nil)
	sameState(t, alice, bob, carol)
	return alice, bob, carol, ds1
}

// TestExternalSenders creates a group whose external_senders extension
// lists two senders (a vector, RFC 9420 Section 12.1.8.1) and has the
// second one propose removing a member.
func TestExternalSenders(t *testing.T) {
	alice, bob, carol, ds1 := externalSendersGroup(t)
	g := alice.g
	remove := &RemoveProposal{Removed: carol.g.LeafIndex()}
	tests := []struct {
		name  string
		index uint32
		c     *client
		p     Proposal
		want  error
	}{
		{"unknown sender index", 2, ds1, remove, ErrUnknownSender},
		{"key of the other sender", 0, ds1, remove, ErrInvalidSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ExternalProposal(g.GroupID(), g.Epoch(), tt.index, tt.p, tt.c.sig, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := g.ProcessMessage(roundTrip(t, m)); !errors.Is(err, tt.want) {
				t.Errorf("ProcessMessage = %v, want %v", err, tt.want)
			}
		})
	}
	if _, err := ExternalProposal(g.GroupID(), g.Epoch(), 1, &UpdateProposal{}, ds1.sig, nil); !errors.Is(err, ErrInvalidProposal) {
		t.Errorf("external Update = %v, want ErrInvalidProposal", err)
	}
	if m, err := ExternalProposal(g.GroupID(), g.Epoch()+1, 1, remove, ds1.sig, nil); err != nil {
		t.Fatal(err)
	} else if _, err := g.ProcessMessage(roundTrip(t, m)); !errors.Is(err, ErrEpochMismatch) {
		t.Errorf("external proposal for the next epoch: %v, want ErrEpochMismatch", err)
	}

	m, err := ExternalProposal(g.GroupID(), g.Epoch(), 1, remove, ds1.sig, []byte("from the DS"))
	if err != nil {
		t.Fatal(err)
	}
	res := process(t, m, alice, bob, carol)
	if res[0].Sender.Type != SenderTypeExternal || res[0].Sender.Index != 1 {
		t.Errorf("sender = %+v, want external 1", res[0].Sender)
	}
	pc := alice.commit(t, nil)
	res = process(t, pc.Message, bob, carol)
	if !res[1].Commit.Removed {
		t.Error("Carol was not removed by the external proposal")
	}
	sameState(t, alice, bob)
	checkMessaging(t, alice, bob)
}
