package main

import (
	"errors"
	"flag"
	"net/netip"
	"time"

	"github.com/torpor-dev/torpor/transport/relay"
)

// httpLimits are the flags that bound what one HTTP client may hold of the
// relay: time per request, idle keep-alives and connections
// (relay.ServerLimits).
type httpLimits relay.ServerLimits

func (l *httpLimits) register(fs *flag.FlagSet) {
	fs.DurationVar(&l.ReadHeaderTimeout, "read-header-timeout", 10*time.Second, "How long a client may take to send a request's headers.")
	fs.DurationVar(&l.ReadTimeout, "read-timeout", 30*time.Second, "How long a request body may take to arrive before it must keep up --min-body-rate; a slower body is cut off. The device link (WebSocket) is exempt.")
	fs.Int64Var(&l.MinBodyRate, "min-body-rate", 1024, "Bytes per second a request body must average once --read-timeout has passed.")
	fs.DurationVar(&l.WriteTimeout, "write-timeout", 60*time.Second, "How long the relay may take to answer a request, from its headers, including the wait for a live device's answer (30 s). The device link (WebSocket) is exempt.")
	fs.DurationVar(&l.IdleTimeout, "idle-timeout", 60*time.Second, "How long an idle keep-alive connection is kept open.")
	fs.IntVar(&l.MaxConns, "max-conns", relay.DefaultMaxConns(), "The most HTTP connections open at once, device links included. At the cap a new connection closes the oldest one that has not sent a request, or is refused (503). The default is half the open-file limit (RLIMIT_NOFILE), between 64 and 16384, leaving room for the MQTT broker and the stores.")
}

func (l *httpLimits) validate() error {
	if l.ReadHeaderTimeout <= 0 || l.ReadTimeout <= 0 || l.WriteTimeout <= 0 || l.IdleTimeout <= 0 {
		return errors.New("--read-header-timeout, --read-timeout, --write-timeout and --idle-timeout must be positive")
	}
	if l.MinBodyRate <= 0 {
		return errors.New("--min-body-rate must be positive")
	}
	if l.MaxConns < 1 {
		return errors.New("--max-conns must be at least 1")
	}
	return nil
}

// keyPackageArgs are the flags of KeyPackage fetches.
type keyPackageArgs struct {
	budget         int
	budgetWindow   time.Duration
	trustedProxies []netip.Prefix
}

func (k *keyPackageArgs) register(fs *flag.FlagSet) {
	fs.IntVar(&k.budget, "keypackage-budget", 64, "How many KeyPackages one agent's pool gives out per --keypackage-budget-window, to all callers together; beyond it the agent's last-resort KeyPackage is served.")
	fs.DurationVar(&k.budgetWindow, "keypackage-budget-window", time.Hour, "The window of --keypackage-budget.")
	fs.Func("trusted-proxy", "A reverse proxy (CIDR prefix or address) whose X-Forwarded-For entries --trust-forwarded-for skips (repeat the flag).", func(s string) error {
		p, err := relay.ParseTrustedProxy(s)
		if err != nil {
			return err
		}
		k.trustedProxies = append(k.trustedProxies, p)
		return nil
	})
}

func (k *keyPackageArgs) validate(rate int) error {
	if rate < 1 || k.budget < 1 || k.budgetWindow <= 0 {
		return errors.New("--keypackage-rate, --keypackage-budget and --keypackage-budget-window must be positive")
	}
	return nil
}
