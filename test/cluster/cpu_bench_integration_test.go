//go:build integration

package cluster

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/store/jsstore/jsserver"
	"github.com/torpor-dev/torpor/test/internal/relaytest"
	"github.com/torpor-dev/torpor/test/internal/testenv"
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
// enqueue of a 1 KiB body costs the processes that make it durable, read
// from /proc/PID/task/*/schedstat (wakemeter.TaskCPU); the 64 senders
// (this process) are not counted:
//
//   - relay-bolt and relay-log: a torpor-relay process on its bbolt store
//     and on its record log answering 503 queued to 64 senders, each
//     sending to its own sleeping device: the relay's CPU, as
//     server-cpu-µs/op;
//   - jetstream: one nats-server process (file storage, sync_interval
//     always) and the sides that take turns on it, cpuRounds rounds of
//     b.N/cpuRounds enqueues each, so that the machine's load, which
//     moves the raw publish's CPU by half from run to run, falls on all
//     of them alike (benchJetStreamSides): raw, a publisher process (this
//     test binary, publisherMain) making 64 publishers' JetStream
//     publishes of the body, each on its own subject and waiting for its
//     acknowledgement; protocol, the same publisher storing what
//     store/jsstore publishes for one enqueue when its view is current
//     (protocolPublisher); relay, a torpor-relay with --store jetstream on
//     that server (one replica) answering the senders; raw-paced, the raw
//     side held to the relay side's rate, each publisher waiting after
//     each acknowledgement (thinkTime), so that the servers' CPU per
//     message at the relay's rate is known (on R3 it depends on the rate:
//     fewer messages share a replication round); http-floor, a bare
//     net/http server process (this test binary, httpFloorMain) taking
//     the relay side's requests and making each body durable with the
//     protocol side's one publish before it answers 503 queued: the least
//     any HTTP front of JetStream spends, beside the relay
//     (relay-x-http-floor). Each side's CPU is its own process's (the
//     publisher's, the floor's or the relay's) plus the
//     nats-server's: NAME-cpu-µs/op, the own process's alone
//     NAME-own-µs/op, the servers' alone NAME-servers-µs/op, their reads
//     and sleeps (procCounters), over the raw side's as the ratio of the sums
//     (NAME-x-raw) and the median of the rounds' ratios
//     (NAME-x-raw-median), and the relay's NATS messages per enqueue
//     (relay-nats-msgs/op, from /varz; the devices' publication and a
//     first request to each device, which reads its queue into the
//     relay's view, come before and are not counted: relaySender), and
//     the relay's over raw-paced's (relay-x-paced). envEnqueueCPUBase adds
//     a relay of another revision as a side, envEnqueueCPUBusy a
//     protocol side whose publisher spends CPU before each publish.
//   - jetstream-R3: the same on a cluster of 3 nats-server processes with
//     3 replicas, the three servers' CPU counted.
//
// cpu-ns/op is the CPU of this process and all the others over b.N
// (internal/benchcpu). scripts/bench.sh prints every row, the relay's
// CPU over the raw publish's and the load average. Nothing asserts a
// timing (docs/performance.md).
func BenchmarkEnqueueCPU(b *testing.B) {
	loadStart := loadAverage(b)
	for _, engine := range []string{"bolt", "log"} {
		b.Run("relay-"+engine, func(b *testing.B) {
			r := startRelay(b, b.TempDir(), append([]string{"--public-url", publicURL, "--queue-engine", engine}, benchBounds...)...)
			defer r.kill()
			benchRelayCPU(b, r)
		})
	}
	ns := startSyncNATS(b)
	b.Run("jetstream", func(b *testing.B) {
		benchJetStreamSides(b, []*natsNode{ns}, []string{"--nats-replicas", "1", "--nats-monitor", ns.monitor}, 1,
			func() int64 { return natsInMsgs(b, ns.monitor) })
	})
	ns.kill()
	// No nats-msgs/op on R3: a clustered server's in_msgs counts its
	// routes' replication traffic too.
	nodes := startNATSProcs(b)
	b.Run("jetstream-R3", func(b *testing.B) { benchJetStreamSides(b, nodes, nil, 3, nil) })
	b.Logf("load average %.2f at the start, %.2f at the end", loadStart, loadAverage(b))
}

// cpuRounds is how many rounds the sides of a jetstream sub-benchmark of
// BenchmarkEnqueueCPU split their enqueues into, taking turns in every
// round (in reverse order every other round), so that a change in the
// machine's load falls on all of them alike.
const cpuRounds = 6

// cpuSide is one side of a jetstream sub-benchmark: the process that
// makes the writes durable (a publisher or a relay) and the nats-servers,
// whose CPU counts, and what it spent over the rounds.
type cpuSide struct {
	name   string
	pids   []int // the side's own process first, then the servers
	run    func(n int) error
	msgs   func() int64 // the messages the server received, or nil
	cpu    time.Duration
	own    time.Duration // the first pid's alone
	in     int64         // messages received meanwhile
	ops    int
	wall   time.Duration // the rounds' time
	rounds []float64     // CPU per op of each round, µs
	srv    procCounters  // the servers' counters over the rounds
	ownc   procCounters  // the first pid's counters over the rounds
}

// round makes n enqueues on s and adds what its processes spent.
func (s *cpuSide) round(b *testing.B, n int) {
	before := taskCPUs(b, s.pids)
	cBefore := serverCounters(b, s.pids[1:])
	oBefore := serverCounters(b, s.pids[:1])
	var in int64
	if s.msgs != nil {
		in = s.msgs()
	}
	start := time.Now()
	if err := s.run(n); err != nil {
		b.Fatalf("%s: %v", s.name, err)
	}
	s.wall += time.Since(start)
	if s.msgs != nil {
		s.in += s.msgs() - in
	}
	after := taskCPUs(b, s.pids)
	s.srv = s.srv.add(serverCounters(b, s.pids[1:]).sub(cBefore))
	s.ownc = s.ownc.add(serverCounters(b, s.pids[:1]).sub(oBefore))
	var spent time.Duration
	for i := range after {
		spent += after[i] - before[i]
	}
	s.cpu += spent
	s.own += after[0] - before[0]
	s.ops += n
	s.rounds = append(s.rounds, float64(spent.Nanoseconds())/1e3/float64(n))
}

// perOp is d per enqueue of s, in µs.
func (s *cpuSide) perOp(d time.Duration) float64 {
	return float64(d.Nanoseconds()) / 1e3 / float64(s.ops)
}

// taskCPUs reads the CPU each of pids has spent so far.
func taskCPUs(b *testing.B, pids []int) []time.Duration {
	out := make([]time.Duration, len(pids))
	for i, pid := range pids {
		var err error
		if out[i], err = wakemeter.TaskCPU(pid); err != nil {
			b.Fatal(err)
		}
	}
	return out
}

// envEnqueueCPUBase, set to a git revision, adds a side relay-base to
// the jetstream sub-benchmarks of BenchmarkEnqueueCPU: that revision's
// torpor-relay (built from git history), on NATS prefix TORPOR_BASE of
// the same servers, so that a change to the relay is measured beside the
// relay before it in one run.
const envEnqueueCPUBase = "TORPOR_ENQUEUE_CPU_BASE"

// envEnqueueCPUOnly, set to a side's name (raw, protocol, relay,
// http-floor, relay-base, protocol-busy), runs that side alone, to profile its
// processes (docs/scale-out.md, "CPU per durable enqueue"); no ratio is
// reported then. raw-paced cannot run alone: it takes its rate from the
// raw and relay sides.
const envEnqueueCPUOnly = "TORPOR_ENQUEUE_CPU_ONLY"

// envEnqueueCPUBusy, set to a number of microseconds, adds a side
// protocol-busy to the jetstream sub-benchmarks of BenchmarkEnqueueCPU:
// the protocol side's publishes, each after the publisher spent that long
// spinning on a CPU (busyFor), as a relay spends CPU on each request
// before it publishes; the servers' CPU per message on this side beside
// the protocol side's and the relay side's tells whether the relay's
// messages or its spending make the servers spend more
// (docs/scale-out.md, "CPU per durable enqueue").
const envEnqueueCPUBusy = "TORPOR_ENQUEUE_CPU_BUSY"

// benchJetStreamSides runs the raw, protocol, relay and raw-paced sides of
// BenchmarkEnqueueCPU (and relay-base, envEnqueueCPUBase, and
// protocol-busy, envEnqueueCPUBusy) on the servers
// nodes (the relays started with relayFlags, their devices set apart by
// set), b.N enqueues each in cpuRounds rounds, and reports them
// (reportSides).
func benchJetStreamSides(b *testing.B, nodes []*natsNode, relayFlags []string, set int, msgs func() int64) {
	var urls []string
	var servers []int
	for _, n := range nodes {
		urls = append(urls, n.url)
		servers = append(servers, func() int { n.mu.Lock(); defer n.mu.Unlock(); return n.cmd.Process.Pid }())
	}
	js := jetStreams(b, urls[:1])[0]
	raw, proto := benchStream(b, js, "raw", len(nodes), false), benchStream(b, js, "proto", len(nodes), true)
	pub := startPublisher(b, urls)
	flags := append(append([]string{"--public-url", publicURL, "--store", "jetstream", "--nats", strings.Join(urls, ",")}, relayFlags...), benchBounds...)
	r := startRelay(b, b.TempDir(), flags...)
	defer r.kill()
	rawSide := &cpuSide{name: "raw", pids: append([]int{pub.pid}, servers...), run: func(n int) error { return pub.do("raw", raw, n) }}
	relay := &cpuSide{name: "relay", pids: append([]int{r.Cmd.Process.Pid}, servers...), run: relaySender(b, r, set), msgs: msgs}
	sides := []*cpuSide{
		rawSide,
		{name: "protocol", pids: append([]int{pub.pid}, servers...), run: func(n int) error { return pub.do("protocol", proto, n) }},
		relay,
	}
	floorPid, floorURL := startHTTPFloor(b, urls, benchStream(b, js, "floor", len(nodes), true))
	sides = append(sides, &cpuSide{name: "http-floor", pids: append([]int{floorPid}, servers...), run: floorSender(b, floorURL)})
	if rev := os.Getenv(envEnqueueCPUBase); rev != "" {
		base := startRelayAt(b, rev, append(flags, "--nats-prefix", "TORPOR_BASE")...)
		defer base.kill()
		sides = append(sides, &cpuSide{name: "relay-base", pids: append([]int{base.Cmd.Process.Pid}, servers...),
			run: relaySender(b, base, set+20), msgs: msgs})
	}
	sides = append(sides, publisherSides(b, js, pub, servers, len(nodes), rawSide, relay)...)
	b.ResetTimer()
	meter := benchcpu.Start(b)
	meter.Add(pub.pid)
	for _, s := range sides[2:] {
		if s.pids[0] != pub.pid {
			meter.Add(s.pids[0])
		}
	}
	for _, pid := range servers {
		meter.Add(pid)
	}
	takeTurns(b, sides)
	b.StopTimer()
	meter.Stop()
	reportSides(b, sides)
}

// publisherSides returns the sides of BenchmarkEnqueueCPU that the
// publisher process pub makes after the relays' on the servers pids
// (replicas of them): protocol-busy when envEnqueueCPUBusy is set, and
// raw-paced, the raw side held to the relay side's rate (thinkTime). It
// comes last, so that the raw and relay sides have run before it in the
// first round.
func publisherSides(b *testing.B, js jetstream.JetStream, pub *publisherProc, servers []int, replicas int, raw, relay *cpuSide) []*cpuSide {
	var sides []*cpuSide
	if us := os.Getenv(envEnqueueCPUBusy); us != "" {
		busy := benchStream(b, js, "busy", replicas, true)
		sides = append(sides, &cpuSide{name: "protocol-busy", pids: append([]int{pub.pid}, servers...),
			run: func(n int) error { return pub.do("busy", busy, n, us) }})
	}
	paced := benchStream(b, js, "paced", replicas, false)
	return append(sides, &cpuSide{name: "raw-paced", pids: append([]int{pub.pid}, servers...), run: func(n int) error {
		think, err := thinkTime(raw, relay)
		if err != nil {
			return err
		}
		return pub.do("paced", paced, n, strconv.FormatInt(think.Microseconds(), 10))
	}})
}

// thinkTime is how long each of the raw side's benchSenders publishers
// waits after an acknowledgement so that its rate comes down to the relay
// side's, from their rates over their rounds so far: a publisher's cycle
// at the relay's rate, less its cycle at its own (zero when the raw side
// is the slower).
func thinkTime(raw, relay *cpuSide) (time.Duration, error) {
	if raw.ops == 0 || relay.ops == 0 {
		return 0, errors.New("the raw and relay sides' rates are not known yet (run them before raw-paced)")
	}
	cycle := func(s *cpuSide) time.Duration { return s.wall * benchSenders / time.Duration(s.ops) }
	return max(0, cycle(relay)-cycle(raw)), nil
}

// startRelayAt starts the torpor-relay of git revision rev as startRelay
// starts this tree's.
func startRelayAt(b *testing.B, rev string, extra ...string) *relayProc {
	bin := filepath.Join(testenv.BuildAt(b, rev, "torpor-relay"), "torpor-relay")
	r := relaytest.StartBinary(b, bin, b.TempDir(), append([]string{"--operator", fleetOperator(b).DID().String()}, extra...)...)
	return &relayProc{Relay: r, addr: r.URL}
}

// takeTurns runs b.N enqueues on each side in cpuRounds rounds (fewer
// when b.N is smaller), the sides taking turns in each round, in reverse
// order every other round; with envEnqueueCPUOnly, on that side alone.
func takeTurns(b *testing.B, sides []*cpuSide) {
	rounds := min(cpuRounds, b.N)
	for k := range rounds {
		n := b.N*(k+1)/rounds - b.N*k/rounds
		for i := range sides {
			if k%2 == 1 {
				i = len(sides) - 1 - i
			}
			if only := os.Getenv(envEnqueueCPUOnly); only == "" || only == sides[i].name {
				sides[i].round(b, n)
			}
		}
	}
}

// reportSides reports each side's CPU per enqueue (NAME-cpu-µs/op), its
// own process's alone (NAME-own-µs/op) and the servers' alone
// (NAME-servers-µs/op), its rate over its rounds (NAME-enqueues/s), the
// servers' reads and sleeps (procCounters.report), the write system
// calls of the side's own process per enqueue (NAME-own-writes/op: a
// relay's include its HTTP answers), the ratios of the
// other sides' to the raw publish's over the sums (NAME-x-raw) and the
// median of the rounds' ratios (NAME-x-raw-median), the same of relay to
// relay-base when it ran (relay-x-base, relay-x-base-median), to
// raw-paced (relay-x-paced) and to http-floor (relay-x-http-floor), the relay's NATS messages per enqueue when
// counted (NAME-nats-msgs/op) and the load average at the end
// (load-avg).
func reportSides(b *testing.B, sides []*cpuSide) {
	for _, s := range sides {
		b.ReportMetric(s.perOp(s.cpu), s.name+"-cpu-µs/op")
		b.ReportMetric(s.perOp(s.own), s.name+"-own-µs/op")
		b.ReportMetric(float64(s.ops)/s.wall.Seconds(), s.name+"-enqueues/s")
		b.ReportMetric(s.perOp(s.cpu-s.own), s.name+"-servers-µs/op")
		s.srv.report(b, s.name, s.ops)
		b.ReportMetric(float64(s.ownc.writes)/float64(s.ops), s.name+"-own-writes/op")
		if s.msgs != nil {
			b.ReportMetric(float64(s.in)/float64(s.ops), s.name+"-nats-msgs/op")
		}
		if s != sides[0] {
			reportRatio(b, s, sides[0], s.name+"-x-raw")
		}
		switch s.name {
		case "relay-base":
			reportRatio(b, sides[2], s, "relay-x-base")
		case "raw-paced":
			reportRatio(b, sides[2], s, "relay-x-paced")
		case "http-floor":
			reportRatio(b, sides[2], s, "relay-x-http-floor")
		}
	}
	b.ReportMetric(loadAverage(b), "load-avg")
}

// reportRatio reports s's CPU per enqueue over ref's as name, over the
// sums and as the median of the rounds' ratios (name-median).
func reportRatio(b *testing.B, s, ref *cpuSide, name string) {
	if len(s.rounds) != len(ref.rounds) || ref.cpu == 0 || len(s.rounds) == 0 {
		return
	}
	b.ReportMetric(s.perOp(s.cpu)/ref.perOp(ref.cpu), name)
	ratios := make([]float64, len(s.rounds))
	for k := range s.rounds {
		ratios[k] = s.rounds[k] / ref.rounds[k]
	}
	slices.Sort(ratios)
	med := ratios[len(ratios)/2]
	if len(ratios)%2 == 0 {
		med = (med + ratios[len(ratios)/2-1]) / 2
	}
	b.ReportMetric(med, name+"-median")
}

// benchStream creates the stream name (upper-cased) on subjects
// bench.NAME.> with replicas, file storage and, for ttl, per-message TTLs
// allowed (as the queue's stream), purged of a previous call's messages;
// it returns the subjects' prefix.
func benchStream(b *testing.B, js jetstream.JetStream, name string, replicas int, ttl bool) string {
	cfg := jetstream.StreamConfig{Name: "BENCH_" + strings.ToUpper(name), Subjects: []string{"bench." + name + ".>"},
		Replicas: replicas, Storage: jetstream.FileStorage, AllowMsgTTL: ttl}
	createStream(b, js, cfg)
	st, err := js.Stream(context.Background(), cfg.Name)
	if err == nil {
		err = st.Purge(context.Background())
	}
	if err != nil {
		b.Fatal(err)
	}
	return "bench." + name + "."
}

// relaySender publishes a sleeping device per sender through r (set keeps
// the devices of sub-benchmarks apart), sends each device one request,
// not measured, and returns a cpuSide's run: n requests from 64 senders,
// each to its own device, each wanting 503 queued. The first request to
// a device reads its queue into the relay's view (a few JetStream API
// requests, once per device and relay); the rounds measure the steady
// state after it, whatever b.N.
func relaySender(b *testing.B, r *relayProc, set int) func(n int) error {
	devs := publishBenchDevices(b, r.addr, 10+set)
	toks := make([]string, benchSenders)
	for i := range toks {
		toks[i] = relayToken(b, i)
	}
	payload := body("bench", 1024)
	run := func(n int) error {
		return spread(n, func(i int) error { return queued(r.addr, devs[i], toks[i], payload) })
	}
	for i := range devs {
		if err := queued(r.addr, devs[i], toks[i], payload); err != nil {
			b.Fatal(err)
		}
	}
	return run
}

// loadAverage reads the machine's load average over the last minute.
func loadAverage(b *testing.B) float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Fatal(err)
	}
	f, err := strconv.ParseFloat(strings.Fields(string(raw))[0], 64)
	if err != nil {
		b.Fatal(err)
	}
	return f
}

// createStream creates cfg's stream, trying again for up to a minute
// while the new cluster cannot place it yet (its meta leader is still
// being elected, or a server has not reported to it). Each try has 5 s of
// its own: a request the cluster dropped while it elected its leader is
// never answered, and would otherwise hold the whole minute.
func createStream(b *testing.B, js jetstream.JetStream, cfg jetstream.StreamConfig) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		try, cancelTry := context.WithTimeout(ctx, 5*time.Second)
		_, err := js.CreateOrUpdateStream(try, cfg)
		cancelTry()
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

// benchRelayCPU publishes a sleeping device per sender through r, then
// runs b.N requests through it and reports the relay's CPU per answer.
func benchRelayCPU(b *testing.B, r *relayProc) {
	devs := publishBenchDevices(b, r.addr, 10)
	toks := make([]string, benchSenders)
	for i := range toks {
		toks[i] = relayToken(b, i)
	}
	payload := body("bench", 1024)
	serverCPU(b, r.Cmd.Process.Pid, func(i int, _ int64) error {
		return queued(r.addr, devs[i], toks[i], payload)
	})
}

// serverCPU runs do as runSenders does and reports the CPU the process
// pid spent meanwhile, per call, as server-cpu-µs/op.
func serverCPU(b *testing.B, pid int, do func(i int, n int64) error) {
	before, err := wakemeter.TaskCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	runSenders(b, []int{pid}, do)
	after, err := wakemeter.TaskCPU(pid)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64((after-before).Nanoseconds())/1e3/float64(b.N), "server-cpu-µs/op")
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

// protocolPublisher returns publisherMain's do for the protocol side (and
// the http-floor's publish): what store/jsstore publishes for one enqueue
// when its view is current, without the relay: publisher i's record of
// payload on its own subject under pre, over jss[i%len(jss)], with the
// record's headers (seq, kind, times, sender, and the call's id as
// Nats-Msg-Id; as jsstore's recordMsg), the stream expected and
// Nats-Expected-Last-Subject-Sequence set to the stream sequence of the
// publisher's previous record.
func protocolPublisher(jss []jetstream.JetStream, pre string) func(i int, payload []byte) error {
	var mu sync.Mutex
	last := map[int]uint64{}
	seqs := map[int]uint64{}
	stream := "BENCH_" + strings.ToUpper(strings.Split(pre, ".")[1])
	return func(i int, payload []byte) error {
		mu.Lock()
		prev, seq := last[i], seqs[i]+1
		mu.Unlock()
		now := time.Now().UnixNano()
		m := &nats.Msg{Subject: pre + strconv.Itoa(i), Data: payload, Header: nats.Header{
			"Torpor-Seq":          {strconv.FormatUint(seq, 10)},
			"Torpor-Kind":         {"0"},
			"Torpor-Times":        {strconv.FormatInt(now, 10) + " " + strconv.FormatInt(now+int64(time.Hour), 10)},
			jetstream.MsgIDHeader: {rand.Text()},
			"Torpor-From":         {"did:key:z6MkBenchSender" + strconv.Itoa(i)},
		}}
		ack, err := publishExpecting(jss[i%len(jss)], m, stream, prev)
		if err != nil {
			return err
		}
		mu.Lock()
		last[i], seqs[i] = ack.Sequence, seq
		mu.Unlock()
		return nil
	}
}

// publishExpecting publishes m on stream expecting prev as its subject's
// last sequence, as store/jsstore does; when the stream refuses the
// expectation, it reads the subject's last sequence and tries again, at
// most conflictTries times, as jsstore brings its view up to date (a
// retry of a publish that landed is a duplicate by its Nats-Msg-Id). A
// replicated stream's leader refuses ("wrong last sequence", 10164) an
// expectation on a subject it still marks in process, and it clears the
// mark after it sent the previous publish's acknowledgement
// (applyStreamEntries in nats-server's server/jetstream_cluster.go,
// https://github.com/nats-io/nats-server/blob/v2.15.3/server/jetstream_cluster.go):
// a publisher quick enough to publish again at once is refused now and
// then.
func publishExpecting(js jetstream.JetStream, m *nats.Msg, stream string, prev uint64) (*jetstream.PubAck, error) {
	ctx := context.Background()
	for try := 1; ; try++ {
		ack, err := js.PublishMsg(ctx, m, jetstream.WithExpectStream(stream), jetstream.WithExpectLastSequencePerSubject(prev))
		if err == nil || !wrongLastSequence(err) || try == conflictTries {
			return ack, err
		}
		st, err := js.Stream(ctx, stream)
		if err != nil {
			return nil, err
		}
		last, err := st.GetLastMsgForSubject(ctx, m.Subject)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			prev = 0
		case err != nil:
			return nil, err
		default:
			prev = last.Sequence
		}
	}
}

// conflictTries bounds publishExpecting's tries.
const conflictTries = 5

// wrongLastSequence reports whether err is JetStream's refusal of the
// expected last subject sequence (10071; 10164 from a replicated stream).
func wrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}
