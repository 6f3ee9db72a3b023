package relay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

// BenchmarkAsleepAnswer measures the latency of the 503 asleep answer
// through the real handler and a real (fsync'd, group-committed) bbolt
// queue over loopback HTTP, with 1, 16 and 64 concurrent senders. Each
// answer is sent only after its enqueue committed, so this is the
// sender-visible cost of durable store-and-forward. Reported: p50 and p99
// in milliseconds and answers per second, and beside them, measured right
// before and after on the same queue with as many concurrent callers,
// the queue's own Enqueue: p50-x-enqueue is the answer's p50 over the
// enqueue's, x-enqueue the answers' rate over the enqueues'.
func BenchmarkAsleepAnswer(b *testing.B) {
	for _, senders := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("senders=%d", senders), func(b *testing.B) {
			h := newHarness(b, func(c *Config) {
				c.Access.AdmitAll = true // no probation's ceiling: the bounds below
				c.Limits.Bounds = queuebounds.Default()
				c.Limits.Bounds.MaxMessages, c.Limits.Bounds.MaxPerPeer, c.Limits.Bounds.MaxBytes, c.Limits.Bounds.MaxPeerBytes = 1<<30, 1<<30, 1<<40, 1<<40
			})
			dev := didtest.Key(b, 1)
			h.publishOffline(b, dev, "sleep", deviceOpts{})
			path := "/a/" + dev.DID().String() + "/a2a/jsonrpc"
			keys := make([]*did.PrivateKey, senders)
			tokens := make([]string, senders)
			for i := range keys {
				keys[i] = didtest.Key(b, byte(10+i))
				tokens[i], _ = issueToken(keys[i], h.relay.cfg.PublicURL, h)
			}
			eP50, eRate, eCPU := directEnqueue(b, h.relay.cfg.Stores.Queue, c0(h), senders)
			lat := make([]time.Duration, b.N)
			tx0, st0 := txID(b, h), h.q.DB().Stats().TxStats
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			meter := benchcpu.Start(b)
			cpu0, start := cpuTime(b), time.Now()
			for s := range senders {
				wg.Go(func() { sendAsleep(b, h.srv.Listener.Addr().String(), path, tokens[s], &next, lat) })
			}
			wg.Wait()
			elapsed, cpu := time.Since(start), cpuTime(b)-cpu0
			meter.Stop()
			b.StopTimer()
			commits := float64(txID(b, h) - tx0)
			b.ReportMetric(float64(b.N)/commits, "enqueues/commit")
			st := h.q.DB().Stats().TxStats
			b.ReportMetric(float64(st.GetWriteTime()-st0.GetWriteTime())/commits/1e3, "µs-write/commit")
			p50, rate, eCPU2 := directEnqueue(b, h.relay.cfg.Stores.Queue, c0(h), senders)
			eP50, eRate, eCPU = (eP50+p50)/2, (eRate+rate)/2, (eCPU+eCPU2)/2
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/answer")
			b.ReportMetric(float64(eCPU.Nanoseconds())/1e3, "cpu-µs/enqueue")
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "answers/s")
			b.ReportMetric(float64(eP50.Microseconds())/1000, "enqueue-p50-ms")
			b.ReportMetric(eRate, "enqueues/s")
			b.ReportMetric(float64(lat[len(lat)/2])/float64(eP50), "p50-x-enqueue")
			b.ReportMetric(float64(b.N)/elapsed.Seconds()/eRate, "x-enqueue")
		})
	}
}

// sendAsleep posts to path, as one sender with token on one keep-alive
// HTTP/1.1 connection to addr, until next reaches b.N, recording each
// answer's latency in lat. It is a lean client: the request's bytes are
// prepared once (the headers a sender sends: Host, Authorization,
// A2A-Version, Content-Type, Content-Length), and each answer is read in
// full and must be a 503 that says queued:true. What it saves over
// net/http's client (a request, its headers and two goroutines' hand-offs
// per call) is the senders' CPU, which shares the 2 cores with the relay.
func sendAsleep(b *testing.B, addr, path, token string, next *atomic.Int64, lat []time.Duration) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Error(err)
		return
	}
	defer conn.Close()
	req := []byte("POST " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: Bearer " + token +
		"\r\nA2A-Version: 1.0\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(sendV1)) + "\r\n\r\n" + sendV1)
	br := bufio.NewReader(conn)
	var body bytes.Buffer
	for {
		i := next.Add(1) - 1
		if i >= int64(b.N) {
			return
		}
		t0 := time.Now()
		if _, err := conn.Write(req); err != nil {
			b.Error(err)
			return
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Error(err)
			return
		}
		body.Reset()
		_, err = body.ReadFrom(resp.Body)
		resp.Body.Close()
		lat[i] = time.Since(t0)
		if err != nil || resp.StatusCode != 503 || !bytes.Contains(body.Bytes(), []byte(`"queued":true`)) {
			b.Errorf("answer %d %q, %v; want a 503 with queued:true", resp.StatusCode, body.Bytes(), err)
			return
		}
	}
}

func c0(h *harness) time.Time { return h.clk.Now() }

// directEnqueue calls q.Enqueue from senders goroutines for about 300 ms,
// as the handler would (a sendV1 body, each sender its own DID, one agent
// of its own), and returns the calls' p50, rate and the process's CPU
// time (user and system) per call.
func directEnqueue(b *testing.B, q queue.Store, now time.Time, senders int) (time.Duration, float64, time.Duration) {
	bounds := queuebounds.Default()
	bounds.MaxMessages, bounds.MaxPerPeer, bounds.MaxBytes, bounds.MaxPeerBytes = 1<<30, 1<<30, 1<<40, 1<<40
	var (
		mu  sync.Mutex
		lat []time.Duration
		wg  sync.WaitGroup
	)
	cpu0, start := cpuTime(b), time.Now()
	for i := range senders {
		wg.Go(func() {
			r := queue.Record{Agent: "did:key:direct-enqueue", From: fmt.Sprint("did:key:sender", i), Body: []byte(sendV1)}
			var mine []time.Duration
			for time.Since(start) < 300*time.Millisecond || len(mine) < 5 {
				t0 := time.Now()
				if _, err := q.Enqueue(context.Background(), r, bounds, now); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), cpuTime(b)-cpu0
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[len(lat)/2], float64(len(lat)) / elapsed.Seconds(), cpu / time.Duration(len(lat))
}

// cpuTime is the CPU time (user and system) the process has used: the
// relay's and the senders' together, for they share it.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// txID is the id of the queue's last committed write transaction.
func txID(b *testing.B, h *harness) int {
	var id int
	if err := h.q.DB().View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		b.Fatal(err)
	}
	return id
}

// BenchmarkParseRequest reads a 4 KiB MLS message submission the way the
// relay classifies every request (parseRequest: a2a.ReadBody, duplicates
// and nesting refused, the handshake test), beside a plain encoding/json
// decode of the same body into the same members, which refuses nothing:
// the ratio is the price of one reading shared with the device.
func BenchmarkParseRequest(b *testing.B) {
	wire := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0, 1, 0, 2, 7}, 4<<10/5*3/4))
	body := []byte(`{"jsonrpc":"2.0","id":"r1","method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"mediaType":"` +
		a2a.MediaTypeMLSWire + `","data":{"mediaType":"` + a2a.MediaTypeMLSWire + `","wire":"` + wire + `"}}]}}}`)
	b.Run("parseRequest", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		meter := benchcpu.Start(b)
		for b.Loop() {
			if r := parseRequest(body); r.invalid != nil || r.kind != queue.KindMessage {
				b.Fatal(r.invalid)
			}
		}
		meter.Stop()
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		meter := benchcpu.Start(b)
		for b.Loop() {
			var env struct {
				JSONRPC, Method string
				ID              json.RawMessage
				Params          struct {
					Message struct{ Parts []json.RawMessage }
				}
			}
			if err := json.Unmarshal(body, &env); err != nil {
				b.Fatal(err)
			}
		}
		meter.Stop()
	})
}
