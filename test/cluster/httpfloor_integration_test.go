//go:build integration

package cluster

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// envHTTPFloor, set to NATS URLs (comma-separated), makes this package's
// test binary the http-floor process of BenchmarkEnqueueCPU
// (httpFloorMain); envHTTPFloorPrefix is the subjects' prefix it publishes
// under.
const (
	envHTTPFloor       = "TORPOR_CPU_HTTPFLOOR"
	envHTTPFloorPrefix = "TORPOR_CPU_HTTPFLOOR_PREFIX"
)

// floorAnswer is what the http-floor server answers every request with:
// the bytes of the relay's 503 agent_asleep answer, queued, to the
// benchmark's JSON-RPC calls (transport/relay, "The asleep answer"),
// with the Retry-After the relay would give.
const (
	floorAnswer = `{"jsonrpc":"2.0","id":"bench","error":{"code":-32003,"message":"asleep, try later",` +
		`"data":{"error":"agent_asleep","queued":true,"retryAfterSec":840}},` +
		`"message":"asleep, try later","queued":true,"retryAfterSec":840}`
	floorRetryAfter = "840"
)

// floorMaxBody bounds the body the http-floor server reads, as the
// relay's default --max-body does.
const floorMaxBody = 1 << 20

// httpFloorMain is the http-floor server: the least any server can do that
// takes the senders' requests over HTTP and makes each durable with one
// JetStream publish. It listens on a loopback port, writes "listening
// ADDR" to out, and for each POST to /a/I/a2a/jsonrpc reads the body,
// makes the one publish the protocol side makes for sender I with the
// body as its data (protocolPublisher: the record's headers, the expected
// stream and last subject sequence), waits for the acknowledgement and
// answers 503 with floorAnswer; no parsing, no check, no store. It
// returns when in ends.
func httpFloorMain(urls []string, pre string, in io.Reader, out io.Writer) error {
	jss, err := connectJetStreams(urls)
	if err != nil {
		return err
	}
	publish := protocolPublisher(jss, pre)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: floorHandler(publish)}
	go srv.Serve(ln)
	fmt.Fprintln(out, "listening", ln.Addr().String())
	io.Copy(io.Discard, in)
	return srv.Close()
}

// floorHandler is httpFloorMain's handler over publish.
func floorHandler(publish func(i int, data []byte) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.Path, "/a/")
		id, _, _ := strings.Cut(rest, "/")
		i, err := strconv.Atoi(id)
		if !ok || err != nil || r.Method != http.MethodPost {
			http.Error(w, "want POST /a/I/a2a/jsonrpc", http.StatusBadRequest)
			return
		}
		data, err := io.ReadAll(io.LimitReader(r.Body, floorMaxBody))
		if err == nil {
			err = publish(i, data)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h["Retry-After"] = []string{floorRetryAfter}
		h["Content-Type"] = contentTypeJSON
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, floorAnswer)
	})
}

// contentTypeJSON is the relay's Content-Type of a JSON answer.
var contentTypeJSON = []string{"application/json; charset=utf-8"}

// startHTTPFloor starts this test binary as the http-floor process
// (httpFloorMain) on the servers urls, publishing under pre, and returns
// its pid and its URL; it ends with the benchmark.
func startHTTPFloor(b *testing.B, urls []string, pre string) (int, string) {
	pid, _, out := startSelf(b, envHTTPFloor+"="+strings.Join(urls, ","), envHTTPFloorPrefix+"="+pre)
	line, err := out.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		b.Fatalf("http-floor: %q, %v", line, err)
	}
	return pid, "http://" + addr
}

// floorSender returns the http-floor side's run: n requests from the 64
// senders to the floor at url, sender i's to /a/i/..., each the relay
// side's request (body, token) and each wanting 503 queued.
func floorSender(b *testing.B, url string) func(n int) error {
	toks := make([]string, benchSenders)
	for i := range toks {
		toks[i] = relayToken(b, i)
	}
	payload := body("bench", 1024)
	return func(n int) error {
		return spread(n, func(i int) error { return queued(url, strconv.Itoa(i), toks[i], payload) })
	}
}
