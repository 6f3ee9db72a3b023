package updaterepo_test

import (
	"context"
	"crypto/ed25519"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/torpor-dev/torpor/internal/tufsign"
	"github.com/torpor-dev/torpor/runtime/update"
)

func timestampOf(t *testing.T, e *env) *metadata.Metadata[metadata.TimestampType] {
	b, err := e.repo.Metadata("timestamp.json", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := metadata.Timestamp().FromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// eachPublished runs f on each backend with a new env of version 2 of
// target "a" published.
func eachPublished(t *testing.T, f func(t *testing.T, e *env)) {
	eachBackend(t, func(t *testing.T, open opener) {
		e := newEnv(t, open, 0)
		if err := e.publish("a", build(10, 1), 2); err != nil {
			t.Fatal(err)
		}
		f(t, e)
	})
}

// TestRefresh: the relay re-signs the timestamp when less than half its
// life is left and not before; past half the snapshot's, it signs a new
// snapshot naming the same targets, and devices keep taking them.
func TestRefresh(t *testing.T) {
	eachPublished(t, func(t *testing.T, e *env) {
		v := timestampOf(t, e).Signed.Version
		e.clk.Advance(11 * time.Hour)
		if signed, err := e.repo.Refresh(); signed || err != nil {
			t.Fatalf("refresh at 11 h of 24: %v, %v; want nothing signed", signed, err)
		}
		e.clk.Advance(2 * time.Hour)
		if signed, err := e.repo.Refresh(); !signed || err != nil {
			t.Fatalf("refresh at 13 h of 24: %v, %v; want a new timestamp", signed, err)
		}
		ts := timestampOf(t, e)
		if ts.Signed.Version != v+1 || !ts.Signed.Expires.Equal(e.clk.Now().Add(24*time.Hour).UTC()) {
			t.Errorf("timestamp version %d expiring %v", ts.Signed.Version, ts.Signed.Expires)
		}
		e.clk.Advance(4 * 24 * time.Hour)
		if signed, err := e.repo.Refresh(); !signed || err != nil {
			t.Fatalf("refresh at 4 days: %v, %v", signed, err)
		}
		if ts := timestampOf(t, e); ts.Signed.Meta["snapshot.json"].Version != 2 {
			t.Errorf("timestamp names snapshot %d; want the re-signed 2", ts.Signed.Meta["snapshot.json"].Version)
		}
		if res, err := e.device().Check(context.Background()); err != nil || res.Target != "a" {
			t.Errorf("device after the refreshes: %+v, %v", res, err)
		}
	})
}

// TestDeviceSleptPastExpiry: a device checks, sleeps three days with no
// refresh on the relay, wakes to an expired timestamp and gets a fresh
// one signed for it in the same check.
func TestDeviceSleptPastExpiry(t *testing.T) {
	eachPublished(t, func(t *testing.T, e *env) {
		if _, err := e.device().Check(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(72 * time.Hour)
		if err := e.publish("b", build(10, 2), 3); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(72 * time.Hour)
		res, err := e.device().Check(context.Background())
		if err != nil || res.Target != "b" {
			t.Fatalf("after sleeping past the timestamp: %+v, %v", res, err)
		}
	})
}

// TestRootRotationAtTheRelay: the next root signed by the old and the new
// root keys is taken; one signed by the new key alone, or one that does
// not name the relay's online keys, is refused.
func TestRootRotationAtTheRelay(t *testing.T) {
	eachBackend(t, func(t *testing.T, open opener) {
		e := newEnv(t, open, 0)
		newKey := key(t)
		roles := e.roles(newKey)
		if err := tufsign.SetRoles(e.root, roles); err != nil {
			t.Fatal(err)
		}
		e.root.Signed.Version = 2
		alone, _ := tufsign.Sign(e.root, newKey)
		if err := e.repo.SetRoot(alone); err == nil || !strings.Contains(err.Error(), "not enough signatures") {
			t.Errorf("a root signed by the new key alone: %v", err)
		}
		both, _ := tufsign.Sign(e.root, e.rootKey, newKey)
		if err := e.repo.SetRoot(both); err != nil {
			t.Fatalf("a root signed by both: %v", err)
		}
		roles.Timestamp = key(t).Public().(ed25519.PublicKey)
		tufsign.SetRoles(e.root, roles)
		e.root.Signed.Version = 3
		other, _ := tufsign.Sign(e.root, newKey)
		if err := e.repo.SetRoot(other); err == nil || !strings.Contains(err.Error(), "its timestamp role is not this relay's key") {
			t.Errorf("a root naming another timestamp key: %v", err)
		}
		if err := e.publish("a", build(10, 1), 2); err != nil {
			t.Fatal(err)
		}
		res, err := e.device().Check(context.Background())
		if err != nil || res.Target != "a" {
			t.Errorf("a device provisioned with root 1 after the rotation: %+v, %v", res, err)
		}
	})
}

// TestSurvivesReopen: what was published is there after the relay
// restarts, and it goes on from the versions it had.
func TestSurvivesReopen(t *testing.T) {
	eachPublished(t, func(t *testing.T, e *env) {
		v := timestampOf(t, e).Signed.Version
		used, _ := e.repo.Used()
		e.repo.Close()
		e.open()
		if u, _ := e.repo.Used(); u != used {
			t.Errorf("used %d after reopening; want %d", u, used)
		}
		if err := e.publish("b", build(10, 2), 3); err != nil {
			t.Fatal(err)
		}
		if ts := timestampOf(t, e); ts.Signed.Version != v+1 {
			t.Errorf("timestamp version %d after reopening; want %d", ts.Signed.Version, v+1)
		}
		res, err := e.device().Check(context.Background())
		if err != nil || !reflect.DeepEqual(res.Custom, update.Custom{Version: 3, GOARCH: "arm", GOARM: "6"}) {
			t.Errorf("device: %+v, %v", res, err)
		}
	})
}

// TestRelayKeysRotated: the relay's online keys are replaced. The relay,
// restarted with the new keys, takes the owner's next root naming them
// and signs the published targets again with them; a device provisioned
// with root version 1 walks to version 2 and takes the new timestamp.
func TestRelayKeysRotated(t *testing.T) {
	eachPublished(t, func(t *testing.T, e *env) {
		if _, err := e.device().Check(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.snapKey, e.tsKey = key(t), key(t)
		e.repo.Close()
		e.open()
		if err := tufsign.SetRoles(e.root, e.roles(e.rootKey)); err != nil {
			t.Fatal(err)
		}
		e.root.Signed.Version = 2
		b, _ := tufsign.Sign(e.root, e.rootKey)
		if err := e.repo.SetRoot(b); err != nil {
			t.Fatal(err)
		}
		if v := timestampOf(t, e).Signed.Version; v != 2 {
			t.Errorf("timestamp version %d after the root; want 2, signed with the new key", v)
		}
		res, err := e.device().Check(context.Background())
		if err != nil || res.Target != "a" {
			t.Fatalf("a device after the relay's keys were rotated: %+v, %v", res, err)
		}
	})
}

// TestPublishAgain: the current targets uploaded again (a publish run
// twice) are taken and sign nothing new.
func TestPublishAgain(t *testing.T) {
	eachPublished(t, func(t *testing.T, e *env) {
		v := timestampOf(t, e).Signed.Version
		cur, err := e.repo.Metadata("targets.json", 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.repo.Publish(cur); err != nil {
			t.Fatalf("the current targets again: %v", err)
		}
		if got := timestampOf(t, e).Signed.Version; got != v {
			t.Errorf("timestamp version %d after publishing the same targets; want %d", got, v)
		}
	})
}

// TestOtherKeysSignNothing: a relay started with other online keys than
// the root names (a relay of the cluster given the wrong files) signs
// nothing: its refresh and its publish are refused, saying why, and the
// repository stays as the right keys signed it.
func TestOtherKeysSignNothing(t *testing.T) {
	eachPublished(t, func(t *testing.T, e *env) {
		v := timestampOf(t, e).Signed.Version
		e.repo.Close()
		good := e.snapKey
		e.snapKey = key(t)
		e.open()
		e.clk.Advance(13 * time.Hour)
		if signed, err := e.repo.Refresh(); signed || err == nil || !strings.Contains(err.Error(), "not signing: root version 1: its snapshot role is not this relay's key") {
			t.Errorf("refresh with another snapshot key: %v, %v", signed, err)
		}
		if _, err := e.repo.AddBlob(build(10, 2)); err != nil {
			t.Fatal(err)
		}
		if err := e.repo.Publish(e.nextTargets("b", build(10, 2), 3)); err == nil || !strings.Contains(err.Error(), "not signing") {
			t.Errorf("publish with another snapshot key: %v", err)
		}
		if got := timestampOf(t, e).Signed.Version; got != v {
			t.Errorf("timestamp version %d; want %d, unchanged", got, v)
		}
		e.repo.Close()
		e.snapKey = good
		e.open()
		if signed, err := e.repo.Refresh(); !signed || err != nil {
			t.Errorf("refresh with the right keys again: %v, %v", signed, err)
		}
	})
}
