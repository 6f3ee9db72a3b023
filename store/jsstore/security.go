package jsstore

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/nats-io/nats.go"
)

// Security is how a relay authenticates to NATS and checks its servers.
// Anyone who can write to the relay's streams can queue records past
// tokens and bounds, read every queued body and forward requests to
// linked devices (docs/scale-out.md, "NATS account and permissions"), so
// a server off loopback needs both credentials and TLS unless Insecure.
type Security struct {
	// Creds is a NATS credentials file (JWT and NKey seed).
	Creds string
	// NKeyFile is a file holding a user NKey seed (nats.NkeyOptionFromSeed).
	NKeyFile string
	// User and Password authenticate by name and password. The relay
	// reads the password from a file or the environment, never from its
	// command line, where ps shows it.
	User, Password string
	// CAFile, CertFile and KeyFile configure TLS: a CA bundle for the
	// servers' certificates and, for mutual TLS, the client certificate
	// and key (all PEM).
	CAFile, CertFile, KeyFile string
	// Insecure lets the relay use a NATS server off loopback without
	// credentials or without TLS.
	Insecure bool
}

// ErrInsecure is returned (wrapped) by Open for a NATS URL off loopback
// without credentials and TLS, and for a URL that carries a password.
var ErrInsecure = errors.New("jsstore: insecure NATS connection")

// check refuses what would expose the relay's streams or its password.
func (s Security) check(urls []string) error {
	for _, raw := range urls {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("jsstore: NATS URL %s: %v", RedactURL(raw), redactErr(err, raw))
		}
		if _, has := u.User.Password(); has {
			return fmt.Errorf("%w: %s carries a password, which the command line shows to every user of the machine (ps); give it with --nats-user and --nats-password-file or TORPOR_NATS_PASSWORD", ErrInsecure, RedactURL(raw))
		}
		if s.Insecure || loopback(u.Hostname()) {
			continue
		}
		var missing []string
		if !s.hasCredentials() && u.User == nil {
			missing = append(missing, "credentials (--nats-creds, --nats-nkey, or --nats-user with --nats-password-file)")
		}
		if !s.hasTLS() && u.Scheme != "tls" {
			missing = append(missing, "TLS (--nats-ca, or a tls:// URL)")
		}
		if len(missing) > 0 {
			return fmt.Errorf("%w: %s is not on loopback and the relay has no %s: anyone who reaches that server could queue past tokens and bounds, read every queued body and forward requests to linked devices; add them (docs/scale-out.md), or pass --nats-insecure on a network you trust",
				ErrInsecure, RedactURL(raw), strings.Join(missing, " and no "))
		}
	}
	return nil
}

func (s Security) hasCredentials() bool { return s.Creds != "" || s.NKeyFile != "" || s.User != "" }

func (s Security) hasTLS() bool { return s.CAFile != "" || s.CertFile != "" }

// options returns the nats.go options of s.
func (s Security) options() ([]nats.Option, error) {
	var opts []nats.Option
	if s.Creds != "" {
		opts = append(opts, nats.UserCredentials(s.Creds))
	}
	if s.NKeyFile != "" {
		o, err := nats.NkeyOptionFromSeed(s.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("jsstore: NKey seed file %s: %w", s.NKeyFile, err)
		}
		opts = append(opts, o)
	}
	if s.User != "" {
		opts = append(opts, nats.UserInfo(s.User, s.Password))
	}
	if s.CAFile != "" {
		opts = append(opts, nats.RootCAs(s.CAFile))
	}
	if s.CertFile != "" || s.KeyFile != "" {
		opts = append(opts, nats.ClientCert(s.CertFile, s.KeyFile))
	}
	return opts, nil
}

// loopback reports whether host names this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// RedactURL returns raw with any password in it replaced by "xxxxx", for
// logs and errors.
func RedactURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		if i := strings.LastIndex(raw, "@"); i >= 0 {
			return "[redacted]" + raw[i:]
		}
		return raw
	}
	return u.Redacted()
}

// RedactURLs is RedactURL of each URL, comma-separated.
func RedactURLs(urls []string) string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = RedactURL(u)
	}
	return strings.Join(out, ",")
}

// redactErr is err's text with raw, which may hold a password, left out.
func redactErr(err error, raw string) string {
	return strings.ReplaceAll(err.Error(), raw, RedactURL(raw))
}
