package tuf_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"
)

// repoRun is a client run that FuzzRepoDifferential's program builds: a
// repository as go-tuf writes it, changed step by step.
type repoRun struct {
	r    *repo
	ops  []op
	last files
	n    int // keys made, for their seeds
}

var signedRoles = []string{metadata.ROOT, metadata.TIMESTAMP, metadata.SNAPSHOT, metadata.TARGETS}

// step applies instruction code with argument arg to the repository and
// appends the ops a client would load.
func (w *repoRun) step(code, arg byte) {
	r := w.r
	role := signedRoles[int(arg)%len(signedRoles)]
	switch code % 8 {
	case 0: // rotate a role's keys in the next root
		w.n++
		r.rotate(role, 1+int(arg>>2)%2, 1+int(arg>>3)%3, fmt.Sprint(w.n))
		if arg&0x40 != 0 {
			r.rootKeysOf = nil // the old root does not sign
		}
		w.ops = append(w.ops, op{role: "root", b: r.rootFile()})
	case 1: // publish the next versions
		r.bump()
		w.publish(arg)
	case 2: // publish with the timestamp (or snapshot, targets) version set
		v := int64(arg>>2) % 4
		switch role {
		case metadata.TIMESTAMP, metadata.ROOT:
			r.timestamp.Version = v
		case metadata.SNAPSHOT:
			r.snap.Version = v
		default:
			r.targets.Version = v
		}
		w.publish(arg)
	case 3: // a role's expiry moves around the reference time
		setExpires(r, role, t0.Add(time.Duration(int8(arg))*time.Hour))
	case 4: // the next files are signed by an unlisted key, wrongly, or twice
		w.badSigs(role, arg)
	case 5: // the snapshot kept from an earlier run
		if w.last.snap != nil {
			w.ops = append(w.ops, op{role: "snapshot", trusted: true, b: w.last.snap})
		}
	case 6: // a target added
		r.addTarget(fmt.Sprintf("build-%d", arg), []byte{arg})
	case 7: // a threshold changed in the next root
		r.root.Roles[role].Threshold = int(arg>>2) % 3
		r.root.Version++
		r.rootKeysOf = r.keys[metadata.ROOT]
		w.ops = append(w.ops, op{role: "root", b: r.rootFile()})
	}
}

// publish signs the files and appends the ops that load them: all three,
// or (arg's top bits) the timestamp alone or the first two.
func (w *repoRun) publish(arg byte) {
	w.last = w.r.publish()
	w.ops = append(w.ops, w.last.chain()[:1+int(arg>>6)%3]...)
}

func setExpires(r *repo, role string, at time.Time) {
	switch role {
	case metadata.ROOT:
		r.root.Expires = at
	case metadata.TIMESTAMP:
		r.timestamp.Expires = at
	case metadata.SNAPSHOT:
		r.snap.Expires = at
	default:
		r.targets.Expires = at
	}
}

func (w *repoRun) badSigs(role string, arg byte) {
	w.n++
	var s []sig
	switch ks := w.r.keys[role]; arg >> 6 {
	case 0:
		s = by(newKey(w.r.t, fmt.Sprint("stranger-", w.n)))
	case 1:
		s = []sig{{k: ks[0], bad: true}}
	case 2:
		s = append(by(ks...), sig{k: ks[0]})
	default:
		s = nil // back to the role's keys
	}
	switch role {
	case metadata.TIMESTAMP:
		w.r.tsSigs = s
	case metadata.SNAPSHOT:
		w.r.snapSigs = s
	case metadata.TARGETS:
		w.r.tSig = s
	}
}

// FuzzRepoDifferential runs a program of repository changes (root
// rotations, threshold changes, publishes with chosen versions, expiries,
// wrong signatures, a kept snapshot) and the client's loads of what they
// produce through this package and go-tuf/v2's trustedmetadata, at a
// fuzzed reference time: every step must end in the same class and the
// trusted state must be the same. go-tuf may crash where this package
// refuses as invalid; nothing else may differ.
func FuzzRepoDifferential(f *testing.F) {
	f.Add(false, int16(0), []byte{1, 0, 1, 0xc0})
	f.Add(true, int16(30), []byte{0, 0, 1, 0x80, 2, 0x04, 1, 0x80})
	f.Add(false, int16(-2), []byte{3, 1, 1, 0x80, 4, 0x01, 1, 0x80, 5, 0, 7, 0x05, 1, 0x80})
	f.Add(false, int16(1), []byte{0, 0x43, 1, 0x80, 0, 0x01, 6, 9, 2, 0x0a, 5, 0, 1, 0x80})
	f.Fuzz(func(t *testing.T, consistent bool, refHours int16, program []byte) {
		if len(program) > 64 {
			program = program[:64]
		}
		w := &repoRun{r: newRepo(t, consistent)}
		root := w.r.rootFile()
		for i := 0; i+1 < len(program); i += 2 {
			w.step(program[i], program[i+1])
		}
		ref := t0.Add(time.Duration(refHours) * time.Hour)
		ours, theirs := runOurs(root, ref, w.ops), runGoTUF(root, ref, w.ops)
		if ours.newRoot != theirs.newRoot {
			t.Fatalf("New: ours %s, go-tuf %s", ours.newRoot, theirs.newRoot)
		}
		for i := range ours.steps {
			o, g := ours.steps[i], theirs.steps[i]
			if o == g || g == classPanic && o == classInvalid {
				continue
			}
			t.Fatalf("op %d (%s): ours %v, go-tuf %v", i, w.ops[i].role, ours.steps, theirs.steps)
		}
		if !slices.Contains(theirs.steps, classPanic) && ours.state != theirs.state {
			t.Fatalf("trusted state:\nours   %s\ngo-tuf %s", ours.state, theirs.state)
		}
	})
}
