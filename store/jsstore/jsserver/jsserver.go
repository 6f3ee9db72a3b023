// Package jsserver runs NATS servers with JetStream inside the calling
// process, on loopback with random ports and file storage in a given
// directory: one server, or a cluster of several. The jsstore tests, the
// cluster tests (test/cluster), the demo's fleet (cmd/torpor-demo, with
// TORPOR_DEMO_CLUSTER=1) and `torpor-conformance --store jetstream`
// use it; a deployment runs nats-server itself
// (docs/scale-out.md).
package jsserver

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is one running server.
type Server struct {
	*server.Server
	opts *server.Options
}

// URL is the server's client URL (nats://127.0.0.1:port).
func (s *Server) URL() string { return s.ClientURL() }

// MonitorURL is the server's HTTP monitoring origin (http://127.0.0.1:port).
func (s *Server) MonitorURL() string { return "http://" + s.MonitorAddr().String() }

// Options are the server settings Start and StartCluster take.
type Options struct {
	// SyncAlways makes JetStream fsync every write (sync_interval:
	// always), the setting a single-replica store needs.
	SyncAlways bool
	// Config is nats-server configuration text (accounts, users and their
	// permissions, authorization) the server starts from; the settings
	// above and the listeners, on loopback with random ports, override
	// what it says of them.
	Config string
}

func baseOptions(name, dir string, o Options) (*server.Options, error) {
	opts := &server.Options{}
	if o.Config != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		p := filepath.Join(dir, name+".conf")
		if err := os.WriteFile(p, []byte(o.Config), 0o600); err != nil {
			return nil, err
		}
		var err error
		if opts, err = server.ProcessConfigFile(p); err != nil {
			return nil, fmt.Errorf("jsserver: %w", err)
		}
	}
	opts.ServerName, opts.Host, opts.Port, opts.HTTPHost, opts.HTTPPort = name, "127.0.0.1", -1, "127.0.0.1", -1
	opts.JetStream, opts.StoreDir, opts.SyncAlways = true, filepath.Join(dir, name), o.SyncAlways
	opts.JetStreamMaxMemory, opts.JetStreamMaxStore, opts.NoSigs, opts.NoLog = 64<<20, 1<<30, true, true
	return opts, nil
}

func start(opts *server.Options) (*Server, error) {
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, err
	}
	s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("jsserver: %s not ready after 30s", opts.ServerName)
	}
	return &Server{Server: s, opts: opts}, nil
}

// Start runs a single server with its JetStream data under dir.
func Start(dir string, o Options) (*Server, error) {
	opts, err := baseOptions("torpor-single", dir, o)
	if err != nil {
		return nil, err
	}
	return start(opts)
}

// StartCluster runs n servers named n1…nN in one cluster, each with its
// JetStream data under dir/<name>, and waits (until ctx ends) for the
// cluster to elect its JetStream meta leader. The route ports are chosen
// free a moment before the servers take them; when another process took
// one in between, it tries again with new ports, up to 3 times.
func StartCluster(ctx context.Context, dir string, n int, o Options) ([]*Server, error) {
	var err error
	for range 3 {
		var ss []*Server
		if ss, err = startCluster(dir, n, o); err == nil {
			if err = waitLeader(ctx, ss); err == nil {
				return ss, nil
			}
			Shutdown(ss)
			return nil, err
		}
	}
	return nil, err
}

func startCluster(dir string, n int, o Options) ([]*Server, error) {
	ports, err := FreePorts(n)
	if err != nil {
		return nil, err
	}
	var routes []*url.URL
	for _, p := range ports {
		routes = append(routes, &url.URL{Scheme: "nats-route", Host: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	var out []*Server
	for i := range n {
		opts, err := baseOptions(fmt.Sprintf("n%d", i+1), dir, o)
		if err != nil {
			Shutdown(out)
			return nil, err
		}
		opts.Cluster = server.ClusterOpts{Name: "torpor", Host: "127.0.0.1", Port: ports[i]}
		opts.Routes = routes
		s, err := start(opts)
		if err != nil {
			Shutdown(out)
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Restart starts s again with its options (its data directory, ports and
// routes) after it was shut down.
func (s *Server) Restart() (*Server, error) { return start(s.opts) }

// waitLeader polls until a server of ss leads the JetStream meta group
// and every one of them is current.
func waitLeader(ctx context.Context, ss []*Server) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		leader, current := false, true
		for _, s := range ss {
			leader = leader || s.JetStreamIsLeader()
			current = current && s.JetStreamIsCurrent()
		}
		if leader && current {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("jsserver: no JetStream meta leader: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// FreePorts returns n TCP ports free on 127.0.0.1 a moment ago, for the
// cluster routes, which every server must know before it starts (also
// those of nats-server processes a test starts itself).
func FreePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Shutdown stops every server of ss.
func Shutdown(ss []*Server) {
	for _, s := range ss {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

// RelayPermissions are the NATS permissions docs/scale-out.md gives the
// relays' user (with the default --nats-prefix), in nats-server's
// configuration syntax.
const RelayPermissions = `permissions: {
      publish: { allow: ["$JS.API.>", "$JS.ACK.>", "$JS.FC.>", "$KV.TORPOR_AGENTS.>", "$KV.TORPOR_SHARED.>", "$O.TORPOR_UPDATES.>", "torpor.>", "_INBOX.>"] }
      subscribe: { allow: ["_INBOX.>", "torpor.link.>"] }
    }`

// AccountsConfig is a server configuration (Options.Config) with the
// fleet's account FLEET, JetStream enabled, and two users in it: "relay"
// with RelayPermissions and the password relay, and "metrics" with the
// password metrics and none of the relay's permissions.
func AccountsConfig(relay, metrics string) string {
	return `accounts: {
  FLEET: {
    jetstream: enabled
    users: [
      { user: relay, password: "` + relay + `", ` + RelayPermissions + ` }
      { user: metrics, password: "` + metrics + `", permissions: { publish: { allow: ["$SYS.>"] }, subscribe: { allow: ["_INBOX.>"] } } }
    ]
  }
}
`
}
