package relay

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a"
)

// BenchmarkAsleepAnswer measures the latency of the 503 asleep answer
// through the real handler and a real (fsync'd, group-committed) bbolt
// queue over loopback HTTP, with 1, 16 and 64 concurrent senders. Each
// answer is sent only after its enqueue committed, so this is the
// sender-visible cost of durable store-and-forward. Reported: p50 and p99
// in milliseconds and answers per second.
func BenchmarkAsleepAnswer(b *testing.B) {
	for _, senders := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("senders=%d", senders), func(b *testing.B) {
			h := newHarness(b, func(c *Config) {
				c.Bounds = queue.DefaultBounds()
				c.Bounds.MaxMessages, c.Bounds.MaxPerPeer, c.Bounds.MaxBytes = 1<<30, 1<<30, 1<<40
			})
			dev := didtest.Key(b, 1)
			h.publishOffline(b, dev, "sleep", deviceOpts{})
			url := h.srv.URL + "/a/" + dev.DID().String() + "/a2a/jsonrpc"
			tr := &http.Transport{MaxIdleConnsPerHost: senders}
			client := &http.Client{Transport: tr}
			defer tr.CloseIdleConnections()
			keys := make([]*did.PrivateKey, senders)
			tokens := make([]string, senders)
			for i := range keys {
				keys[i] = didtest.Key(b, byte(10+i))
				tokens[i], _ = issueToken(keys[i], h.relay.cfg.PublicURL, h)
			}
			lat := make([]time.Duration, b.N)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for s := range senders {
				wg.Go(func() { sendAsleep(b, client, url, tokens[s], &next, lat) })
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "answers/s")
		})
	}
}

// sendAsleep posts to url, as one sender with token, until next reaches
// b.N, recording each answer's latency in lat; every answer must be a 503.
func sendAsleep(b *testing.B, client *http.Client, url, token string, next *atomic.Int64, lat []time.Duration) {
	for {
		i := next.Add(1) - 1
		if i >= int64(b.N) {
			return
		}
		req, _ := http.NewRequest("POST", url, strings.NewReader(sendV1))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("A2A-Version", "1.0")
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			b.Error(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat[i] = time.Since(t0)
		if resp.StatusCode != 503 {
			b.Errorf("status %d", resp.StatusCode)
			return
		}
	}
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
		for b.Loop() {
			if r := parseRequest(body); r.invalid != nil || r.kind != queue.KindMessage {
				b.Fatal(r.invalid)
			}
		}
	})
	b.Run("json.Unmarshal", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
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
	})
}
