// Command torpor-relay is the hosted relay every sleeping Torpor device
// pairs with: the device's public A2A endpoint, its bounded durable queue,
// its KeyPackage pool and its MQTT broker. The logic lives in
// transport/relay, store/queue, store/agents and transport/broker; this
// command parses flags, opens the stores and wires things together.
//
// With no flags it is a complete deployment on loopback: HTTP on
// 127.0.0.1:8080 (plain HTTP: put a TLS-terminating proxy in front, or pass
// --tls-cert and --tls-key, and set --public-url to the origin senders
// use), data under ~/.torpor/relay, and an embedded MQTT 5 broker on
// 127.0.0.1:1883. Run "torpor-relay -h" for every flag.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/internal/origin"
	"github.com/torpor-dev/torpor/internal/version"
	"github.com/torpor-dev/torpor/session/kpcheck"
	"github.com/torpor-dev/torpor/store/relaystore"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/relay"
)

// args are the command-line flags.
type args struct {
	listen, publicURL, dataDir string
	tlsCert, tlsKey            string
	mqtt                       mqttArgs
	timeScale                  float64
	timeEpoch                  time.Time // zero: when the relay starts
	bounds                     queuebounds.Bounds
	allowAgents                []string
	corsOrigins, cardOrigins   []string
	perAgentMetrics, trustXFF  bool
	keyPackageRate             int
	ready                      func(httpAddr, mqtt string) // tests: called once serving, after the "listening" line
	logLevel                   slog.Level
	version                    bool
	store                      storeArgs
	http                       httpLimits
	keyPackages                keyPackageArgs
	admission                  admissionArgs
	updates                    updateArgs
	tenants                    tenantArgs
	overdueGrace               time.Duration
	metricsListen              string
}

// registerTime adds --time-scale and --time-epoch.
func (a *args) registerTime(fs *flag.FlagSet) {
	a.timeScale = 1
	fs.Func("time-scale", "Run the relay's clock this many times faster than real time (1, the default, to 100000), for demonstrations: windows, Retry-After and TTLs all follow it.", func(s string) (err error) {
		a.timeScale, err = clock.ParseScale(s)
		return err
	})
	fs.Func("time-epoch", "With --time-scale: the real instant (RFC 3339, or Unix seconds such as 1796320800.25) at which the scaled clock equals real time; it reads epoch + (now − epoch) × scale. Processes given the same scale and epoch agree on the time whenever they start. The default is the moment the relay starts.", func(s string) (err error) {
		a.timeEpoch, err = clock.ParseEpoch(s)
		return err
	})
}

func parseArgs(argv []string, stderr io.Writer) (*args, error) {
	a := &args{bounds: queuebounds.Default()}
	fs := flag.NewFlagSet("torpor-relay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	home, _ := os.UserHomeDir()
	fs.BoolVar(&a.version, "version", false, "Print the version and exit.")
	fs.StringVar(&a.listen, "listen", "127.0.0.1:8080", "The address the HTTP server listens on. It serves plain HTTP unless --tls-cert and --tls-key are given.")
	fs.StringVar(&a.publicURL, "public-url", "", "The relay's public origin, such as https://relay.example. It is the audience every DID Bearer token must name. Empty means http://<listen address>.")
	fs.StringVar(&a.dataDir, "data-dir", filepath.Join(home, ".torpor", "relay"), "The directory of the relay's files (queue.db or queue.log/, agents.db, mqtt.db), created if it does not exist.")
	fs.StringVar(&a.tlsCert, "tls-cert", "", "A PEM certificate file; with --tls-key the relay serves HTTPS itself.")
	fs.StringVar(&a.tlsKey, "tls-key", "", "The PEM private key file for --tls-cert.")
	a.mqtt.register(fs)
	a.registerTime(fs)
	fs.IntVar(&a.bounds.MaxMessages, "max-messages", a.bounds.MaxMessages, "The most queued messages per agent. Devices may ask for fewer.")
	fs.IntVar(&a.bounds.MaxPerPeer, "max-per-peer", a.bounds.MaxPerPeer, "The most queued messages per agent from one sender DID.")
	fs.Int64Var(&a.bounds.MaxPeerBytes, "max-peer-bytes", a.bounds.MaxPeerBytes, "The most queued body bytes per agent from one sender DID, so that one sender cannot fill the queue.")
	fs.Int64Var(&a.bounds.MaxBytes, "max-bytes", a.bounds.MaxBytes, "The most queued body bytes per agent.")
	fs.Int64Var(&a.bounds.MaxMessageSize, "max-message-size", a.bounds.MaxMessageSize, "The largest request body in bytes; larger ones are refused while they are read.")
	fs.DurationVar(&a.bounds.TTL, "ttl", a.bounds.TTL, "How long a queued message is kept before it is purged undelivered.")
	fs.IntVar(&a.bounds.HandshakeMessages, "handshake-reserve-messages", a.bounds.HandshakeMessages, "Extra queue slots per agent that only MLS Welcome and Commit messages may use, so a full queue never costs a sleeping device its group membership.")
	fs.Int64Var(&a.bounds.HandshakeBytes, "handshake-reserve-bytes", a.bounds.HandshakeBytes, "Extra queue bytes per agent reserved for MLS Welcome and Commit messages.")
	fs.Func("allow-agent", "Serve only this agent DID (repeat the flag for more). Without it, any device that proves its DID may link.", func(s string) error {
		a.allowAgents = append(a.allowAgents, s)
		return nil
	})
	fs.Func("cors-origin", "Let browser scripts from this origin (https://app.example, or * for any) call the A2A JSON-RPC endpoint; repeat the flag for more. Without it, browsers may not.", func(s string) error {
		a.corsOrigins = append(a.corsOrigins, s)
		return nil
	})
	fs.Func("card-cors-origin", "Let browser scripts from only these origins read Agent Cards and pulses (repeat the flag). Without it, any origin may (*).", func(s string) error {
		a.cardOrigins = append(a.cardOrigins, s)
		return nil
	})
	fs.BoolVar(&a.perAgentMetrics, "per-agent-metrics", false, "Add per-agent series (labelled by DID and device name) to /metrics: queue, next wake, last pulse, asleep, overdue, held actions, KeyPackages left. Off by default because of their cardinality (docs/operations.md).")
	fs.StringVar(&a.metricsListen, "metrics-listen", "", "Serve /metrics (plain HTTP) on this address, such as 127.0.0.1:9090, and no longer on --listen. Empty serves it on --listen, with everything public (docs/operations.md).")
	fs.DurationVar(&a.overdueGrace, "overdue-grace", relay.DefaultOverdueGrace, "How late a device's promised wake or pulse may be before the fleet console and the per-agent metrics call it overdue.")
	fs.BoolVar(&a.trustXFF, "trust-forwarded-for", false, "Rate-limit KeyPackage fetches per client address by the right-most X-Forwarded-For address that is not a --trusted-proxy, for a relay behind a reverse proxy.")
	fs.IntVar(&a.keyPackageRate, "keypackage-rate", 30, "How many KeyPackages one caller DID may fetch per minute (one client address: ten times as many).")
	a.keyPackages.register(fs)
	a.http.register(fs)
	a.admission.register(fs)
	a.updates.register(fs)
	a.tenants.register(fs)
	fs.TextVar(&a.logLevel, "log-level", slog.LevelInfo, "The least important log level printed: debug, info, warn or error.")
	a.store.register(fs)
	if err := fs.Parse(argv); err != nil {
		return nil, err
	}
	if a.version {
		return a, nil
	}
	if err := a.check(fs.Args()); err != nil {
		return nil, err
	}
	return a, nil
}

// check refuses arguments and flags that do not go together.
func (a *args) check(rest []string) error {
	if len(rest) > 0 {
		return fmt.Errorf("torpor-relay takes no arguments, got %q", rest)
	}
	if (a.tlsCert == "") != (a.tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	if a.publicURL != "" {
		if err := origin.Check("--public-url", a.publicURL); err != nil {
			return err
		}
	}
	if err := a.bounds.Validate(); err != nil {
		return err
	}
	if err := a.http.validate(); err != nil {
		return err
	}
	if err := a.keyPackages.validate(a.keyPackageRate); err != nil {
		return err
	}
	if err := a.admission.validate(); err != nil {
		return err
	}
	if err := a.tenants.validate(); err != nil {
		return err
	}
	if n, q := a.admission.probation.Pool.Links, max(1, a.http.MaxConns/4); n > q && n == relay.DefaultProbation().Pool.Links {
		a.admission.probation.Pool.Links = q // the default, lowered to fit
	} else if n > q {
		return fmt.Errorf("--probation-links %d: at most a quarter of --max-conns (%d), so that devices on probation cannot hold the connections admitted devices need", n, a.http.MaxConns)
	}
	return a.store.validate()
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "queue" {
		os.Exit(queueCommand(os.Args[2:], os.Stdout, os.Stderr))
	}
	a, err := parseArgs(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "torpor-relay:", err)
		os.Exit(2)
	}
	if a.version {
		fmt.Println("torpor-relay", version.Get())
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: a.logLevel}))
	if err := run(ctx, a, log); err != nil {
		log.Error("torpor-relay stopped", "err", err)
		if errors.Is(err, relaystore.ErrRefused) {
			log.Error("not restarting until an operator repaired the store", "exitStatus", exitStore)
			os.Exit(exitStore)
		}
		os.Exit(1)
	}
}

// run opens the stores, starts the broker and serves until ctx ends; a
// clean stop logs one INFO line once everything is closed.
func run(ctx context.Context, a *args, log *slog.Logger) (err error) {
	defer logStopped(ctx, log, &err) // after everything closed
	clk, err := clock.NewScaledAt(nil, a.timeScale, a.timeEpoch)
	if err != nil {
		return err
	}
	st, err := openStores(ctx, a, clk, log)
	if err != nil {
		return err
	}
	defer st.close()
	var closeTenants func()
	if st.tenants, st.usageKey, closeTenants, err = openTenants(a, st.js, clk, log); err != nil {
		return err
	}
	defer closeTenants()
	brokerURL, stopBroker, err := startBroker(a, log, relay.CommandAudit(st.audit, clk, log.With("component", "audit")), st.tenants)
	if err != nil {
		return err
	}
	defer stopBroker()
	st.guard.WriteMarker(relaystore.Names(a.mqtt.external == ""), time.Now()) // now that mqtt.db exists too

	ln, mln, err := a.listeners()
	if err != nil {
		return err
	}
	if mln != nil {
		defer mln.Close()
	}
	scheme, public := a.origin(ln)
	cfg, err := a.relayConfig(st, public, brokerURL, clk, log, mln != nil)
	var closeUpdates func()
	if err == nil {
		closeUpdates, err = a.updates.open(ctx, &cfg, a.dataDir, st.js, clk)
	}
	if err != nil {
		ln.Close()
		return err
	}
	defer closeUpdates()
	r, err := relay.New(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	a.tenants.relay.Store(r)
	st.serve(r)
	stopMetrics := serveMetrics(r, mln, log)
	defer stopMetrics()
	return serve(ctx, a, r, ln, func() {
		attrs := []any{"addr", scheme + "://" + ln.Addr().String(), "publicUrl", public, "dataDir", a.dataDir, "mqtt", brokerURL, "timeScale", a.timeScale}
		log.Info("torpor-relay listening", append(attrs, metricsAttr(mln)...)...)
		if a.ready != nil { // after the line, which a test that waits on ready may count on
			a.ready(ln.Addr().String(), brokerURL)
		}
	})
}

// relayConfig returns the relay's configuration on st, with the flags'
// settings; metricsElsewhere says /metrics has a listener of its own.
func (a *args) relayConfig(st *backend, public, brokerURL string, clk clock.Clock, log *slog.Logger, metricsElsewhere bool) (relay.Config, error) {
	ops, err := a.mqtt.operatorDIDs()
	if err != nil {
		return relay.Config{}, err
	}
	cc, err := a.consoleConfig(st)
	if err != nil {
		return relay.Config{}, err
	}
	access := relay.Access{AllowAgents: a.allowAgents, Operators: ops}
	a.admission.access(&access)
	access.UsageKey = st.usageKey
	return relay.Config{
		PublicURL: public, Stores: relay.Stores{Queue: st.q, States: st.states, StateReads: st.stateReads, Audit: st.audit, Shared: st.shared, Tenants: st.tenants, Rollouts: st.rollouts}, KeyPackages: kpcheck.Verifier{}, Peers: st.peers(),
		Limits: relay.Limits{
			Bounds: a.bounds, KeyPackageRate: a.keyPackageRate,
			KeyPackageBudget: a.keyPackages.budget, KeyPackageBudgetWindow: a.keyPackages.budgetWindow,
			MaxAgents: a.admission.maxAgents, MaxStateBytes: a.admission.maxStateBytes,
			MaxQueueBytes: a.admission.maxQueueBytes, ForgetAfter: a.admission.forgetAfter,
		},
		Access: access,
		HTTP: relay.HTTP{
			TrustForwardedFor: a.trustXFF, TrustedProxies: a.keyPackages.trustedProxies,
			CORSOrigins: a.corsOrigins, CardCORSOrigins: a.cardOrigins,
		},
		Ops: relay.Ops{PerAgentMetrics: a.perAgentMetrics, MetricsElsewhere: metricsElsewhere, MQTTBroker: brokerURL, Console: cc,
			TenantMetricsLimit: a.tenants.metricsLimit, TenantInFlight: a.tenants.inFlight},
		Clock: clk, Logger: log,
	}, nil
}

// origin returns the relay's scheme and its public origin: --public-url,
// or the scheme and ln's address.
func (a *args) origin(ln net.Listener) (scheme, public string) {
	scheme = "http"
	if a.tlsCert != "" {
		scheme = "https"
	}
	if public = a.publicURL; public == "" {
		public = scheme + "://" + ln.Addr().String()
	}
	return scheme, public
}

// listeners opens --listen and --metrics-listen (nil when that is empty).
func (a *args) listeners() (ln, metrics net.Listener, err error) {
	if ln, err = net.Listen("tcp", a.listen); err != nil || a.metricsListen == "" {
		return ln, nil, err
	}
	if metrics, err = net.Listen("tcp", a.metricsListen); err != nil {
		ln.Close()
		return nil, nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	return ln, metrics, nil
}

// metricsAttr is the log attribute naming where /metrics is served when
// it has a listener of its own (ln; none when nil).
func metricsAttr(ln net.Listener) []any {
	if ln == nil {
		return nil
	}
	return []any{"metrics", "http://" + ln.Addr().String() + "/metrics"}
}

// serveMetrics serves r's /metrics alone on ln (nil: nothing to do), with
// deadlines of its own, and returns what stops it.
func serveMetrics(r *relay.Relay, ln net.Listener, log *slog.Logger) func() {
	if ln == nil {
		return func() {}
	}
	srv := &http.Server{Handler: r.MetricsHandler(), ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener", "err", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}
}

// logStopped logs a clean stop, *err nil, with its cause (the signal).
func logStopped(ctx context.Context, log *slog.Logger, err *error) {
	if *err == nil {
		log.Info("torpor-relay stopped", "reason", context.Cause(ctx))
	}
}

// serve serves r's handler on ln and runs r's purge, calls started once
// both run, and returns when ctx ends (nil) or serving fails, after
// closing the device links and shutting the HTTP server down.
func serve(ctx context.Context, a *args, r *relay.Relay, ln net.Listener, started func()) error {
	srv, limited, err := relay.ServerLimits(a.http).Server(r.Handler(), ln, a.tlsCert == "")
	if err != nil {
		ln.Close()
		return err
	}
	ln = limited
	errc := make(chan error, 2)
	go func() {
		if a.tlsCert != "" {
			errc <- srv.ServeTLS(ln, a.tlsCert, a.tlsKey)
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	ran := make(chan struct{})
	go func() { errc <- r.Run(runCtx); close(ran) }()
	started()

	select {
	case <-ctx.Done():
	case err := <-errc:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	cancel()
	shutdown, done := context.WithTimeout(context.Background(), 10*time.Second)
	defer done()
	r.Link().Close()
	err = srv.Shutdown(shutdown)
	<-ran // the relay's periodic work ends before its stores close
	return err
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
