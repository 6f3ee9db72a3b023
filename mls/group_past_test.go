package mls

import (
	"bytes"
	"errors"
	"testing"
)

// TestLateApplicationMessages: an application message sent in epoch n and
// delivered after the Commit to n+1 still decrypts (RFC 9420, Section
// 15.3), within Config.PastEpochs; handshake messages of past epochs do
// not.
func TestLateApplicationMessages(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob", "carol")
	alice, bob, carol := cs[0], cs[1], cs[2]
	late, err := alice.g.EncryptApplication([]byte("sent before the commit"), nil)
	if err != nil {
		t.Fatal(err)
	}
	later, err := alice.g.EncryptApplication([]byte("also before"), nil)
	if err != nil {
		t.Fatal(err)
	}
	prop, err := alice.g.Propose(&RemoveProposal{Removed: bob.g.LeafIndex()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pc := bob.commit(t, &CommitOptions{ForcePath: true})
	process(t, pc.Message, alice, carol)

	p := process(t, late, carol)[0]
	if string(p.ApplicationData) != "sent before the commit" || p.Sender.Index != alice.g.LeafIndex() {
		t.Errorf("late message = %q from %d", p.ApplicationData, p.Sender.Index)
	}
	if _, err := carol.g.ProcessMessage(roundTrip(t, late)); !errors.Is(err, ErrGenerationUsed) {
		t.Errorf("replayed late message: %v, want ErrGenerationUsed", err)
	}
	if _, err := carol.g.ProcessMessage(roundTrip(t, prop)); !errors.Is(err, ErrEpochMismatch) {
		t.Errorf("proposal of the past epoch: %v, want ErrEpochMismatch", err)
	}
	// Saved and restored, the group still reads the past epoch.
	restore(t, carol)
	if am, err := carol.g.DecryptApplication(roundTrip(t, later)); err != nil || string(am.Data) != "also before" {
		t.Errorf("late message after restore: %v", err)
	} else if want := alice.g.Member(alice.g.LeafIndex()).SignatureKey; !bytes.Equal(am.SignatureKey, want) {
		t.Errorf("late message SignatureKey = %x, want alice's %x", am.SignatureKey, want)
	}
	checkMessaging(t, cs...)

	// One more epoch: with the default of one past epoch, epoch n is gone.
	old, err := alice.g.EncryptApplication([]byte("epoch n+1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pc = bob.commit(t, &CommitOptions{ForcePath: true})
	process(t, pc.Message, alice, carol)
	pc = bob.commit(t, &CommitOptions{ForcePath: true})
	process(t, pc.Message, alice, carol)
	if _, err := carol.g.ProcessMessage(roundTrip(t, old)); !errors.Is(err, ErrEpochMismatch) {
		t.Errorf("message two epochs old with PastEpochs 0 (=1): %v, want ErrEpochMismatch", err)
	}
}

func TestPastEpochsConfig(t *testing.T) {
	for _, tt := range []struct {
		past    int
		commits int
		ok      bool
	}{
		{-1, 1, false},
		{0, 1, true},
		{2, 2, true},
		{2, 3, false},
	} {
		cs := newTestGroup(t, "alice", "bob")
		alice, bob := cs[0], cs[1]
		bob.cfg.PastEpochs = tt.past
		bob.g.config.PastEpochs = tt.past
		m, err := alice.g.EncryptApplication([]byte("x"), nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < tt.commits; i++ {
			pc := alice.commit(t, &CommitOptions{ForcePath: true})
			process(t, pc.Message, bob)
		}
		if n := len(bob.g.past); n > max(tt.past, 1) && tt.past >= 0 {
			t.Errorf("PastEpochs %d: %d past epochs kept", tt.past, n)
		}
		_, err = bob.g.DecryptApplication(roundTrip(t, m))
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrEpochMismatch)) {
			t.Errorf("PastEpochs %d after %d commits: %v, want ok=%v", tt.past, tt.commits, err, tt.ok)
		}
	}
}

// TestWindowConfig checks that Config.MaxForwardGenerations and
// MaxSkippedKeys reach the secret tree, after a Commit and after a restore.
func TestWindowConfig(t *testing.T) {
	cs := newTestGroup(t, "alice", "bob")
	alice, bob := cs[0], cs[1]
	bob.cfg.MaxForwardGenerations, bob.cfg.MaxSkippedKeys = 2, 1
	bob.g.config = *bob.cfg
	pc := alice.commit(t, &CommitOptions{ForcePath: true})
	process(t, pc.Message, bob)
	for _, restored := range []bool{false, true} {
		if restored {
			restore(t, bob)
		}
		var msgs []*MLSMessage
		for i := 0; i < 4; i++ {
			m, err := alice.g.EncryptApplication([]byte{byte(i)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, roundTrip(t, m))
		}
		if _, err := bob.g.DecryptApplication(msgs[3]); !errors.Is(err, ErrGenerationTooFar) {
			t.Errorf("restored=%v: 3 generations ahead with a window of 2: %v, want ErrGenerationTooFar", restored, err)
		}
		if _, err := bob.g.DecryptApplication(msgs[2]); err != nil {
			t.Fatalf("restored=%v: 2 ahead: %v", restored, err)
		}
		// Of the two skipped keys only one is kept.
		_, err0 := bob.g.DecryptApplication(msgs[0])
		_, err1 := bob.g.DecryptApplication(msgs[1])
		if !errors.Is(err0, ErrGenerationUsed) || err1 != nil {
			t.Errorf("restored=%v: skipped keys: %v, %v; want ErrGenerationUsed, nil", restored, err0, err1)
		}
		if _, err := bob.g.DecryptApplication(msgs[3]); err != nil {
			t.Errorf("restored=%v: generation 3 once the ratchet moved: %v", restored, err)
		}
	}
}
