package jsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/clock"
)

// Names of the streams and the bucket with the default prefix (see the
// package doc).
const (
	StateStream   = "TORPOR_QUEUE_STATE"
	RecordsStream = "TORPOR_QUEUE_RECORDS"
	AgentsBucket  = "TORPOR_AGENTS"
	SharedBucket  = "TORPOR_SHARED"
)

// names are the streams, bucket and subject prefixes of one Config.Prefix.
type names struct {
	state, records, bucket, audit     string
	shared, updates                   string
	stateSubj, recordsSubj, auditSubj string
}

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func namesFor(prefix string) (names, error) {
	if prefix == "" {
		prefix = "TORPOR"
	}
	if !prefixRE.MatchString(prefix) {
		return names{}, fmt.Errorf("jsstore: prefix %q: want letters, digits, _ and -", prefix)
	}
	low := strings.ToLower(prefix)
	return names{state: prefix + "_QUEUE_STATE", records: prefix + "_QUEUE_RECORDS", bucket: prefix + "_AGENTS",
		shared: prefix + "_SHARED", updates: prefix + "_UPDATES", audit: prefix + "_AUDIT", stateSubj: low + ".qstate.", recordsSubj: low + ".qrec.", auditSubj: low + ".audit"}, nil
}

// Config says how to reach NATS and what durability to demand.
type Config struct {
	// URLs are the NATS servers, such as nats://10.0.0.1:4222; nats.go
	// connects to one and fails over to the others.
	URLs []string
	// Security is how the relay proves itself to NATS and checks the
	// servers: credentials and TLS.
	Security Security
	// Replicas is the replica count of the streams and the bucket: 3 (the
	// default when zero) or 5 on a cluster, or 1 on a single server whose
	// JetStream fsyncs every write (sync_interval: always), which
	// MonitorURL must let Open check.
	Replicas int
	// MonitorURL is the HTTP monitoring endpoint (http://host:8222) of the
	// server that holds R1 streams; Open reads its /varz to check that the
	// server fsyncs every write. Required when Replicas is 1.
	MonitorURL string
	// Name is the NATS connection name, shown in the server's connz.
	Name string
	// Clock times the waits between retries of a failed read or write
	// (a stream electing a leader); nil is the real clock. It measures
	// the network, so a relay passes its unscaled clock.
	Clock clock.Clock
	// Prefix names the streams, the bucket and their subjects, so that
	// separate fleets (or test runs) can share an account: "TORPOR" when
	// empty, giving TORPOR_QUEUE_STATE, torpor.qstate.> and so on.
	Prefix string
}

// PingInterval is how often a relay pings its NATS server: with two
// pings outstanding allowed, a server that stopped answering is left
// after about three intervals.
const PingInterval = 2 * time.Second

// ErrDurability is returned (wrapped) by Open when the servers cannot give
// the durability Config demands, or the existing streams do not.
var ErrDurability = errors.New("jsstore: configuration cannot give the promised durability")

// Conn is a connection to NATS with the relay's streams and bucket
// checked. Queue and Agents share it.
type Conn struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	replicas int
	clk      clock.Clock
	n        names
	records  jetstream.Stream
	kv       jetstream.KeyValue
	// shared is the bucket of the relays' shared memories (shared.go),
	// sharedKV the same bucket as nats.go's key-value view (links.go
	// watches it).
	shared   jetstream.Stream
	sharedKV jetstream.KeyValue
	// refused keeps the permission errors the server reported.
	refused *asyncErr

	mu    sync.Mutex
	cache *StateCache // StateCache's, if started
	links *Links      // Links's, if started
}

// Open connects, creates the streams and the bucket if they are missing,
// and checks that they and the servers give the durability cfg demands:
// an acknowledged write is on a quorum of Replicas servers, or, with one
// replica, fsync'd. It refuses, wrapping ErrDurability and naming the
// setting to change, when they cannot.
func Open(ctx context.Context, cfg Config) (*Conn, error) {
	if cfg.Replicas == 0 {
		cfg.Replicas = 3
	}
	if cfg.Replicas != 1 && cfg.Replicas != 3 && cfg.Replicas != 5 {
		return nil, fmt.Errorf("jsstore: replicas %d: want 1, 3 or 5", cfg.Replicas)
	}
	if cfg.Replicas == 1 && cfg.MonitorURL == "" {
		return nil, fmt.Errorf("%w: one replica is durable only on a server that fsyncs every write (jetstream { sync_interval: always }); give its monitoring URL so that it can be checked, or use 3 replicas on a cluster", ErrDurability)
	}
	n, err := namesFor(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	var refused asyncErr
	nc, err := connect(cfg, &refused)
	if err != nil {
		return nil, err
	}
	c := &Conn{nc: nc, replicas: cfg.Replicas, clk: clock.Or(cfg.Clock), n: n, refused: &refused}
	if err := c.setup(ctx, cfg); err != nil {
		nc.Close()
		if perr := refused.load(); perr != nil {
			// A request the server refused on permissions goes
			// unanswered: the timeout is the symptom, this the cause.
			return nil, fmt.Errorf("%w: the NATS user lacks the relay's permissions (docs/scale-out.md): %v", err, perr)
		}
		return nil, err
	}
	return c, nil
}

// asyncErr keeps the last permission error the server reported on a
// connection (nats.go reports them apart from the request they refused).
type asyncErr struct{ v atomic.Pointer[error] }

func (a *asyncErr) handle(_ *nats.Conn, _ *nats.Subscription, err error) {
	if errors.Is(err, nats.ErrPermissionViolation) {
		a.v.Store(&err)
	}
}

func (a *asyncErr) load() error {
	if p := a.v.Load(); p != nil {
		return *p
	}
	return nil
}

func connect(cfg Config, refused *asyncErr) (*nats.Conn, error) {
	if len(cfg.URLs) == 0 {
		return nil, errors.New("jsstore: no NATS URL")
	}
	if err := cfg.Security.check(cfg.URLs); err != nil {
		return nil, err
	}
	opts := []nats.Option{nats.Name(cfg.Name), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond),
		nats.ErrorHandler(refused.handle),
		// A server that stops answering (frozen, or cut off without a
		// reset) is found stale after PingInterval × (MaxPingsOut + 1),
		// about 6 s, and the client fails over to another; nats.go's
		// defaults (2 minutes) left a relay refusing every request.
		nats.PingInterval(PingInterval), nats.MaxPingsOutstanding(2)}
	sec, err := cfg.Security.options()
	if err != nil {
		return nil, err
	}
	nc, err := nats.Connect(strings.Join(cfg.URLs, ","), append(opts, sec...)...)
	if err != nil {
		return nil, fmt.Errorf("jsstore: connecting to %s: %w", RedactURLs(cfg.URLs), err)
	}
	return nc, nil
}

// setup checks the server's fsync setting when one replica is asked for
// (before creating anything), then creates or checks the streams and the
// bucket.
func (c *Conn) setup(ctx context.Context, cfg Config) error {
	var server string
	if cfg.Replicas == 1 {
		var err error
		if server, err = checkSyncAlways(ctx, cfg.MonitorURL); err != nil {
			return err
		}
	}
	js, err := jetstream.New(c.nc)
	if err != nil {
		return err
	}
	c.js = js
	err = c.retrySetup(ctx, func(ctx context.Context) (err error) {
		c.records, err = c.stream(ctx, recordsConfig(c.n, cfg.Replicas))
		return err
	})
	if err != nil {
		return err
	}
	agentsCfg := jetstream.KeyValueConfig{Bucket: c.n.bucket, Description: "torpor-relay: agent states and KeyPackages",
		History: 1, Storage: jetstream.FileStorage, Replicas: cfg.Replicas}
	if err := c.retrySetup(ctx, func(ctx context.Context) (err error) { c.kv, _, err = c.bucket(ctx, agentsCfg); return err }); err != nil {
		return err
	}
	if err := c.retrySetup(ctx, func(ctx context.Context) (err error) {
		if c.sharedKV, c.shared, err = c.bucket(ctx, sharedConfig(c.n, cfg.Replicas)); err != nil {
			return err
		}
		return c.canWriteShared(ctx)
	}); err != nil {
		return err
	}
	if err := c.convertOldLayout(ctx); err != nil {
		return err
	}
	if cfg.Replicas == 1 {
		for _, s := range []jetstream.Stream{c.records} {
			if cl := s.CachedInfo().Cluster; cl != nil && cl.Leader != "" && cl.Leader != server {
				return fmt.Errorf("%w: stream %s is on server %q but the monitoring URL is %q's", ErrDurability, s.CachedInfo().Config.Name, cl.Leader, server)
			}
		}
	}
	return nil
}

// ErrOldLayout is returned (wrapped) by Open when it could not convert
// the queues of the previous layout (see convertOldLayout).
var ErrOldLayout = errors.New("jsstore: converting the queue from the previous layout")

func recordsConfig(n names, replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name: n.records, Description: "torpor-relay: queued records and markers, one subject per agent",
		Subjects: []string{n.recordsSubj + ">"}, Storage: jetstream.FileStorage, Replicas: replicas,
		AllowMsgTTL: true, AllowDirect: false,
	}
}

// placementWait bounds how long Open waits for a cluster that is still
// forming: while a server has not yet reported to the meta leader,
// creating a replicated stream fails with JetStream's error 10005 (no
// suitable peers for placement, peer offline), as when the relays and
// the NATS servers of a fleet start together.
const placementWait = 30 * time.Second

// jsErrNoPeers is JetStream's API error code for "no suitable peers for
// placement" (nats-server's JSClusterNoPeersErr).
const jsErrNoPeers jetstream.ErrorCode = 10005

// jsErrReplicasNotSupported is JetStream's API error code for "replicas >
// 1 not supported in non-clustered mode": a single server asked for a
// replicated stream.
const jsErrReplicasNotSupported jetstream.ErrorCode = 10074

// awaitPlacement runs create until it succeeds, fails for a reason other
// than missing peers, or placementWait has passed, waiting a quarter
// second between tries.
func (c *Conn) awaitPlacement(ctx context.Context, create func() error) error {
	return c.tryUntil(ctx, placementWait, func(context.Context) (bool, error) {
		err := create()
		var apiErr *jetstream.APIError
		return err == nil || !errors.As(err, &apiErr) || apiErr.ErrorCode != jsErrNoPeers, err
	})
}

// tryUntil runs try until it says it is done or wait has passed (on the
// Conn's clock), a quarter second between tries, and returns its last
// error; ctx ends the waiting too.
func (c *Conn) tryUntil(ctx context.Context, wait time.Duration, try func(context.Context) (bool, error)) error {
	deadline := c.clk.Now().Add(wait)
	for {
		done, err := try(ctx)
		if done || ctx.Err() != nil || c.clk.Now().After(deadline) {
			return err
		}
		t := c.clk.NewTimer(250 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C():
		}
	}
}

// startWatch starts a key-value watch with start, trying again for up to
// setupWait while the bucket's stream has no leader (a server of the
// cluster down as the relay starts: the consumer's creation times out
// until a new leader is elected). Each try has the client's request
// timeout; ctx, given to start, is the watch's own life.
func (c *Conn) startWatch(ctx context.Context, start func(context.Context) (jetstream.KeyWatcher, error)) (jetstream.KeyWatcher, error) {
	var w jetstream.KeyWatcher
	err := c.tryUntil(ctx, setupWait, func(ctx context.Context) (bool, error) {
		var err error
		w, err = start(ctx)
		return err == nil || c.refused.load() != nil, err
	})
	return w, err
}

// Creating or checking the streams and the bucket at start: each attempt
// has setupAttempt, and attempts go on for setupWait. Relays that start
// together on a new cluster race to create them while the cluster's
// meta leader settles: a request may go unanswered, or find what another
// relay created a moment before with the settings it is about to
// change; both are tried again.
const setupAttempt, setupWait = 5 * time.Second, time.Minute

// errMismatch marks an existing stream whose configuration is not the
// store's: no retry changes it.
var errMismatch = errors.New("jsstore: an existing stream has another configuration")

// retrySetup runs step until it succeeds, fails for good (ErrDurability,
// errMismatch, a permission error the server reported) or setupWait
// passed, each attempt bounded by setupAttempt, and returns its last
// error.
func (c *Conn) retrySetup(ctx context.Context, step func(context.Context) error) error {
	return c.tryUntil(ctx, setupWait, func(ctx context.Context) (bool, error) {
		actx, cancel := context.WithTimeout(ctx, setupAttempt)
		defer cancel()
		err := step(actx)
		return err == nil || errors.Is(err, ErrDurability) || errors.Is(err, errMismatch) || c.refused.load() != nil, err
	})
}

// stream returns the stream want names, creating it with want when it is
// missing and checking an existing one against want's durability.
func (c *Conn) stream(ctx context.Context, want jetstream.StreamConfig) (jetstream.Stream, error) {
	s, err := c.js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		err = c.awaitPlacement(ctx, func() (err error) {
			s, err = c.js.CreateStream(ctx, want)
			return err
		})
		var apiErr *jetstream.APIError
		switch {
		case errors.As(err, &apiErr) && (apiErr.ErrorCode == jsErrNoPeers || apiErr.ErrorCode == jsErrReplicasNotSupported):
			return nil, fmt.Errorf("%w: creating stream %s with %d replicas: %v (a JetStream cluster of at least %d servers is needed)", ErrDurability, want.Name, want.Replicas, err, want.Replicas)
		case err != nil:
			return nil, fmt.Errorf("jsstore: creating stream %s: %w", want.Name, err)
		}
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jsstore: stream %s: %w", want.Name, err)
	}
	got := s.CachedInfo().Config
	if want.MaxMsgsPerSubject == 0 {
		want.MaxMsgsPerSubject = -1 // the server's spelling of unlimited
	}
	switch {
	case got.Replicas < want.Replicas:
		return nil, fmt.Errorf("%w: stream %s has %d replicas, want %d", ErrDurability, want.Name, got.Replicas, want.Replicas)
	case got.Storage != jetstream.FileStorage:
		return nil, fmt.Errorf("%w: stream %s is kept in memory, want file storage", ErrDurability, want.Name)
	case got.AllowMsgTTL != want.AllowMsgTTL || got.MaxMsgsPerSubject != want.MaxMsgsPerSubject || got.AllowDirect != want.AllowDirect:
		return nil, fmt.Errorf("%w: stream %s exists with allow_msg_ttl %v, max_msgs_per_subject %d, allow_direct %v", errMismatch, want.Name, got.AllowMsgTTL, got.MaxMsgsPerSubject, got.AllowDirect)
	}
	return s, nil
}

// bucket returns the bucket want names and its stream, creating it when
// it is missing, with direct gets off so that every read is served by the
// stream leader: a relay then reads what another relay wrote before
// (nats.go creates buckets with them on, which lets a lagging replica
// answer). A bucket whose keys have TTLs (want.LimitMarkerTTL) must
// allow them.
func (c *Conn) bucket(ctx context.Context, want jetstream.KeyValueConfig) (jetstream.KeyValue, jetstream.Stream, error) {
	bucket, replicas := want.Bucket, want.Replicas
	_, err := c.js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		err = c.awaitPlacement(ctx, func() error {
			_, err := c.js.CreateKeyValue(ctx, want)
			if errors.Is(err, jetstream.ErrBucketExists) {
				return nil // another relay created it meanwhile: checked below
			}
			return err
		})
		var apiErr *jetstream.APIError
		switch {
		case errors.As(err, &apiErr) && (apiErr.ErrorCode == jsErrNoPeers || apiErr.ErrorCode == jsErrReplicasNotSupported):
			return nil, nil, fmt.Errorf("%w: creating bucket %s with %d replicas: %v", ErrDurability, bucket, replicas, err)
		case err != nil:
			return nil, nil, fmt.Errorf("jsstore: creating bucket %s: %w", bucket, err)
		}
	} else if err != nil {
		return nil, nil, fmt.Errorf("jsstore: bucket %s: %w", bucket, err)
	}
	s, err := c.js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return nil, nil, fmt.Errorf("jsstore: bucket %s: %w", bucket, err)
	}
	cfg := s.CachedInfo().Config
	if cfg.Replicas < replicas || cfg.Storage != jetstream.FileStorage {
		return nil, nil, fmt.Errorf("%w: bucket %s has %d replicas (storage %v), want %d on file", ErrDurability, bucket, cfg.Replicas, cfg.Storage, replicas)
	}
	if want.LimitMarkerTTL > 0 && !cfg.AllowMsgTTL {
		return nil, nil, fmt.Errorf("%w: bucket %s exists without per-key TTLs (allow_msg_ttl)", errMismatch, bucket)
	}
	if cfg.AllowDirect {
		cfg.AllowDirect = false
		if s, err = c.js.UpdateStream(ctx, cfg); err != nil {
			return nil, nil, fmt.Errorf("jsstore: bucket %s: turning direct gets off: %w", bucket, err)
		}
	}
	kv, err := c.js.KeyValue(ctx, bucket) // bound again, to read from the leader
	return kv, s, err
}

// varz is the part of the monitoring endpoint's /varz that Open reads
// (https://docs.nats.io/running-a-nats-service/nats_admin/monitoring).
type varz struct {
	ServerName string `json:"server_name"`
	JetStream  struct {
		Config *struct {
			SyncAlways   bool          `json:"sync_always"`
			SyncInterval time.Duration `json:"sync_interval"`
		} `json:"config"`
	} `json:"jetstream"`
}

// checkSyncAlways reads the /varz of the server at monitor, checks that
// it fsyncs every JetStream write and returns its name.
func checkSyncAlways(ctx context.Context, monitor string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(monitor, "/")+"/varz", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: reading the NATS server's /varz to check sync_interval: %v", ErrDurability, err)
	}
	defer resp.Body.Close()
	var v varz
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%w: %s/varz: status %d, %v", ErrDurability, monitor, resp.StatusCode, err)
	}
	if v.JetStream.Config == nil || !v.JetStream.Config.SyncAlways {
		return "", fmt.Errorf("%w: with one replica the NATS server must fsync every write: set jetstream { sync_interval: always } on %q (it has sync_interval %v)", ErrDurability, v.ServerName, syncInterval(v))
	}
	return v.ServerName, nil
}

func syncInterval(v varz) time.Duration {
	if v.JetStream.Config == nil {
		return 0
	}
	return v.JetStream.Config.SyncInterval
}

// stateEntryBytes is what MaxMessages allows per live record: more than
// a marker needs to name it (one CBOR integer, at most 9 bytes). It was the
// size of a record's entry in the previous layout's queue state (seven
// integers and the sender's DID), and is kept so that the bounds a relay
// accepted stay those it accepts.
const stateEntryBytes = 64 + 96

// MaxMessages is the most live records one agent's queue may hold: a
// marker naming every one of them fits one NATS message, at most the
// server's max_payload (1 MiB by default) long, with room for its
// header, and so does each record. A relay refuses bounds whose messages
// and handshake reserve exceed it.
func (c *Conn) MaxMessages() int {
	return int((c.nc.MaxPayload() - 4096) / stateEntryBytes)
}

// NATS returns the connection, for the relay's other uses of NATS (the
// fleet's request/reply between relays, transport/relay/fleet).
func (c *Conn) NATS() *nats.Conn { return c.nc }

// Close closes the connection; Queue and Agents then fail.
func (c *Conn) Close() error {
	c.mu.Lock()
	sc, l := c.cache, c.links
	c.mu.Unlock()
	if sc != nil {
		sc.Close()
	}
	if l != nil {
		l.Close()
	}
	c.nc.Close()
	return nil
}
