package jsstore_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/agents/agentstest"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/store/queue/queuetest"
	"github.com/torpor-dev/torpor/store/shared/sharedtest"
	"github.com/torpor-dev/torpor/wake"
)

func accountsServer(t *testing.T) *jsserver.Server {
	t.Helper()
	s, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true, Config: jsserver.AccountsConfig("relay-secret-7f3a", "metrics-secret-19c2")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown([]*jsserver.Server{s}) })
	return s
}

func openAs(ctx context.Context, srv *jsserver.Server, user, password string) (*jsstore.Conn, error) {
	return jsstore.Open(ctx, jsstore.Config{URLs: []string{srv.URL()}, Replicas: 1, MonitorURL: srv.MonitorURL(),
		Security: jsstore.Security{User: user, Password: password}})
}

// onAccounts gives each contract check a fresh server with accounts, and
// connects as the relay's user.
func onAccounts(t *testing.T) func(t *testing.T) *jsstore.Conn {
	srv := accountsServer(t)
	return func(t *testing.T) *jsstore.Conn {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := openAs(ctx, srv, "relay", "relay-secret-7f3a")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// TestContractsUnderRelayPermissions: the documented permissions
// (jsserver.RelayPermissions) are enough for everything the stores and
// the fleet do.
func TestContractsUnderRelayPermissions(t *testing.T) {
	t.Run("queue", func(t *testing.T) { queuetest.Run(t, opener(onAccounts, (*jsstore.Conn).OwnQueue)) })
	t.Run("agents", func(t *testing.T) { agentstest.Run(t, opener(onAccounts, (*jsstore.Conn).OwnAgents)) })
	t.Run("shared", func(t *testing.T) { sharedtest.Run(t, sharedOpener(onAccounts)) })
	t.Run("state cache", func(t *testing.T) {
		connect := onAccounts(t)
		a, b := connect(t), connect(t)
		defer a.Close()
		defer b.Close()
		sc, err := a.StateCache()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sc.Get(context.Background(), "did:key:zWatched"); !errors.Is(err, agents.ErrUnknownAgent) {
			t.Fatalf("Get before any write = %v, want ErrUnknownAgent", err)
		}
		if err := b.Agents().Put(context.Background(), "did:key:zWatched", agents.State{Mode: wake.Sleep}, nil, nil); err != nil {
			t.Fatal(err)
		}
		waitMode(t, sc, "did:key:zWatched", wake.Sleep, "another connection's write, under the relay's permissions")
	})
	t.Run("link presence", func(t *testing.T) {
		connect := onAccounts(t)
		a, b := connect(t), connect(t)
		defer a.Close()
		defer b.Close()
		testLinks(t, a, b)
	})
	t.Run("update repository", func(t *testing.T) {
		c := onAccounts(t)(t)
		defer c.Close()
		u, err := c.Updates(t.Context(), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		data := bytes.Repeat([]byte{7}, jsstore.BlobPart+10)
		if err := u.AddBlob("b", data); err != nil {
			t.Fatal(err)
		}
		if b, err := u.BlobRange("b", jsstore.BlobPart-5, 10); err != nil || !bytes.Equal(b, data[:10]) {
			t.Fatalf("a range across two parts under the relay's permissions: %d bytes, %v", len(b), err)
		}
	})
	t.Run("fleet request-reply", func(t *testing.T) {
		c := onAccounts(t)(t)
		defer c.Close()
		nc := c.NATS()
		sub, err := nc.Subscribe("torpor.link.QUdFTlQ.up", func(m *nats.Msg) { m.Respond([]byte("up")) })
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		if m, err := nc.Request("torpor.link.QUdFTlQ.up", nil, 10*time.Second); err != nil || string(m.Data) != "up" {
			t.Fatalf("request on the fleet's subjects under the relay's permissions: %v, %v", m, err)
		}
	})
}

// TestOpenRefusedCredentials: a wrong password and a user of the account
// without the relay's permissions are refused at Open, and no error text
// carries the password.
func TestOpenRefusedCredentials(t *testing.T) {
	srv := accountsServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tt := range []struct{ user, password, want string }{
		{"relay", "wrong-password-5e1b", "Authorization Violation"},
		{"metrics", "metrics-secret-19c2", "ermission"},
	} {
		c, err := openAs(ctx, srv, tt.user, tt.password)
		if err == nil {
			c.Close()
			t.Errorf("Open as %s: no error, want it refused", tt.user)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open as %s: %v, want an error saying %q", tt.user, err, tt.want)
		}
		if strings.Contains(err.Error(), tt.password) {
			t.Errorf("Open as %s: the error shows the password: %v", tt.user, err)
		}
	}
}

// TestSecurityCheck: a NATS URL off loopback needs credentials and TLS
// unless Insecure, and a password in a URL is refused (and never shown).
func TestSecurityCheck(t *testing.T) {
	creds := jsstore.Security{User: "relay", Password: "pw-0c9e"}
	both := jsstore.Security{Creds: "/etc/torpor/relay.creds", CAFile: "/etc/torpor/nats-ca.pem"}
	tests := []struct {
		name string
		url  string
		sec  jsstore.Security
		want string // in the error; "" for none
	}{
		{"loopback, nothing", "nats://127.0.0.1:4222", jsstore.Security{}, ""},
		{"localhost, nothing", "nats://localhost:4222", jsstore.Security{}, ""},
		{"remote, nothing", "nats://10.0.0.7:4222", jsstore.Security{}, "no credentials"},
		{"remote, credentials only", "nats://10.0.0.7:4222", creds, "no TLS"},
		{"remote, TLS only", "tls://nats.example:4222", jsstore.Security{}, "no credentials"},
		{"remote, credentials and TLS", "nats://nats.example:4222", both, ""},
		{"remote, credentials and a tls URL", "tls://nats.example:4222", creds, ""},
		{"remote, insecure", "nats://10.0.0.7:4222", jsstore.Security{Insecure: true}, ""},
		{"password in the URL", "nats://relay:hunter2-9d@127.0.0.1:4222", jsstore.Security{}, "carries a password"},
	}
	for _, tt := range tests {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := jsstore.Open(ctx, jsstore.Config{URLs: []string{tt.url}, Replicas: 1, MonitorURL: "http://127.0.0.1:1", Security: tt.sec})
		cancel()
		insecure := errors.Is(err, jsstore.ErrInsecure)
		switch {
		case tt.want == "" && insecure:
			t.Errorf("%s: refused as insecure: %v", tt.name, err)
		case tt.want != "" && (!insecure || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: Open = %v, want jsstore.ErrInsecure saying %q", tt.name, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error shows the password: %v", tt.name, err)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"nats://relay:hunter2@10.0.0.7:4222": "nats://relay:xxxxx@10.0.0.7:4222",
		"nats://10.0.0.7:4222":               "nats://10.0.0.7:4222",
		"nats://relay:hunter2@ho st:4222":    "[redacted]@ho st:4222",
	} {
		if got := jsstore.RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// serverWithout starts a server with accounts whose relay user has the
// relay's permissions but subject (those of an earlier release).
func serverWithout(t *testing.T, subject string) *jsserver.Server {
	t.Helper()
	old := strings.Replace(jsserver.RelayPermissions, `"`+subject+`", `, "", 1)
	if old == jsserver.RelayPermissions {
		t.Fatalf("RelayPermissions no longer lists %s", subject)
	}
	cfg := strings.Replace(jsserver.AccountsConfig("relay-secret-7f3a", "metrics-secret-19c2"), jsserver.RelayPermissions, old, 1)
	srv, err := jsserver.Start(t.TempDir(), jsserver.Options{SyncAlways: true, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { jsserver.Shutdown([]*jsserver.Server{srv}) })
	return srv
}

// TestOpenRefusedWithoutSharedPermission: a relay user with the previous
// release's permissions (no $KV.TORPOR_SHARED.>) is refused at Open,
// naming the subject, rather than at the first token a relay spends; the
// probe stores nothing.
func TestOpenRefusedWithoutSharedPermission(t *testing.T) {
	srv := serverWithout(t, "$KV.TORPOR_SHARED.>")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := openAs(ctx, srv, "relay", "relay-secret-7f3a")
	if err == nil {
		c.Close()
		t.Fatal("Open without the shared bucket's permission: no error")
	}
	if !strings.Contains(err.Error(), "lacks the relay's permissions") || !strings.Contains(err.Error(), "$KV.TORPOR_SHARED.probe") {
		t.Errorf("Open without the shared bucket's permission: %v; want it to say the user lacks the permission to $KV.TORPOR_SHARED.probe", err)
	}
	ok := onAccounts(t)(t) // a server with the permissions: the probe leaves no key
	defer ok.Close()
	js, err := jetstream.New(ok.NATS())
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "KV_"+jsstore.SharedBucket)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := st.GetLastMsgForSubject(ctx, "$KV.TORPOR_SHARED.probe"); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("the start's probe left %v, %v; want no message", m, err)
	}
}

// TestUpdatesRefusedWithoutPermission: a relay user without the object
// store's subjects (the permissions of the release before the shared
// update repository) is refused when the repository opens, saying which
// permission it lacks, rather than at the first upload.
func TestUpdatesRefusedWithoutPermission(t *testing.T) {
	srv := serverWithout(t, "$O.TORPOR_UPDATES.>")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := openAs(ctx, srv, "relay", "relay-secret-7f3a")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Updates(ctx, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "lacks the update repository's permissions (publish $O.TORPOR_UPDATES.>") {
		t.Errorf("Updates without the object store's permission: %v", err)
	}
}
