package update_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/theupdateframework/go-tuf/v2/metadata"

	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// TestRootRotation: the owner rotates the root key and the timestamp key
// (root version 2, signed by the old and the new root keys, TUF
// specification Section 5.3.4 and 5.3.5); a device provisioned with
// version 1 walks to 2; the timestamp it kept no longer verifies under
// the new key, so the new key's timestamp, starting again at version 1,
// is taken (Section 5.3.11). A version 3 signed only by a key
// version 2 does not name is refused.
func TestRootRotation(t *testing.T) {
	r := newRepo(t)
	r.publish("agent", payload(2, 10), agentFor(2))
	c := r.device(1)
	if _, err := c.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	oldRoot := r.keys[metadata.ROOT]
	for _, role := range []string{metadata.ROOT, metadata.TIMESTAMP} {
		for _, id := range r.root.Signed.Roles[role].KeyIDs {
			if err := r.root.Signed.RevokeKey(id, role); err != nil {
				t.Fatal(err)
			}
		}
		r.keys[role] = nil
		r.addKey(role)
	}
	r.root.Signed.Version = 2
	r.files["2.root.json"] = sign(r, r.root, append(oldRoot, r.keys[metadata.ROOT]...)...)
	// The relay's new timestamp key signs a timestamp whose version
	// starts again at 1: only a device that dropped the old one takes it.
	r.timestamp.Signed.Version = 0
	r.bump()
	res, err := c.Check(context.Background())
	verified(t, res, err, payload(2, 10))

	r.root.Signed.Version = 3
	stranger := r.addKey(metadata.ROOT)
	r.files["3.root.json"] = sign(r, r.root, stranger)
	_, err = c.Check(context.Background())
	refusal(t, err, update.Signature, "root")
}

// TestConditions: a target's window and supply minimum each hold it back,
// with the reason, until they are met; one that needs the owner's
// confirmation is fetched and verified, and says it awaits the
// confirmation (held in the status) instead of being handed on.
func TestConditions(t *testing.T) {
	r := newRepo(t)
	cu := agentFor(2)
	cu.Window, cu.MinSupplyMV, cu.Confirm = "02:00-04:00", 4800, true
	r.publish("agent", payload(2, 10), cu)
	supply := int64(4500)
	c := r.device(1, func(cfg *update.Config) {
		cfg.Supply = func() (int64, bool) { return supply, true }
	})
	_, err := c.Check(context.Background())
	refusal(t, err, update.Window, "installs in 02:00-04:00 UTC; the trusted time is 2026-06-01T12:00:00Z")
	r.now = time.Date(2026, 6, 2, 3, 0, 0, 0, time.UTC)
	_, err = c.Check(context.Background())
	refusal(t, err, update.Supply, "needs a supply of 4800 mV; the board reads 4500 mV")
	supply = 5000
	res, err := c.Check(context.Background())
	verified(t, res, err, payload(2, 10))
	st := update.Status(res, err)
	if !res.AwaitsConfirmation || st.Outcome != wire.UpdateHeld || st.Reason != string(update.Confirm) ||
		!strings.Contains(st.Detail, "waits for the owner's confirmation") {
		t.Fatalf("a confirm target: awaits %v, status %+v; want held, needs-confirmation", res.AwaitsConfirmation, st)
	}
	if res.SHA256 == "" || !res.Expires.Equal(r.targets.Signed.Expires) {
		t.Errorf("result names sha256 %q, expiry %v; want the target's, the targets metadata's %v", res.SHA256, res.Expires, r.targets.Signed.Expires)
	}
}

// TestWindowWrapsMidnight: "22:00-02:00" is open at 23:30 and 01:00,
// closed at 12:00; "any" is always open.
func TestWindowWrapsMidnight(t *testing.T) {
	day := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		window string
		at     time.Duration
		open   bool
	}{
		{"22:00-02:00", 23*time.Hour + 30*time.Minute, true},
		{"22:00-02:00", time.Hour, true},
		{"22:00-02:00", 12 * time.Hour, false},
		{"22:00-02:00", 2 * time.Hour, false},
		{"any", 12 * time.Hour, true},
	} {
		if got := (update.Custom{Window: tc.window}).InWindow(day.Add(tc.at)); got != tc.open {
			t.Errorf("%s at %v: open %v; want %v", tc.window, tc.at, got, tc.open)
		}
	}
}

// TestBadCustomFields: a target without Torpor's fields, or with a
// window that is not HH:MM-HH:MM, is refused with what is wrong.
func TestBadCustomFields(t *testing.T) {
	r := newRepo(t)
	cu := agentFor(2)
	cu.Window = "2am-4am"
	r.publish("agent", payload(2, 10), cu)
	_, err := r.device(1).Check(context.Background())
	refusal(t, err, update.Invalid, `window "2am-4am"`)

	r = newRepo(t)
	tf, _ := metadata.TargetFile().FromBytes("plain", payload(2, 10), "sha256")
	r.targets.Signed.Targets["plain"] = tf
	r.bump()
	_, err = r.device(1).Check(context.Background())
	refusal(t, err, update.Invalid, `target "plain" has no custom fields`)
}

// TestTargetTypes: one repository lists torpor-agent builds and RAUC
// bundles (custom type rauc-bundle); each check considers only the targets
// of its Config.Type, with its own installed version, and keeps its
// downloads apart (a partial bundle survives the agent's check). A type
// the device does not know is refused.
func TestTargetTypes(t *testing.T) {
	r := newRepo(t)
	r.publish("agent", payload(2, 10), agentFor(2))
	os := agentFor(9)
	os.Type = update.TypeRauc
	r.publish("os-bundle", payload(9, 100_000), os)
	dir := t.TempDir()
	agent := r.deviceIn(dir, 1)
	res, err := agent.Check(context.Background())
	verified(t, res, err, payload(2, 10))
	bundle := r.deviceIn(dir, 3, func(c *update.Config) { c.Type, c.Budget = update.TypeRauc, 64<<10 })
	_, err = bundle.Check(context.Background())
	refusal(t, err, update.Budget, "os-bundle: 65536 of 100000 bytes")
	if res, err := agent.Check(context.Background()); err != nil || res.Path == "" {
		t.Fatalf("the agent's check again: %+v, %v", res, err)
	}
	res, err = bundle.Check(context.Background())
	verified(t, res, err, payload(9, 100_000))
	if res.Custom.Type != update.TypeRauc || res.Bytes != 100_000-65536 {
		t.Errorf("bundle result %+v; want the rauc target, resumed", res)
	}
	done := r.deviceIn(t.TempDir(), 9, func(c *update.Config) { c.Type = update.TypeRauc })
	if res, err := done.Check(context.Background()); err != nil || !res.UpToDate {
		t.Errorf("a device whose rauc installed version 9: %+v, %v; want up to date", res, err)
	}
	odd := agentFor(3)
	odd.Type = "firmware-blob"
	r.publish("odd", payload(3, 10), odd)
	_, err = agent.Check(context.Background())
	refusal(t, err, update.Invalid, `type "firmware-blob"`)
}
