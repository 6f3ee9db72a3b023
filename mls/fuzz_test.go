package mls

import (
	"bytes"
	"errors"
	"testing"

	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

// Round-trip fuzz targets (parse, re-encode, compare) for the structures
// that arrive from the network, seeded from the working group's vectors.
// The codec is strict, so every accepted input has exactly one encoding:
// re-encoding must give the input back.

// vectorSeeds returns the hex fields of messages.cs1.json named field,
// with the first skip bytes (an MLSMessage header) cut off.
func vectorSeeds(f *testing.F, field string, skip int) [][]byte {
	f.Helper()
	cases := vectorCases[vectorfmt.Messages](f, "messages.cs1.json")
	var out [][]byte
	for _, c := range cases[:min(len(cases), 20)] {
		out = append(out, c[field][skip:])
	}
	return out
}

func fuzzRoundTrip(f *testing.F, seeds [][]byte, parse func([]byte) ([]byte, error)) {
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := parse(in)
		if err != nil {
			// A decode failure says where it is: inside the input.
			var pe *ParseError
			if !errors.As(err, &pe) || !errors.Is(err, ErrMalformed) || pe.Offset > len(in) {
				t.Fatalf("parse(%x) = %v, want a *ParseError within the input", in, err)
			}
			return
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("re-encoding differs:\n in %x\nout %x", in, out)
		}
	})
}

func FuzzMLSMessage(f *testing.F) {
	var seeds [][]byte
	for _, field := range []string{"mls_welcome", "mls_group_info", "mls_key_package",
		"public_message_application", "public_message_proposal", "public_message_commit", "private_message"} {
		seeds = append(seeds, vectorSeeds(f, field, 0)[:4]...)
	}
	fuzzRoundTrip(f, seeds, func(in []byte) ([]byte, error) {
		m, err := ParseMLSMessage(in)
		if err != nil {
			return nil, err
		}
		return m.Marshal()
	})
}

func FuzzKeyPackage(f *testing.F) {
	fuzzRoundTrip(f, vectorSeeds(f, "mls_key_package", 4), func(in []byte) ([]byte, error) {
		kp, err := ParseKeyPackage(in)
		if err != nil {
			return nil, err
		}
		_ = kp.Verify(nil) // must not panic
		return kp.Marshal(), nil
	})
}

func FuzzWelcome(f *testing.F) {
	fuzzRoundTrip(f, vectorSeeds(f, "mls_welcome", 4), func(in []byte) ([]byte, error) {
		w, err := ParseWelcome(in)
		if err != nil {
			return nil, err
		}
		return w.Marshal(), nil
	})
}

func FuzzGroupInfo(f *testing.F) {
	fuzzRoundTrip(f, vectorSeeds(f, "mls_group_info", 4), func(in []byte) ([]byte, error) {
		g, err := ParseGroupInfo(in)
		if err != nil {
			return nil, err
		}
		return g.Marshal(), nil
	})
}

func FuzzRatchetTree(f *testing.F) {
	seeds := vectorSeeds(f, "ratchet_tree", 0)
	trees := vectorCases[vectorfmt.TreeValidation](f, "tree-validation.cs1.json")
	for _, c := range trees[:4] {
		seeds = append(seeds, c.Tree)
	}
	fuzzRoundTrip(f, seeds, func(in []byte) ([]byte, error) {
		t, err := ParseRatchetTree(in)
		if err != nil {
			return nil, err
		}
		// Hashing, resolution and validation must not panic on any tree
		// the parser accepts.
		t.TreeHash()
		t.Resolution(uint32(len(t.nodes) - 1))
		_ = t.Validate([]byte("group"), nil)
		return t.Marshal(), nil
	})
}

// FuzzProcessMessage feeds mutated handshake messages to a member: whatever
// the input, ProcessMessage must return an error or a result, never panic
// (which would turn into a sticky error). Seeds are real Commits and
// proposals of a three-member group.
func FuzzProcessMessage(f *testing.F) {
	cs := newTestGroup(f, "alice", "bob", "carol")
	alice, bob := cs[0], cs[1]
	var seeds []*MLSMessage
	pc, err := alice.g.Commit(&CommitOptions{ForcePath: true, Public: true})
	if err != nil {
		f.Fatal(err)
	}
	seeds = append(seeds, pc.Message)
	kp, _ := newClient(f, "dave").keyPackage(f)
	pc, err = alice.g.Commit(&CommitOptions{Public: true, Proposals: []Proposal{&AddProposal{KeyPackage: *kp}, &RemoveProposal{Removed: 2}}})
	if err != nil {
		f.Fatal(err)
	}
	seeds = append(seeds, pc.Message)
	upd, err := cs[2].g.ProposeUpdate(&SendOptions{Public: true})
	if err != nil {
		f.Fatal(err)
	}
	seeds = append(seeds, upd)
	for _, m := range seeds {
		b, _ := m.Marshal()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := ParseMLSMessage(in)
		if err != nil {
			return
		}
		r := *bob.g
		_, _ = r.ProcessMessage(m)
		if r.Err() != nil {
			t.Fatalf("sticky error: %v", r.Err())
		}
	})
}

// FuzzProcessCommit goes below the message protection: a fuzzed Commit is
// processed as if alice had sent it with a valid signature and membership
// tag, so mutations reach proposal validation, path checks and merging.
func FuzzProcessCommit(f *testing.F) {
	cs := newTestGroup(f, "alice", "bob", "carol")
	alice, bob := cs[0], cs[1]
	kp, _ := newClient(f, "dave").keyPackage(f)
	for _, opts := range []*CommitOptions{
		{ForcePath: true, Public: true},
		{Public: true, Proposals: []Proposal{&AddProposal{KeyPackage: *kp}, &RemoveProposal{Removed: 2}}},
		{Public: true, Proposals: []Proposal{&GroupContextExtensionsProposal{}}},
	} {
		pc, err := alice.g.Commit(opts)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(pc.Message.PublicMessage.Content.Commit.Marshal())
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := ParseCommit(in)
		if err != nil {
			return
		}
		r := *bob.g
		ac := &AuthenticatedContent{
			WireFormat: WireFormatPublicMessage,
			Content: FramedContent{GroupID: r.ctx.GroupID, Epoch: r.ctx.Epoch,
				Sender: Sender{Type: SenderTypeMember, Index: 0}, ContentType: ContentTypeCommit, Commit: c},
			Auth: FramedContentAuthData{Signature: make([]byte, 64), ConfirmationTag: make([]byte, 32)},
		}
		func() {
			defer r.recoverSticky(&err)
			_, err = r.processCommit(ac)
		}()
		if r.Err() != nil {
			t.Fatalf("panic: %v", r.Err())
		}
	})
}
