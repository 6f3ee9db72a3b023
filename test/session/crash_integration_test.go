//go:build integration

package session

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/mls"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/store"
)

// childEnv names the child's job file; when set, TestMain runs the child.
const childEnv = "TORPOR_SESSION_CRASH_JOB"

// job is what the parent hands the child: the receiving agent's seed and
// file, the messages to process in order, and whether to stop (and wait to
// be killed) inside the transaction of the first Commit.
type job struct {
	Seed      []byte   `json:"seed"`
	DB        string   `json:"db"`
	Messages  [][]byte `json:"messages"`
	HoldFirst bool     `json:"holdFirst"`
}

func TestMain(m *testing.M) {
	if path := os.Getenv(childEnv); path != "" {
		if err := child(path); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child processes the job's messages, one transaction each, printing
// "ready" once its file is open and "committed i" after each commit. With HoldFirst it prints "holding"
// from inside the first transaction, after the Commit was processed and
// before the transaction commits, and waits there to be killed.
func child(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var j job
	if err := json.Unmarshal(raw, &j); err != nil {
		return err
	}
	key, err := did.NewKeyFromSeed(j.Seed)
	if err != nil {
		return err
	}
	db, err := store.Open(j.DB, nil)
	if err != nil {
		return err
	}
	s, err := session.New(session.Config{Key: key})
	if err != nil {
		return err
	}
	fmt.Println("ready")
	for i, m := range j.Messages {
		err := db.Update(func(tx *bolt.Tx) error {
			if _, err := s.Process(tx, m, did.DID{}); err != nil {
				return err
			}
			if j.HoldFirst {
				fmt.Println("holding")
				select {} // killed here, the transaction open
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		fmt.Println("committed", i)
	}
	return nil
}

// agent is one side of the conversation, in the parent.
type agent struct {
	seed []byte
	key  *did.PrivateKey
	path string
	db   *bolt.DB
	s    *session.Sessions
}

func newAgent(t *testing.T, name string) *agent {
	t.Helper()
	seed := sha256.Sum256([]byte("crash " + name))
	key, err := did.NewKeyFromSeed(seed[:])
	if err != nil {
		t.Fatal(err)
	}
	a := &agent{seed: seed[:], key: key, path: filepath.Join(t.TempDir(), name+".db")}
	a.open(t)
	t.Cleanup(func() { a.close() })
	return a
}

func (a *agent) open(t testing.TB) {
	t.Helper()
	db, err := store.Open(a.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.New(session.Config{Key: a.key})
	if err != nil {
		t.Fatal(err)
	}
	a.db, a.s = db, s
}

func (a *agent) close() {
	if a.db != nil {
		a.db.Close()
		a.db = nil
	}
}

func (a *agent) update(t testing.TB, f func(tx *bolt.Tx) error) {
	t.Helper()
	if err := a.db.Update(f); err != nil {
		t.Fatal(err)
	}
}

// conversation sets up a pair session from alice to bob and returns the
// group and n steps of alice's: a Commit (with a path) every third step,
// application messages otherwise.
func conversation(t *testing.T, alice, bob *agent, n int) ([]byte, [][]byte, []bool) {
	t.Helper()
	var kps [][]byte
	bob.update(t, func(tx *bolt.Tx) (err error) { kps, err = bob.s.Refill(tx, 1); return err })
	var p *session.Pair
	alice.update(t, func(tx *bolt.Tx) (err error) { p, err = alice.s.EstablishPair(tx, bob.key.DID(), kps[0]); return err })
	bob.update(t, func(tx *bolt.Tx) error {
		_, err := bob.s.Join(tx, p.Handshake.Welcome, p.Handshake.RatchetTree, session.JoinOptions{Initiator: alice.key.DID(), Policy: session.Policy{Committer: alice.key.DID()}})
		return err
	})
	alice.update(t, func(tx *bolt.Tx) error { return alice.s.Delivered(tx, p.Group) })
	var msgs [][]byte
	var commits []bool
	for i := range n {
		if i%3 == 0 {
			alice.update(t, func(tx *bolt.Tx) error {
				c, err := alice.s.Commit(tx, p.Group, session.Change{Update: true, Public: i%2 == 0})
				if err == nil {
					msgs = append(msgs, c.Commit)
				}
				return err
			})
			commits = append(commits, true)
			continue
		}
		alice.update(t, func(tx *bolt.Tx) error {
			m, err := alice.s.Encrypt(tx, p.Group, []byte(fmt.Sprintf("message %d", i)))
			msgs = append(msgs, m)
			return err
		})
		commits = append(commits, false)
	}
	return p.Group, msgs, commits
}

// runChild starts the child on the job and returns it with its stdout.
func runChild(t *testing.T, j job) (*exec.Cmd, *bufio.Scanner, *bytes.Buffer) {
	t.Helper()
	raw, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "job.json")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, bufio.NewScanner(out), &stderr
}

func kill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatal(err)
	}
	cmd.Wait()
}

// TestKillInsideCommitTransaction: the child processes a Commit and is
// killed before its transaction commits. After reopening, the group is in
// the epoch before the Commit, the Commit processes again, and the next
// message decrypts.
func TestKillInsideCommitTransaction(t *testing.T) {
	alice, bob := newAgent(t, "alice"), newAgent(t, "bob")
	group, msgs, commits := conversation(t, alice, bob, 5)
	if !commits[0] {
		t.Fatal("the conversation does not start with a Commit")
	}
	var before uint64
	bob.update(t, func(tx *bolt.Tx) error {
		in, err := bob.s.Info(tx, group)
		before = in.Epoch
		return err
	})
	bob.close()

	cmd, out, stderr := runChild(t, job{Seed: bob.seed, DB: bob.path, Messages: msgs[:1], HoldFirst: true})
	if !out.Scan() || out.Text() != "ready" || !out.Scan() || out.Text() != "holding" {
		kill(t, cmd)
		t.Fatalf("child did not reach the hold: %q; stderr: %s", out.Text(), stderr)
	}
	kill(t, cmd)

	bob.open(t)
	bob.update(t, func(tx *bolt.Tx) error {
		in, err := bob.s.Info(tx, group)
		if err == nil && in.Epoch != before {
			t.Errorf("epoch after the crash = %d, want %d (the Commit's transaction never committed)", in.Epoch, before)
		}
		return err
	})
	replayFrom(t, bob, msgs, commits, 0)
	agreeWith(t, alice, bob, group)
}

// TestKillAtRandomPoints kills the child at random points of a
// conversation of Commits and messages, many times.
func TestKillAtRandomPoints(t *testing.T) {
	const trials, steps = 20, 90
	seed := uint64(time.Now().UnixNano())
	t.Logf("random seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	alice, bob := newAgent(t, "alice"), newAgent(t, "bob")
	group, msgs, commits := conversation(t, alice, bob, steps)
	bob.close()
	next := 0 // first message the child may not have committed
	for trial := 0; trial < trials && next < len(msgs); trial++ {
		cmd, out, stderr := runChild(t, job{Seed: bob.seed, DB: bob.path, Messages: msgs[next:]})
		if !out.Scan() || out.Text() != "ready" {
			kill(t, cmd)
			t.Fatalf("child did not start: %s", stderr)
		}
		// Each message is a transaction with fsync: a few milliseconds.
		delay := time.Duration(rng.IntN(12000)) * time.Microsecond
		timer := time.AfterFunc(delay, func() { cmd.Process.Kill() })
		done := next
		for out.Scan() {
			f := strings.Fields(out.Text())
			if len(f) == 2 && f[0] == "committed" {
				i, _ := strconv.Atoi(f[1])
				done = next + i + 1
			}
		}
		timer.Stop()
		err := cmd.Wait()
		if err != nil && !strings.Contains(err.Error(), "killed") {
			t.Fatalf("trial %d: child: %v; stderr: %s", trial, err, stderr)
		}
		// The child may have committed one more message than it reported:
		// process it again, expecting "already applied" at most.
		bob.open(t)
		next = settle(t, bob, group, msgs, commits, done)
		bob.close()
		t.Logf("trial %d: killed after %v, %d of %d messages committed", trial, delay, next, len(msgs))
	}
	bob.open(t)
	replayFrom(t, bob, msgs, commits, next)
	agreeWith(t, alice, bob, group)
}

// settle checks the state after a crash: message done was either applied
// by the killed child (then processing it again fails as a replay) or not
// (then it processes now). It returns the index of the next message to
// process.
func settle(t *testing.T, bob *agent, group []byte, msgs [][]byte, commits []bool, done int) int {
	t.Helper()
	if done >= len(msgs) {
		return done
	}
	err := bob.db.Update(func(tx *bolt.Tx) error {
		_, err := bob.s.Process(tx, msgs[done], did.DID{})
		return err
	})
	switch {
	case err == nil:
	case commits[done] && errors.Is(err, session.ErrStaleEpoch):
	case !commits[done] && errors.Is(err, mls.ErrGenerationUsed):
	case errors.Is(err, session.ErrDropped):
		t.Fatalf("the session was dropped after a crash: %v", err)
	default:
		t.Fatalf("message %d after the crash: %v", done, err)
	}
	return done + 1
}

// replayFrom processes msgs[from:] and requires every one to succeed.
func replayFrom(t *testing.T, bob *agent, msgs [][]byte, commits []bool, from int) {
	t.Helper()
	for i := from; i < len(msgs); i++ {
		bob.update(t, func(tx *bolt.Tx) error {
			r, err := bob.s.Process(tx, msgs[i], did.DID{})
			if err == nil && (r.Kind == session.KindCommit) != commits[i] {
				t.Errorf("message %d processed as %v", i, r.Kind)
			}
			if err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
			return nil
		})
	}
}

func agreeWith(t *testing.T, alice, bob *agent, group []byte) {
	t.Helper()
	var a, b *session.Info
	alice.update(t, func(tx *bolt.Tx) (err error) { a, err = alice.s.Info(tx, group); return err })
	bob.update(t, func(tx *bolt.Tx) (err error) { b, err = bob.s.Info(tx, group); return err })
	if a.Epoch != b.Epoch || !bytes.Equal(a.EpochAuthenticator, b.EpochAuthenticator) {
		t.Fatalf("alice at epoch %d, bob at %d: they disagree", a.Epoch, b.Epoch)
	}
	// And bob can still answer.
	var m []byte
	bob.update(t, func(tx *bolt.Tx) (err error) { m, err = bob.s.Encrypt(tx, group, []byte("still here")); return err })
	alice.update(t, func(tx *bolt.Tx) error {
		r, err := alice.s.Process(tx, m, did.DID{})
		if err == nil && string(r.Plaintext) != "still here" {
			t.Errorf("alice got %q", r.Plaintext)
		}
		return err
	})
}
