//go:build integration

package updates

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/runtime/update/rauc"
	"github.com/torpor-dev/torpor/test/internal/testenv"
)

// raucSystem is a RAUC system made of files: two raw slots that are plain
// image files, the custom bootloader backend below (which records what
// rauc asks of it), a keyring holding a test CA made with openssl, and
// the rauc service on a private D-Bus bus (a dbus-daemon of the test's
// own, named to rauc by DBUS_SYSTEM_BUS_ADDRESS), so that nothing of the
// machine's system bus or /etc is used.
type raucSystem struct {
	t      *testing.T
	dir    string
	bus    string // DBUS_SYSTEM_BUS_ADDRESS=...
	signer [2]string
	ca     string
}

// backend is the custom bootloader backend (rauc's
// bootloader-custom-backend): primary and states in files beside it,
// every call appended to backend.log.
const backend = `#!/bin/sh
d=$(dirname "$0")
echo "$@" >> "$d/backend.log"
case "$1" in
get-primary) cat "$d/primary" 2>/dev/null || echo A ;;
set-primary) echo "$2" > "$d/primary" ;;
get-state) cat "$d/state-$2" 2>/dev/null || echo good ;;
set-state) echo "$3" > "$d/state-$2" ;;
get-current) echo A ;;
*) exit 1 ;;
esac
`

const systemConf = `[system]
compatible=torpor-test
bootloader=custom
data-directory=%[1]s/data
mountprefix=%[1]s/mnt

[handlers]
bootloader-custom-backend=%[1]s/backend.sh

[keyring]
path=%[1]s/ca.pem

[slot.rootfs.0]
device=%[1]s/slot-a.img
type=raw
bootname=A

[slot.rootfs.1]
device=%[1]s/slot-b.img
type=raw
bootname=B
`

const busConf = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`

// newRaucSystem makes the system and starts its bus and rauc service
// (stopped at the test's end). rauc mounts a bundle on a loop device: it
// needs root.
func newRaucSystem(t *testing.T) *raucSystem {
	for _, tool := range []string{"rauc", "openssl", "dbus-daemon", "mksquashfs"} {
		testenv.RequireTool(t, tool)
	}
	testenv.RequireRoot(t)
	s := &raucSystem{t: t, dir: t.TempDir()}
	for name, body := range map[string]string{
		"backend.sh":  backend,
		"system.conf": fmt.Sprintf(systemConf, s.dir),
		"bus.conf":    fmt.Sprintf(busConf, filepath.Join(s.dir, "bus.sock")),
	} {
		if err := os.WriteFile(filepath.Join(s.dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, slot := range []string{"slot-a.img", "slot-b.img"} {
		if err := os.WriteFile(filepath.Join(s.dir, slot), make([]byte, 2<<20), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(s.dir, "data"), 0o700)
	s.ca, s.signer = s.makeCA("ca")
	s.bus = "DBUS_SYSTEM_BUS_ADDRESS=unix:path=" + filepath.Join(s.dir, "bus.sock")
	s.start(regexp.MustCompile(`unix:path=`), "dbus-daemon", "--config-file="+filepath.Join(s.dir, "bus.conf"), "--nofork", "--print-address")
	s.start(regexp.MustCompile(`name 'de\.pengutronix\.rauc' acquired`), "rauc", "service",
		"--conf="+filepath.Join(s.dir, "system.conf"), "--override-boot-slot=A")
	return s
}

// start runs a daemon of the system until the test ends, once its output
// matches ready.
func (s *raucSystem) start(ready *regexp.Regexp, name string, args ...string) {
	s.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), s.bus, "G_MESSAGES_DEBUG=all")
	p := startProc(s.t, cmd)
	if p.wait(s.t, ready) == nil {
		s.t.Fatalf("%s ended before it was ready:\n%s", name, p.log())
	}
}

// makeCA makes a CA (its certificate is the keyring) and a signing
// certificate it issues, with openssl: the CA's certificate, and the
// signer's certificate and key.
func (s *raucSystem) makeCA(name string) (string, [2]string) {
	s.t.Helper()
	d := filepath.Join(s.dir, name)
	os.MkdirAll(d, 0o700)
	p := func(f string) string { return filepath.Join(d, f) }
	os.WriteFile(p("ext.cnf"), []byte("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"+
		"subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid\n"), 0o600)
	for _, args := range [][]string{
		{"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", p("ca.key"),
			"-out", p("ca.pem"), "-days", "2", "-subj", "/CN=torpor test CA " + name,
			"-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"},
		{"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", p("signer.key"),
			"-out", p("signer.csr"), "-subj", "/CN=torpor test signer " + name},
		{"x509", "-req", "-in", p("signer.csr"), "-CA", p("ca.pem"), "-CAkey", p("ca.key"), "-CAcreateserial",
			"-out", p("signer.pem"), "-days", "2", "-extfile", p("ext.cnf")},
	} {
		if out, err := exec.Command("openssl", args...).CombinedOutput(); err != nil {
			s.t.Fatalf("openssl %s: %v\n%s", args[0], err, out)
		}
	}
	if name == "ca" {
		if err := os.Rename(p("ca.pem"), filepath.Join(s.dir, "ca.pem")); err != nil {
			s.t.Fatal(err)
		}
		return filepath.Join(s.dir, "ca.pem"), [2]string{p("signer.pem"), p("signer.key")}
	}
	return p("ca.pem"), [2]string{p("signer.pem"), p("signer.key")}
}

// bundle builds a bundle of image (its rootfs slot) with `rauc bundle`,
// signed by signer, in plain format: the verity format needs
// device-mapper, which containers often lack.
func (s *raucSystem) bundle(name string, image []byte, signer [2]string) string {
	s.t.Helper()
	in := filepath.Join(s.dir, name+"-content")
	os.MkdirAll(in, 0o700)
	os.WriteFile(filepath.Join(in, "rootfs.img"), image, 0o600)
	os.WriteFile(filepath.Join(in, "manifest.raucm"), []byte("[update]\ncompatible=torpor-test\nversion=2.0.0\n\n"+
		"[bundle]\nformat=plain\n\n[image.rootfs]\nfilename=rootfs.img\n"), 0o600)
	out := filepath.Join(s.dir, name+".raucb")
	if b, err := exec.Command("rauc", "bundle", "--cert", signer[0], "--key", signer[1], in, out).CombinedOutput(); err != nil {
		s.t.Fatalf("rauc bundle: %v\n%s", err, b)
	}
	return out
}

func (s *raucSystem) installer() *rauc.Installer {
	in, err := rauc.New(rauc.Config{State: filepath.Join(s.dir, "rauc-state.json"), Env: []string{s.bus}})
	if err != nil {
		s.t.Fatal(err)
	}
	return in
}

func (s *raucSystem) file(name string) string {
	b, _ := os.ReadFile(filepath.Join(s.dir, name))
	return string(b)
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

// TestRaucInstall: the hand-off of an operating-system bundle to the real
// rauc (Debian's package). A bundle signed by the keyring's CA is
// installed: the image is in the inactive slot's file, the backend was
// asked to mark slot B bad while writing and then primary, and the
// outcome installed with version 2 is kept. A bundle changed after it was
// signed, and one signed by another CA, fail with rauc's reason, and the
// installed version stays 2.
func TestRaucInstall(t *testing.T) {
	s := newRaucSystem(t)
	in := s.installer()
	image := make([]byte, 1<<20)
	rand.Read(image)
	good := s.bundle("good", image, s.signer)
	o, err := in.Install(context.Background(), good, "os/2/rpi", 2, sum(image))
	if err != nil || o.Result != rauc.Installed || o.Reason != "" {
		t.Fatalf("install = %+v, %v; want installed", o, err)
	}
	slotB, _ := os.ReadFile(filepath.Join(s.dir, "slot-b.img"))
	if !bytes.Equal(slotB[:len(image)], image) {
		t.Fatal("slot B's file does not hold the bundle's image")
	}
	if log := s.file("backend.log"); !strings.Contains(log, "set-state B bad\nset-primary B\n") || strings.TrimSpace(s.file("primary")) != "B" {
		t.Fatalf("the bootloader backend was asked:\n%s; want B marked bad while written, then primary", log)
	}

	bad, _ := os.ReadFile(good)
	copy(bad[1000:], "XXXX")
	tampered := filepath.Join(s.dir, "tampered.raucb")
	os.WriteFile(tampered, bad, 0o600)
	_, otherSigner := s.makeCA("stranger")
	stranger := s.bundle("stranger", image, otherSigner)
	for _, tc := range []struct{ bundle, reason string }{
		{tampered, "signature verification failed"},
		{stranger, "signature verification failed"},
	} {
		o, err := in.Install(context.Background(), tc.bundle, "os/3/rpi", 3, "")
		if err != nil || o.Result != rauc.Failed || !strings.Contains(o.Reason, tc.reason) {
			t.Errorf("install %s = %+v, %v; want failed: %s", filepath.Base(tc.bundle), o, err, tc.reason)
		}
	}
	st, err := in.State()
	if err != nil || st.Installed != 2 || st.Last == nil || st.Last.Result != rauc.Failed || st.Last.Version != 3 {
		t.Fatalf("state = %+v, %v; want installed 2, the last outcome the failed 3", st, err)
	}
}

var (
	brokerRE = regexp.MustCompile(`mqtt=(mqtt://[0-9.:]+)`)
	heldRE   = regexp.MustCompile(`msg="update held for the owner.s confirmation" .*key="(update [^"]+)"`)
	raucRE   = regexp.MustCompile(`msg="OS update handed to rauc" .*result=(\w+)`)
)

// TestConfirmedBundleThroughTheBinaries: the whole hand-off with real
// binaries and the real rauc. The owner signs a rauc bundle as a target
// of type rauc-bundle that needs the owner's confirmation (torporctl
// update sign-target --type rauc-bundle --confirm) and publishes it to
// the relay; torpor-agent, configured with update.rauc and managed over
// the relay's broker, verifies it and holds it (the check says held, the
// bundle is not installed); torporctl device confirm runs it: rauc
// installs the bundle into slot B's file, and the agent logs rauc's
// outcome.
func TestConfirmedBundleThroughTheBinaries(t *testing.T) {
	s := newRaucSystem(t)
	w := newWorld(t)
	broker := w.relay.Wait(t, brokerRE)[1]
	image := make([]byte, 1<<20)
	rand.Read(image)
	bundle := s.bundle("os4", image, s.signer)
	ctl(t, "update", "sign-target", "--dir", w.owner, "--name", "os/4/test", "--version", "4", "--goarch", goruntime.GOARCH,
		"--goarm", "", "--type", "rauc-bundle", "--confirm", bundle)
	ctl(t, "update", "publish", "--dir", w.owner, "--relay", w.relay.URL, "--key", w.opKey, "--root", "1")
	conf := map[string]any{"version": 1,
		"update": map[string]any{"version": 1, "budgetBytes": 8 << 20, "rauc": map[string]any{"env": []string{s.bus}}},
		"mqtt":   map[string]any{"broker": broker, "name": "plot-os", "operators": []string{w.opDID}}}
	agent, _ := w.agentWith(t, "plot-os", conf)
	agent.Wait(t, regexp.MustCompile(`msg="OS update check" .*outcome=held `), "reason=needs-confirmation", "target=os/4/test")
	key := agent.Wait(t, heldRE)[1]
	if strings.TrimSpace(s.file("primary")) != "" || agent.Count(raucRE) != 0 {
		t.Fatalf("the bundle went to rauc before the owner confirmed it:\n%s", agent.Log())
	}

	dev := agent.Wait(t, regexp.MustCompile(`msg="torpor-agent starting" .*did=(did:key:\w+)`))[1]
	cmd := exec.Command(testenv.Binary(t, "torporctl"), "device", "confirm", "--broker", broker, "--key", w.opKey, "--did", dev, "plot-os", key)
	cmd.Env = append(os.Environ(), "TORPOR_KNOWN_DEVICES="+filepath.Join(t.TempDir(), "known"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok") {
		t.Fatalf("torporctl device confirm %q: %v\n%s", key, err, out)
	}
	if m := agent.Wait(t, raucRE); m[1] != rauc.Installed {
		t.Fatalf("rauc's outcome %s:\n%s", m[1], agent.Log())
	}
	slotB, _ := os.ReadFile(filepath.Join(s.dir, "slot-b.img"))
	if !bytes.Equal(slotB[:len(image)], image) || strings.TrimSpace(s.file("primary")) != "B" {
		t.Fatal("slot B does not hold the confirmed bundle's image, or is not primary")
	}
	t.Logf("torporctl device confirm:\n%s", out)
}
