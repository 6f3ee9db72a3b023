package wsclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// The differential test: a seeded generator writes a script of traffic
// for one connection in both directions (messages of sizes on each length
// encoding's edges, Section 5.2; the server's fragmented at random, Section
// 5.4, with pings between fragments, Section 5.5.2; a close with a code and
// a reason, Section 5.5.1, from either side), coder/websocket's server
// plays its half, this client the other, and what each side received must
// be what the other sent.

// wsMsg is one data message: its opcode, and the sizes of the pieces the
// server writes it in (their sum is len(data)); a ping follows the pieces
// whose ping is set, with pingData's payload where the server library lets
// the test choose it.
type wsMsg struct {
	op       Opcode
	data     []byte
	frags    []int
	pings    []bool
	pingData [][]byte
}

// wsScript is one connection's traffic.
type wsScript struct {
	down, up     []wsMsg // server to client, client to server
	serverCloses bool
	code         StatusCode
	reason       string
}

// edges are payload lengths at the edges of Section 5.2's length encodings.
var edges = []int{0, 1, 125, 126, 127, 65535, 65536, 65537}

// frameSize picks a frame's payload length: an edge, a small or a large
// one; big allows the lengths over 64 KiB.
func frameSize(r *rand.Rand, big bool) int {
	for {
		var n int
		switch r.IntN(3) {
		case 0:
			n = edges[r.IntN(len(edges))]
		case 1:
			n = r.IntN(300)
		default:
			n = r.IntN(140000)
		}
		if big || n < 1024 {
			return n
		}
	}
}

// genMsg makes a message of 1 to 4 frames (one when frames is false).
func genMsg(r *rand.Rand, frames, big bool) wsMsg {
	m := wsMsg{op: OpBinary}
	n := 1
	if frames {
		n = 1 + r.IntN(4)
	}
	for range n {
		m.frags = append(m.frags, frameSize(r, big))
		m.pings = append(m.pings, r.IntN(4) == 0)
		p := make([]byte, []int{0, 1, 124, 125, r.IntN(126)}[r.IntN(5)]) // Section 5.5: at most 125
		for i := range p {
			p[i] = byte(r.Uint32())
		}
		m.pingData = append(m.pingData, p)
	}
	total := 0
	for _, f := range m.frags {
		total += f
	}
	m.data = make([]byte, total)
	if r.IntN(2) == 0 {
		m.op = OpText
		for i := range m.data {
			m.data[i] = byte('a' + r.IntN(26)) // text is UTF-8 (Section 5.6)
		}
	} else {
		for i := range m.data {
			m.data[i] = byte(r.Uint32())
		}
	}
	return m
}

// closeCodes are the codes a close frame may carry (Section 7.4).
var closeCodes = []StatusCode{1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 4000, 4999}

// genScript makes a connection's script; big allows messages over 64 KiB.
func genScript(r *rand.Rand, big bool) wsScript {
	s := wsScript{serverCloses: r.IntN(2) == 0, code: closeCodes[r.IntN(len(closeCodes))]}
	if r.IntN(4) == 0 {
		s.code = StatusCode(3000 + r.IntN(2000))
	}
	reason := make([]byte, r.IntN(124)) // a close frame's payload is at most 125 bytes
	for i := range reason {
		reason[i] = byte(' ' + r.IntN(95))
	}
	s.reason = string(reason)
	for range r.IntN(6) {
		s.down = append(s.down, genMsg(r, true, big))
	}
	for range r.IntN(6) {
		s.up = append(s.up, genMsg(r, false, big))
	}
	return s
}

// serverSaw is what the server library received.
type serverSaw struct {
	up      []wsMsg
	pongs   []string // the payloads of the pongs, in order
	pingErr error
	readErr error // the error that ended its reading
	// The close frame that ended its reading, when it was one.
	closed      bool
	closeCode   StatusCode
	closeReason string
}

// wsLib is a server library the client is compared with.
type wsLib struct {
	name string
	// play plays the server's half of s on the request.
	play func(w http.ResponseWriter, r *http.Request, s wsScript) serverSaw
	// pongs are the payloads of the pongs s should bring back.
	pongs func(s wsScript) []string
	// echoesReason tells whether the library's answer to a close frame
	// repeats its reason (Section 5.5.1 leaves that to it).
	echoesReason bool
}

// diffServer serves each script of scripts at /N with lib.
type diffServer struct {
	lib     wsLib
	url     string
	mu      sync.Mutex
	scripts map[string]wsScript
	saw     map[string]chan serverSaw
	n       int
}

func newDiffServer(tb testing.TB, lib wsLib) *diffServer {
	d := &diffServer{lib: lib, scripts: map[string]wsScript{}, saw: map[string]chan serverSaw{}}
	srv := httptest.NewServer(http.HandlerFunc(d.serve))
	tb.Cleanup(srv.Close)
	d.url = "ws" + strings.TrimPrefix(srv.URL, "http")
	return d
}

// add registers s and returns its URL and the channel of what the server saw.
func (d *diffServer) add(s wsScript) (string, chan serverSaw) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n++
	id := strconv.Itoa(d.n)
	d.scripts[id] = s
	d.saw[id] = make(chan serverSaw, 1)
	return d.url + "/" + id, d.saw[id]
}

func (d *diffServer) serve(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/")
	d.mu.Lock()
	s, ok := d.scripts[id]
	out := d.saw[id]
	d.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	out <- d.lib.play(w, r, s)
}

// coderLib is github.com/coder/websocket, the relay's side of the link:
// each Write of its Writer is one frame, and its pings carry a counter.
var coderLib = wsLib{name: "coder", play: playCoder, pongs: coderPongs, echoesReason: true}

func playCoder(w http.ResponseWriter, r *http.Request, s wsScript) serverSaw {
	var saw serverSaw
	var pmu sync.Mutex
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{OnPongReceived: func(_ context.Context, p []byte) {
		pmu.Lock()
		saw.pongs = append(saw.pongs, string(p))
		pmu.Unlock()
	}})
	if err != nil {
		return serverSaw{readErr: err}
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 22)
	ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
	defer cancel()
	allUp := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		saw.up, saw.readErr = readAll(ctx, ws, len(s.up), allUp)
	}()
	saw.pingErr = writeScript(ctx, ws, s.down)
	if s.serverCloses {
		select {
		case <-allUp:
			ws.Close(websocket.StatusCode(s.code), s.reason)
		case <-ctx.Done():
		}
	}
	<-readDone
	var ce websocket.CloseError
	if errors.As(saw.readErr, &ce) {
		saw.closed, saw.closeCode, saw.closeReason = true, StatusCode(ce.Code), ce.Reason
	}
	pmu.Lock()
	defer pmu.Unlock()
	return saw
}

// coderPongs: coder/websocket's Ping sends the count of pings so far.
func coderPongs(s wsScript) []string {
	var want []string
	for _, m := range s.down {
		for _, p := range m.pings {
			if p {
				want = append(want, strconv.Itoa(len(want)+1))
			}
		}
	}
	return want
}

// readAll reads messages until an error, closing allUp after the n-th.
func readAll(ctx context.Context, ws *websocket.Conn, n int, allUp chan struct{}) ([]wsMsg, error) {
	var got []wsMsg
	if n == 0 {
		close(allUp)
	}
	for {
		typ, b, err := ws.Read(ctx)
		if err != nil {
			return got, err
		}
		op := OpBinary
		if typ == websocket.MessageText {
			op = OpText
		}
		got = append(got, wsMsg{op: op, data: b})
		if len(got) == n {
			close(allUp)
		}
	}
}

// writeScript writes msgs, each Write of coder/websocket's Writer one frame,
// and a ping (which waits for its pong) where the script says.
func writeScript(ctx context.Context, ws *websocket.Conn, msgs []wsMsg) error {
	for _, m := range msgs {
		typ := websocket.MessageBinary
		if m.op == OpText {
			typ = websocket.MessageText
		}
		w, err := ws.Writer(ctx, typ)
		if err != nil {
			return err
		}
		rest := m.data
		for i, n := range m.frags {
			if _, err := w.Write(rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
			if m.pings[i] {
				if err := ws.Ping(ctx); err != nil {
					return fmt.Errorf("ping: %w", err)
				}
			}
		}
		if err := w.Close(); err != nil {
			return err
		}
	}
	return nil
}

// runScript plays s between this client and the server and reports every
// difference between what one side sent and the other received.
func runScript(t *testing.T, d *diffServer, s wsScript) {
	t.Helper()
	url, sawCh := d.add(s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, url, &Options{ReadLimit: 1 << 22})
	if err != nil {
		t.Fatal(err)
	}
	var got []wsMsg
	var readErr error
	allDown := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		if len(s.down) == 0 {
			close(allDown)
		}
		for {
			op, b, err := c.Read(ctx)
			if err != nil {
				readErr = err
				return
			}
			if got = append(got, wsMsg{op: op, data: b}); len(got) == len(s.down) {
				close(allDown)
			}
		}
	}()
	for _, m := range s.up {
		if err := c.Write(ctx, m.op, m.data); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	if !s.serverCloses {
		select {
		case <-allDown:
		case <-readDone:
		}
		if err := c.Close(s.code, s.reason); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	<-readDone
	saw := <-sawCh
	checkSide(t, "client", got, s.down)
	checkSide(t, "server", saw.up, s.up)
	checkClose(t, d.lib, s, readErr, saw)
}

// checkSide compares the messages one side received with those sent.
func checkSide(t *testing.T, side string, got, sent []wsMsg) {
	t.Helper()
	if len(got) != len(sent) {
		t.Errorf("the %s received %d messages, %d were sent", side, len(got), len(sent))
	}
	for i := range min(len(got), len(sent)) {
		g, w := got[i], sent[i]
		if g.op != w.op || !bytes.Equal(g.data, w.data) {
			t.Errorf("the %s's message %d: opcode %d, %d bytes; sent opcode %d, %d bytes (frames %v)", side, i, g.op, len(g.data), w.op, len(w.data), w.frags)
		}
	}
}

// checkClose checks the closing handshake both sides saw, and the pongs.
func checkClose(t *testing.T, lib wsLib, s wsScript, clientErr error, saw serverSaw) {
	t.Helper()
	var ce *CloseError
	wantReason := s.reason
	if !s.serverCloses && !lib.echoesReason {
		wantReason = ""
	}
	if !errors.As(clientErr, &ce) || ce.Code != s.code || ce.Reason != wantReason {
		t.Errorf("the client's Read ended with %v, want a close %d %q", clientErr, s.code, wantReason)
	}
	if !s.serverCloses && (!saw.closed || saw.closeCode != s.code || saw.closeReason != s.reason) {
		t.Errorf("the server's Read ended with %v, want a close %d %q", saw.readErr, s.code, s.reason)
	}
	if saw.pingErr != nil {
		t.Errorf("the server's writing: %v", saw.pingErr)
	}
	if want := lib.pongs(s); fmt.Sprintf("%q", saw.pongs) != fmt.Sprintf("%q", want) {
		t.Errorf("the server received pongs %q, want %q (one per ping, its payload)", saw.pongs, want)
	}
}

// wsLibs are the server libraries the client is compared with.
var wsLibs = []wsLib{coderLib, gorillaLib}

// TestDifferential plays 40 seeded scripts against each library's server.
// A failure names its seed: TORPOR_WS_SEED=n replays it alone.
func TestDifferential(t *testing.T) {
	seeds := make([]uint64, 40)
	for i := range seeds {
		seeds[i] = uint64(i) + 1
	}
	if v, err := strconv.ParseUint(os.Getenv("TORPOR_WS_SEED"), 10, 64); err == nil {
		seeds = []uint64{v}
	}
	for _, lib := range wsLibs {
		d := newDiffServer(t, lib)
		for _, seed := range seeds {
			t.Run(fmt.Sprint(lib.name, "/seed=", seed), func(t *testing.T) {
				runScript(t, d, genScript(rand.New(rand.NewPCG(seed, 0x6455)), true))
			})
		}
	}
}

// FuzzDifferential plays the script the fuzzer's seed generates (messages
// up to 1 KiB, to keep each input quick) against each library's server.
func FuzzDifferential(f *testing.F) {
	for _, s := range []uint64{1, 2, 3, 126, 65536} {
		f.Add(s, uint64(0))
	}
	var servers []*diffServer
	for _, lib := range wsLibs {
		servers = append(servers, newDiffServer(f, lib))
	}
	f.Fuzz(func(t *testing.T, seed, stream uint64) {
		for _, d := range servers {
			runScript(t, d, genScript(rand.New(rand.NewPCG(seed, stream)), false))
		}
	})
}
