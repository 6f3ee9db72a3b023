//go:build integration

package hostile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
)

// refusedRelay starts torpor-relay with args, which must refuse to start,
// and returns its log.
func refusedRelay(t *testing.T, args ...string) string {
	t.Helper()
	r, exit, log := relaytest.Try(t, t.TempDir(), args...)
	if r != nil {
		r.Kill()
		t.Fatalf("torpor-relay %s started, want it refused", strings.Join(args, " "))
	}
	if exit == 0 {
		t.Errorf("exit status 0, want an error")
	}
	return log
}

// TestNATSPasswordNotOnCommandLine: a password in the --nats URL (which
// ps shows every user) is refused at start, and the refusal does not
// show it.
func TestNATSPasswordNotOnCommandLine(t *testing.T) {
	log := refusedRelay(t, "--store", "jetstream", "--nats", "nats://relay:hunter2-e51c@127.0.0.1:4222",
		"--nats-replicas", "1", "--nats-monitor", "http://127.0.0.1:1")
	if !strings.Contains(log, "carries a password") || !strings.Contains(log, "--nats-password-file") {
		t.Errorf("the refusal does not say why or what to do instead:\n%s", log)
	}
	if strings.Contains(log, "hunter2-e51c") {
		t.Errorf("the relay's log shows the NATS password:\n%s", log)
	}
}

// TestNATSOffLoopbackNeedsCredentialsAndTLS: a NATS server off loopback
// without credentials and TLS is refused before any connection, unless
// --nats-insecure.
func TestNATSOffLoopbackNeedsCredentialsAndTLS(t *testing.T) {
	log := refusedRelay(t, "--store", "jetstream", "--nats", "nats://192.0.2.10:4222")
	for _, want := range []string{"not on loopback", "no credentials", "no TLS", "--nats-insecure"} {
		if !strings.Contains(log, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, log)
		}
	}
}

// TestNATSAccountPermissions: on a NATS server with accounts, the relay
// given the documented user (password from a file) serves; a user of the
// same account without the relay's permissions is refused at start with
// the cause, and a wrong password too, neither showing the password.
func TestNATSAccountPermissions(t *testing.T) {
	srv, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true, Config: jsserver.AccountsConfig("relay-pw-3d81", "metrics-pw-c2a0")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown([]*jsserver.Server{srv}) })
	as := func(user, password string) []string {
		f := filepath.Join(t.TempDir(), "nats-password")
		if err := os.WriteFile(f, []byte(password+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return []string{"--store", "jetstream", "--nats", srv.URL(), "--nats-replicas", "1", "--nats-monitor", srv.MonitorURL(),
			"--nats-user", user, "--nats-password-file", f}
	}
	r := startRelay(t, as("relay", "relay-pw-3d81")...)
	if a := do(t, "GET", r.URL+"/healthz", nil, nil); a.Status != 200 {
		t.Errorf("/healthz of the relay with the documented NATS user: %s", a)
	}
	r.Kill()
	log := refusedRelay(t, as("metrics", "metrics-pw-c2a0")...)
	if !strings.Contains(log, "lacks the relay's permissions") {
		t.Errorf("a NATS user without the relay's permissions: the refusal does not say so:\n%s", log)
	}
	log = refusedRelay(t, as("relay", "wrong-pw-77aa")...)
	if !strings.Contains(log, "Authorization Violation") || strings.Contains(log, "wrong-pw-77aa") {
		t.Errorf("a wrong NATS password: want an authorization error without the password:\n%s", log)
	}
}
