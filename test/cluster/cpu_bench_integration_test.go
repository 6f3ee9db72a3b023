//go:build integration

package cluster

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/wakemeter"
)

// natsSyncConf is a single nats-server that fsyncs every JetStream write,
// the deployment of docs/scale-out.md with --nats-replicas 1.
const natsSyncConf = `server_name: %s
listen: 127.0.0.1:%d
http: 127.0.0.1:%d
jetstream {
  store_dir: %q
  sync_interval: always
  max_file_store: 4GB
}
`

// startSyncNATS runs one nats-server process with natsSyncConf and waits
// until it is healthy.
func startSyncNATS(b *testing.B) *natsNode {
	ports, err := jsserver.FreePorts(2)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	n := &natsNode{name: "s1", conf: filepath.Join(dir, "s1.conf"),
		url: fmt.Sprintf("nats://127.0.0.1:%d", ports[0]), monitor: fmt.Sprintf("http://127.0.0.1:%d", ports[1])}
	conf := fmt.Sprintf(natsSyncConf, n.name, ports[0], ports[1], filepath.Join(dir, "js"))
	if err := os.WriteFile(n.conf, []byte(conf), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := n.start(b); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(n.kill)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.waitHealthy(ctx); err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkEnqueueCPU measures, side by side in one run, the CPU a durable
// enqueue of a 1 KiB body costs the processes that store it, read from
// /proc/PID/task/*/schedstat (wakemeter.TaskCPU), as
// server-cpu-µs/op; the 64 senders (this process) are not counted:
//
//   - raw-publish: one nats-server process (file storage, sync_interval
//     always) storing 64 publishers' JetStream publishes of the body, each
//     on its own subject and waiting for its acknowledgement: the
//     nats-server's CPU;
//   - raw-protocol: the same server storing what store/jsstore publishes
//     for one enqueue when its view is current, without the relay
//     (protocolPublisher): the record's headers and the expected last
//     subject sequence; the nats-server's CPU, and over raw-publish's
//     (x-raw);
//   - relay-bolt and relay-log: a torpor-relay process on its bbolt store
//     and on its record log answering 503 queued to 64 senders, each
//     sending to its own sleeping device: the relay's CPU;
//   - relay-jetstream: the same with --store jetstream on that
//     nats-server (one replica): the relay's CPU plus the nats-server's.
//     It also reports the relay's alone (first-cpu-µs/op) and the
//     messages the nats-server received per answer (nats-msgs/op, from
//     /varz, the devices' publication not counted: it comes before).
//
// raw-publish-R3 and relay-jetstream-R3 run the same on a cluster of 3
// nats-server processes with 3 replicas, the three servers' CPU counted.
// relay-jetstream also reports its CPU over raw-publish's (x-raw), and
// relay-jetstream-R3 over raw-publish-R3's;
// scripts/bench.sh prints every row and that ratio. Nothing asserts a
// timing (docs/performance.md).
func BenchmarkEnqueueCPU(b *testing.B) {
	ns := startSyncNATS(b)
	pid := func() int { ns.mu.Lock(); defer ns.mu.Unlock(); return ns.cmd.Process.Pid }()
	var raw float64
	b.Run("raw-publish", func(b *testing.B) {
		js := jetStreams(b, []string{ns.url})[0]
		cfg := jetstream.StreamConfig{Name: "BENCH_RAW", Subjects: []string{"bench.raw.>"}, Replicas: 1, Storage: jetstream.FileStorage}
		if _, err := js.CreateOrUpdateStream(context.Background(), cfg); err != nil {
			b.Fatal(err)
		}
		payload := body("bench", 1024)
		raw = serverCPU(b, []int{pid}, func(i int, _ int64) error {
			_, err := js.Publish(context.Background(), fmt.Sprintf("bench.raw.%d", i), payload)
			return err
		})
	})
	b.Run("raw-protocol", func(b *testing.B) {
		js := jetStreams(b, []string{ns.url})[0]
		cfg := jetstream.StreamConfig{Name: "BENCH_PROTO", Subjects: []string{"bench.proto.>"}, Replicas: 1, Storage: jetstream.FileStorage, AllowMsgTTL: true}
		st, err := js.CreateOrUpdateStream(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := st.Purge(context.Background()); err != nil { // a previous round's records
			b.Fatal(err)
		}
		cpu := serverCPU(b, []int{pid}, protocolPublisher(js, "bench.proto."))
		if raw > 0 {
			b.ReportMetric(cpu/raw, "x-raw")
		}
	})
	for _, engine := range []string{"bolt", "log"} {
		b.Run("relay-"+engine, func(b *testing.B) {
			r := startRelay(b, b.TempDir(), append([]string{"--public-url", publicURL, "--queue-engine", engine}, benchBounds...)...)
			defer r.kill()
			benchRelayCPU(b, r, nil, 0, nil)
		})
	}
	b.Run("relay-jetstream", func(b *testing.B) {
		r := startRelay(b, b.TempDir(), append([]string{"--public-url", publicURL, "--store", "jetstream", "--nats", ns.url,
			"--nats-replicas", "1", "--nats-monitor", ns.monitor}, benchBounds...)...)
		defer r.kill()
		cpu := benchRelayCPU(b, r, []int{pid}, 1, func() int64 { return natsInMsgs(b, ns.monitor) })
		if raw > 0 {
			b.ReportMetric(cpu/raw, "x-raw")
		}
	})
	ns.kill()
	benchEnqueueCPUR3(b)
}

// benchEnqueueCPUR3 runs raw-publish and relay-jetstream again on a
// cluster of 3 nats-server processes with 3 replicas (the deployment of
// docs/scale-out.md), counting the three servers' CPU.
func benchEnqueueCPUR3(b *testing.B) {
	nodes := startNATSProcs(b)
	var urls []string
	var pids []int
	for _, n := range nodes {
		urls = append(urls, n.url)
		pids = append(pids, func() int { n.mu.Lock(); defer n.mu.Unlock(); return n.cmd.Process.Pid }())
	}
	var raw float64
	b.Run("raw-publish-R3", func(b *testing.B) {
		jss := jetStreams(b, urls)
		cfg := jetstream.StreamConfig{Name: "BENCH_RAW3", Subjects: []string{"bench.raw3.>"}, Replicas: 3, Storage: jetstream.FileStorage}
		createStream(b, jss[0], cfg)
		payload := body("bench", 1024)
		raw = serverCPU(b, pids, func(i int, _ int64) error {
			_, err := jss[i%len(jss)].Publish(context.Background(), fmt.Sprintf("bench.raw3.%d", i), payload)
			return err
		})
	})
	b.Run("relay-jetstream-R3", func(b *testing.B) {
		r := startRelay(b, b.TempDir(), append([]string{"--public-url", publicURL, "--store", "jetstream", "--nats", strings.Join(urls, ",")}, benchBounds...)...)
		defer r.kill()
		// No nats-msgs/op: a clustered server's in_msgs counts its
		// routes' replication traffic too.
		cpu := benchRelayCPU(b, r, pids, 2, nil)
		if raw > 0 {
			b.ReportMetric(cpu/raw, "x-raw")
		}
	})
}

// createStream creates cfg's stream, trying again for up to a minute
// while the new cluster cannot place it yet (its meta leader is still
// being elected, or a server has not reported to it).
func createStream(b *testing.B, js jetstream.JetStream, cfg jetstream.StreamConfig) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		_, err := js.CreateOrUpdateStream(ctx, cfg)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			b.Fatalf("creating stream %s: %v", cfg.Name, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// benchRelayCPU publishes a sleeping device per sender through r (set
// keeps the devices of sub-benchmarks apart), then runs b.N requests
// through it, and reports and returns the CPU per answer of r and of the
// processes others; with msgs, also the messages msgs counts per answer
// (nats-msgs/op).
func benchRelayCPU(b *testing.B, r *relayProc, others []int, set int, msgs func() int64) float64 {
	devs := publishBenchDevices(b, r.addr, 10+set)
	toks := make([]string, benchSenders)
	for i := range toks {
		toks[i] = relayToken(b, i)
	}
	payload := body("bench", 1024)
	var in int64
	if msgs != nil {
		in = msgs()
	}
	cpu := serverCPU(b, append([]int{r.Cmd.Process.Pid}, others...), func(i int, _ int64) error {
		return queued(r.addr, devs[i], toks[i], payload)
	})
	if msgs != nil {
		b.ReportMetric(float64(msgs()-in)/float64(b.N), "nats-msgs/op")
	}
	return cpu
}

// serverCPU runs do as runSenders does and reports the CPU the processes
// pids spent meanwhile, per call, as server-cpu-µs/op, and the first
// one's alone as first-cpu-µs/op; it returns the total.
func serverCPU(b *testing.B, pids []int, do func(i int, n int64) error) float64 {
	before := make([]time.Duration, len(pids))
	for i, pid := range pids {
		var err error
		if before[i], err = wakemeter.TaskCPU(pid); err != nil {
			b.Fatal(err)
		}
	}
	runSenders(b, pids, do)
	var spent, first time.Duration
	for i, pid := range pids {
		after, err := wakemeter.TaskCPU(pid)
		if err != nil {
			b.Fatal(err)
		}
		spent += after - before[i]
		if i == 0 {
			first = after - before[i]
		}
	}
	us := float64(spent.Microseconds()) / float64(b.N)
	b.ReportMetric(us, "server-cpu-µs/op")
	if len(pids) > 1 {
		b.ReportMetric(float64(first.Microseconds())/float64(b.N), "first-cpu-µs/op")
	}
	return us
}

// natsInMsgs reads the messages the nats-server at monitor has received
// from its clients (/varz in_msgs): publishes and requests.
func natsInMsgs(b *testing.B, monitor string) int64 {
	resp, err := http.Get(monitor + "/varz")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		InMsgs int64 `json:"in_msgs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		b.Fatal(err)
	}
	return v.InMsgs
}

// relayToken is sender i's DID Bearer token for the fleet's relays.
func relayToken(b *testing.B, i int) string {
	return relaytest.Token(b, relaytest.Key(b, 5000+i), publicURL)
}

// queued sends payload to agent through the relay at addr and wants 503
// queued.
func queued(addr, agent, tok string, payload []byte) error {
	a, err := send(addr, agent, tok, payload)
	if err == nil && (a.status != http.StatusServiceUnavailable || !a.Queued) {
		err = fmt.Errorf("answer %v, want 503 queued", a)
	}
	return err
}

// protocolPublisher returns runSenders's do for raw-protocol: what
// store/jsstore publishes for one enqueue when its view is current,
// without the relay: sender i's 1 KiB record on its own subject under pre,
// with the record's headers (seq, kind, times, call id, sender; as
// jsstore's recordMsg) and Nats-Expected-Last-Subject-Sequence set to the
// stream sequence of the sender's previous record.
func protocolPublisher(js jetstream.JetStream, pre string) func(i int, _ int64) error {
	payload := body("bench", 1024)
	var mu sync.Mutex
	last := map[int]uint64{}
	seqs := map[int]uint64{}
	return func(i int, _ int64) error {
		mu.Lock()
		prev, seq := last[i], seqs[i]+1
		mu.Unlock()
		now := time.Now().UnixNano()
		m := &nats.Msg{Subject: fmt.Sprintf("%s%d", pre, i), Data: payload, Header: nats.Header{
			"Torpor-Seq":   {strconv.FormatUint(seq, 10)},
			"Torpor-Kind":  {"0"},
			"Torpor-Times": {strconv.FormatInt(now, 10) + " " + strconv.FormatInt(now+int64(time.Hour), 10)},
			"Torpor-Op":    {rand.Text()},
			"Torpor-From":  {"did:key:z6MkBenchSender" + strconv.Itoa(i)},
		}}
		ack, err := js.PublishMsg(context.Background(), m, jetstream.WithExpectLastSequencePerSubject(prev))
		if err != nil {
			return err
		}
		mu.Lock()
		last[i], seqs[i] = ack.Sequence, seq
		mu.Unlock()
		return nil
	}
}
