package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/transport/relay"
	"github.com/torpor-dev/torpor/transport/relay/fleet"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/store/audit"
	"github.com/torpor-dev/torpor/store/jsstore"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/store/queue/recordlog"
	"github.com/torpor-dev/torpor/store/relaystore"
	"github.com/torpor-dev/torpor/store/rollouts"
	"github.com/torpor-dev/torpor/store/shared"
	"github.com/torpor-dev/torpor/store/tenants"
)

// storeArgs choose the backend of the queue and the agent states: the
// embedded bbolt files (the default) or NATS JetStream, shared by every
// relay of a fleet (docs/scale-out.md).
type storeArgs struct {
	kind string
	// queueEngine is the embedded queue's format with --store bolt: bolt
	// (queue.db) or log (the record log in queue.log/).
	queueEngine string
	engineSet   bool // --queue-engine was given
	// segmentSize is --queue-segment-size (queue.LogOptions.SegmentSize).
	segmentSize int64
	// reinit is --reinitialise (relaystore.Guard.Reinitialise).
	reinit bool
	nats   jsstore.Config
	// natsPasswordFile is --nats-password-file.
	natsPasswordFile string
}

// natsPasswordEnv holds the password of --nats-user when no
// --nats-password-file is given.
const natsPasswordEnv = "TORPOR_NATS_PASSWORD"

func (s *storeArgs) register(fs *flag.FlagSet) {
	s.kind = "bolt"
	fs.StringVar(&s.kind, "store", "bolt", "Where the queue and the agent states live: bolt (files in --data-dir, one relay) or jetstream (NATS JetStream, shared by many relays; see --nats).")
	s.queueEngine = "log"
	fs.Func("queue-engine", "With --store bolt, the queue's format: log (the default: an append-only record log in queue.log/ with its index in memory, which imports an existing queue.db once; torpor-relay queue export-bolt goes back) or bolt (queue.db).", func(v string) error {
		s.queueEngine, s.engineSet = v, true
		return nil
	})
	fs.Int64Var(&s.segmentSize, "queue-segment-size", 0, "With --queue-engine log: the size in bytes at which the record log starts a new segment file (0: 64 MiB; at most 1 GiB). Only whole segments are freed, so smaller ones give disk back sooner after a drain, at the cost of more files.")
	fs.BoolVar(&s.reinit, "reinitialise", false, reinitialiseHelp)
	fs.Func("nats", "With --store jetstream: the NATS server URLs, comma-separated (nats://host:4222,...).", func(v string) error {
		s.nats.URLs = append(s.nats.URLs, strings.Split(v, ",")...)
		return nil
	})
	sec := &s.nats.Security
	fs.StringVar(&sec.Creds, "nats-creds", "", "A NATS credentials file (JWT and NKey seed).")
	fs.StringVar(&sec.NKeyFile, "nats-nkey", "", "A file holding the NKey seed of the relay's NATS user.")
	fs.StringVar(&sec.User, "nats-user", "", "The relay's NATS user name; its password comes from --nats-password-file or the environment variable "+natsPasswordEnv+", never from the command line.")
	fs.StringVar(&s.natsPasswordFile, "nats-password-file", "", "A file holding the password of --nats-user (its first line).")
	fs.StringVar(&sec.CAFile, "nats-ca", "", "A PEM CA bundle that signs the NATS servers' TLS certificates.")
	fs.StringVar(&sec.CertFile, "nats-cert", "", "A PEM client certificate for mutual TLS with NATS (with --nats-key).")
	fs.StringVar(&sec.KeyFile, "nats-key", "", "The PEM private key of --nats-cert.")
	fs.BoolVar(&sec.Insecure, "nats-insecure", false, "Use a NATS server that is not on loopback without credentials or without TLS (a network you trust entirely): by default the relay refuses to start, since anyone who reaches the server can queue past tokens and bounds and read every queued body.")
	fs.IntVar(&s.nats.Replicas, "nats-replicas", 3, "Replicas of the JetStream streams and bucket: 3 or 5 on a cluster, or 1 on a server with jetstream { sync_interval: always } (checked through --nats-monitor).")
	fs.StringVar(&s.nats.Prefix, "nats-prefix", "TORPOR", "The prefix of the JetStream streams and bucket (TORPOR_QUEUE_RECORDS, ...), so that separate fleets can share a NATS account. Every relay of one fleet uses the same.")
	fs.StringVar(&s.nats.MonitorURL, "nats-monitor", "", "The monitoring URL (http://host:8222) of the NATS server, needed with --nats-replicas 1 to check that it fsyncs every write.")
}

func (s *storeArgs) validate() error {
	switch s.kind {
	case "bolt":
		if len(s.nats.URLs) > 0 {
			return errors.New("--nats needs --store jetstream")
		}
		if s.queueEngine != "bolt" && s.queueEngine != "log" {
			return fmt.Errorf("--queue-engine %q: want bolt or log", s.queueEngine)
		}
		if s.segmentSize < 0 || (s.segmentSize > 0 && s.queueEngine != "log") {
			return fmt.Errorf("--queue-segment-size %d: want a positive size with --queue-engine log", s.segmentSize)
		}
	case "jetstream":
		if len(s.nats.URLs) == 0 {
			return errors.New("--store jetstream needs --nats URL")
		}
		if s.engineSet {
			return errors.New("--queue-engine needs --store bolt")
		}
		if s.reinit {
			return errors.New("--reinitialise needs --store bolt (JetStream keeps no files in --data-dir)")
		}
		return s.readNATSPassword()
	default:
		return fmt.Errorf("--store %q: want bolt or jetstream", s.kind)
	}
	return nil
}

// backend is the stores a relay runs on and, on JetStream, its place in
// the fleet.
type backend struct {
	q      queue.Store
	states agents.Store
	// audit is the audit log of operator actions: audit.db with bolt, a
	// stream on JetStream.
	audit audit.Store
	// rollouts is the update rollouts: rollouts.db with bolt, keys of
	// the agents bucket on JetStream.
	rollouts rollouts.Store
	// shared is the fleet's shared memories on JetStream (spent tokens,
	// KeyPackage budgets, the console's key); nil with bolt, where the
	// relay keeps its own in memory.
	shared shared.Store
	fleet  *fleet.Fleet // nil with bolt
	// js is the JetStream connection the stores share; nil with bolt.
	js *jsstore.Conn
	// stateReads answers the request path's state reads on JetStream
	// (jsstore.StateCache); nil with bolt.
	stateReads relay.StateReader
	close      func()
	// guard checked the files in the data directory (nil on JetStream);
	// it writes the store marker once the broker's file is open too.
	guard *relaystore.Guard
	// tenants and usageKey are a hosted relay's (--tenants, --usage-key);
	// nil otherwise.
	tenants  tenants.Store
	usageKey *did.PrivateKey
}

// peers returns the fleet as relay.Config.Peers: nil with bolt.
func (b *backend) peers() relay.Peers {
	if b.fleet == nil {
		return nil
	}
	return b.fleet
}

// serve lets the fleet reach r's device links.
func (b *backend) serve(r *relay.Relay) {
	if b.fleet != nil {
		b.fleet.Serve(r.Link())
	}
}

// openStores opens the queue and the agent states of the backend a
// chose and, on JetStream, joins the fleet.
func openStores(ctx context.Context, a *args, clk clock.Clock, log *slog.Logger) (*backend, error) {
	if a.store.kind == "jetstream" {
		cfg := a.store.nats
		cfg.Name, cfg.Clock = "torpor-relay", clock.Unscaled(clk)
		c, err := jsstore.Open(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("--store jetstream (--nats %s, --nats-replicas %d): %w", jsstore.RedactURLs(cfg.URLs), cfg.Replicas, err)
		}
		if n, max := a.bounds.MaxMessages+a.bounds.HandshakeMessages, c.MaxMessages(); n > max {
			c.Close()
			return nil, fmt.Errorf("--store jetstream: --max-messages %d and --handshake-reserve-messages %d make %d records per agent; a marker naming every record of an agent's queue must fit one NATS message (max_payload), which allows %d", a.bounds.MaxMessages, a.bounds.HandshakeMessages, n, max)
		}
		al, err := c.Audit(ctx, 0)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("--store jetstream: the audit log: %w", err)
		}
		sc, err := c.StateCache()
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("--store jetstream: watching the agents' states: %w", err)
		}
		q, states := c.Queue(), c.Agents()
		f := fleet.New(c.NATS(), clock.Unscaled(clk), log.With("component", "fleet"))
		links, err := c.Links(f.ID())
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("--store jetstream: watching the links' presence: %w", err)
		}
		f.UsePresence(links, jsstore.LinkKeyRefresh)
		return &backend{q: q, states: states, audit: al, shared: c.Shared(), rollouts: c.Rollouts(), fleet: f, js: c, stateReads: sc, close: func() { f.Close(); q.Close(); states.Close(); c.Close() }}, nil
	}
	return openBoltStores(a, log)
}

// openBoltStores opens the relay's files in its data directory, checked
// by relaystore's guard first.
func openBoltStores(a *args, log *slog.Logger) (*backend, error) {
	g := &relaystore.Guard{DataDir: a.dataDir, Reinitialise: a.store.reinit, Logger: log}
	if err := g.Check(a.mqtt.external == ""); err != nil {
		return nil, err
	}
	bq, err := openQueueSized(a.dataDir, a.store.queueEngine, a.store.segmentSize, log)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(a.dataDir, "agents.db")
	bs, err := agents.OpenBolt(path, nil)
	if err != nil {
		bq.Close()
		return nil, relaystore.Fix(path, err)
	}
	path = filepath.Join(a.dataDir, "audit.db")
	al, err := audit.OpenBolt(path, 0)
	if err != nil {
		bs.Close()
		bq.Close()
		return nil, relaystore.Fix(path, err)
	}
	path = filepath.Join(a.dataDir, relaystore.Rollouts)
	ro, err := rollouts.OpenBolt(path)
	if err != nil {
		al.Close()
		bs.Close()
		bq.Close()
		return nil, relaystore.Fix(path, err)
	}
	return &backend{q: bq, states: bs, audit: al, rollouts: ro, guard: g, close: func() { ro.Close(); al.Close(); bs.Close(); bq.Close() }}, nil
}

// openQueue opens the embedded queue in dataDir: queue.db with engine
// bolt, the record log queue.log/ with engine log (importing queue.db the
// first time). The bolt engine refuses to start beside a record log, whose
// records it would not see.
func openQueue(dataDir, engine string, log *slog.Logger) (queue.Store, error) {
	return openQueueSized(dataDir, engine, 0, log)
}

// openQueueSized is openQueue with the record log's segment size (0: the
// default).
func openQueueSized(dataDir, engine string, segmentSize int64, log *slog.Logger) (queue.Store, error) {
	db, dir := filepath.Join(dataDir, "queue.db"), filepath.Join(dataDir, "queue.log")
	if engine == "log" {
		q, err := queue.OpenLog(dir, &queue.LogOptions{ImportBolt: db, SegmentSize: segmentSize})
		if err != nil {
			if errors.As(err, new(*recordlog.DamageError)) {
				return nil, fmt.Errorf("%w: %w", relaystore.ErrRefused, logDamageFix(err))
			}
			return nil, relaystore.Fix(dir, err)
		}
		if err := q.CheckpointIgnored(); err != nil {
			log.Warn("queue: the record log's index checkpoint was not used; the log was read whole, and loses nothing", "err", err)
		}
		for _, c := range q.TornTails() {
			log.Warn("queue: cut the torn tail of the record log: a write a crash cut short, never acknowledged to its senders",
				"file", c.Path, "offset", c.Offset, "bytes", c.Bytes, "copy", c.Copy)
		}
		return q, nil
	}
	if _, err := os.Stat(dir); err == nil {
		return nil, fmt.Errorf("--queue-engine bolt: %s holds the queue's record log; run with --queue-engine log, or stop the relay and run torpor-relay queue export-bolt to go back to bolt", dir)
	}
	q, err := queue.OpenBolt(db, nil)
	if err != nil {
		return nil, relaystore.Fix(db, err)
	}
	return q, nil
}

// readNATSPassword sets the password of --nats-user from
// --nats-password-file or the environment.
func (s *storeArgs) readNATSPassword() error {
	sec := &s.nats.Security
	env, inEnv := os.LookupEnv(natsPasswordEnv)
	switch {
	case s.natsPasswordFile != "" && sec.User == "":
		return errors.New("--nats-password-file needs --nats-user")
	case s.natsPasswordFile != "":
		b, err := os.ReadFile(s.natsPasswordFile)
		if err != nil {
			return fmt.Errorf("--nats-password-file: %w", err)
		}
		pw, _, _ := strings.Cut(string(b), "\n")
		if sec.Password = strings.TrimSuffix(pw, "\r"); sec.Password == "" {
			return fmt.Errorf("--nats-password-file %s: the first line is empty", s.natsPasswordFile)
		}
	case sec.User != "" && inEnv:
		sec.Password = env
	case sec.User != "":
		return fmt.Errorf("--nats-user %s needs its password in --nats-password-file or %s", sec.User, natsPasswordEnv)
	}
	return nil
}
