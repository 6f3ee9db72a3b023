package mls

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/torpor-dev/torpor/mls/internal/vectorfmt"
)

// TestPassiveClientHandlingCommit runs passive-client-handling-commit
// .cs1.json: join by Welcome, then follow each epoch's proposals and Commit
// as a non-committing member (RFC 9420, Section 12.4.2), comparing the
// epoch authenticator.
func TestPassiveClientHandlingCommit(t *testing.T) {
	joins := loadPassiveJoins(t, "passive-client-handling-commit.cs1.json")
	if len(joins) == 0 {
		t.Fatal("no cases")
	}
	commits := 0
	for i, j := range joins {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			g := j.join(t)
			if !bytes.Equal(g.EpochAuthenticator(), j.auth) {
				t.Fatal("initial epoch authenticator differs")
			}
			followEpochs(t, g, j.epochs)
			commits += len(j.epochs)
		})
	}
	if commits < len(joins) {
		t.Fatalf("followed %d commits in %d cases", commits, len(joins))
	}
	t.Logf("followed %d commits in %d cases", commits, len(joins))
}

// followEpochs has g process each epoch's proposals and Commit and checks
// the epoch authenticator after each.
func followEpochs(t *testing.T, g *Group, epochs []vectorfmt.PassiveClientEpoch) {
	t.Helper()
	for e, ep := range epochs {
		for _, p := range ep.Proposals {
			m, err := ParseMLSMessage(p)
			if err != nil {
				t.Fatalf("epoch %d: %v", e, err)
			}
			if _, err := g.ProcessMessage(m); err != nil {
				t.Fatalf("epoch %d: proposal: %v", e, err)
			}
		}
		m, err := ParseMLSMessage(ep.Commit)
		if err != nil {
			t.Fatalf("epoch %d: %v", e, err)
		}
		if _, err := g.ProcessMessage(m); err != nil {
			t.Fatalf("epoch %d: commit: %v", e, err)
		}
		if !bytes.Equal(g.EpochAuthenticator(), ep.EpochAuthenticator) {
			t.Fatalf("epoch %d: epoch authenticator = %x, want %x", e, g.EpochAuthenticator(), ep.EpochAuthenticator)
		}
	}
}
