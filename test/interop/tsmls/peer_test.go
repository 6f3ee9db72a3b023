package tsmls

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The hermetic tests run this test binary as a fake peer (FAKE_TSMLS_PEER=1)
// so that the protocol plumbing is tested without Node: ids, errors,
// timeouts, a dying process, shutdown.
func TestMain(m *testing.M) {
	if os.Getenv("FAKE_TSMLS_PEER") == "1" {
		fakePeer()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fakePeer answers: hello; echo (returns its request); fail (a
// ValidationError); hang (no answer, but later requests are answered);
// stray (a non-JSON stdout line, then an answer); die (exits with status 3
// after writing to stderr).
func fakePeer() {
	sc := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for sc.Scan() {
		var req map[string]any
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			out.Encode(map[string]any{"id": nil, "ok": false, "error": map[string]string{"name": "BadRequest", "message": err.Error()}})
			continue
		}
		id := req["id"]
		switch req["op"] {
		case "hello":
			out.Encode(map[string]any{"id": id, "ok": true, "result": map[string]any{"tsMls": "fake", "node": "none"}})
		case "echo":
			out.Encode(map[string]any{"id": id, "ok": true, "result": req})
		case "fail":
			out.Encode(map[string]any{"id": id, "ok": false, "error": map[string]string{"name": "ValidationError", "message": "nope"}})
		case "hang":
		case "stray":
			fmt.Println("this is not JSON")
			out.Encode(map[string]any{"id": id, "ok": true, "result": map[string]any{}})
		case "die":
			fmt.Fprintln(os.Stderr, "boom: fake peer dying")
			os.Exit(3)
		}
	}
}

func startFake(t *testing.T) *Peer {
	t.Helper()
	t.Setenv("FAKE_TSMLS_PEER", "1")
	p, err := Start(context.Background(), &Config{Node: os.Args[0], Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("Start(fake) = %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestCallSendsIDOpAndArgs(t *testing.T) {
	p := startFake(t)
	args := struct {
		Actor string `json:"actor"`
		Seed  Hex    `json:"seed"`
		N     int    `json:"n"`
	}{"alice", Hex{0x00, 0xab}, 7}
	var got map[string]any
	if err := p.call(context.Background(), "echo", args, &got); err != nil {
		t.Fatalf("call(echo) = %v", err)
	}
	want := map[string]any{"id": float64(2), "op": "echo", "actor": "alice", "seed": "00ab", "n": float64(7)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("echoed request mismatch (-want +got):\n%s", diff)
	}
	if err := p.call(context.Background(), "echo", nil, &got); err != nil || got["op"] != "echo" {
		t.Errorf("call(echo, nil) = %v, %v; want the bare request", got, err)
	}
	if err := p.call(context.Background(), "echo", []int{1}, nil); err == nil {
		t.Errorf("call with non-object args = nil error, want one")
	}
}

func TestPeerErrorIsTyped(t *testing.T) {
	p := startFake(t)
	err := p.call(context.Background(), "fail", nil, nil)
	var e *Error
	if !errors.As(err, &e) || e.Name != "ValidationError" || e.Op != "fail" || e.Message != "nope" {
		t.Fatalf("call(fail) = %v, want *Error{fail ValidationError nope}", err)
	}
}

func TestCallTimeoutLeavesPeerUsable(t *testing.T) {
	p := startFake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := p.call(ctx, "hang", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call(hang) = %v, want DeadlineExceeded", err)
	}
	if err := p.call(context.Background(), "stray", nil, nil); err != nil {
		t.Fatalf("call after a timeout and a stray line = %v", err)
	}
	if !strings.Contains(p.Stderr(), "this is not JSON") {
		t.Errorf("Stderr() = %q, want the stray stdout line kept", p.Stderr())
	}
}

func TestPeerDeathFailsCalls(t *testing.T) {
	p := startFake(t)
	err := p.call(context.Background(), "die", nil, nil)
	if !errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "boom: fake peer dying") {
		t.Fatalf("call(die) = %v, want ErrClosed with the peer's stderr", err)
	}
	if err := p.call(context.Background(), "echo", nil, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("call after death = %v, want ErrClosed", err)
	}
}

func TestCloseThenCall(t *testing.T) {
	p := startFake(t)
	if err := p.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if _, err := p.Hello(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Hello after Close = %v, want ErrClosed", err)
	}
}

func TestHexJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Hex
		bad  bool
	}{
		{"bytes", `"00ff10"`, Hex{0x00, 0xff, 0x10}, false},
		{"upper case", `"ABCD"`, Hex{0xab, 0xcd}, false},
		{"empty", `""`, Hex{}, false},
		{"null", `null`, nil, false},
		{"odd length", `"abc"`, nil, true},
		{"not hex", `"zz"`, nil, true},
		{"number", `12`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Hex
			err := json.Unmarshal([]byte(tt.in), &h)
			if (err != nil) != tt.bad {
				t.Fatalf("Unmarshal(%s) error = %v, want error %v", tt.in, err, tt.bad)
			}
			if !tt.bad && !cmp.Equal([]byte(h), []byte(tt.want)) {
				t.Errorf("Unmarshal(%s) = %x, want %x", tt.in, h, tt.want)
			}
		})
	}
	b, err := json.Marshal(Hex{0xde, 0xad})
	if err != nil || string(b) != `"dead"` {
		t.Errorf("Marshal(dead) = %s, %v", b, err)
	}
}

func TestLocateChecksModules(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Setenv(DirEnv, t.TempDir())
		if _, _, err := Locate(); !errors.Is(err, ErrNoNode) {
			t.Fatalf("Locate() without node = %v, want ErrNoNode", err)
		}
		return
	}
	write := func(dir, rel, content string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		files map[string]string
		want  error
	}{
		{"nothing installed", map[string]string{"peer.mjs": ""}, ErrNoModules},
		{"wrong ts-mls", map[string]string{
			"peer.mjs":                                "",
			"node_modules/ts-mls/package.json":        `{"version":"2.0.0-rc.10"}`,
			"node_modules/@noble/hashes/package.json": `{"version":"2.0.1"}`,
		}, ErrNoModules},
		{"no noble hashes", map[string]string{
			"peer.mjs":                         "",
			"node_modules/ts-mls/package.json": `{"version":"1.6.4"}`,
		}, ErrNoModules},
		{"locked versions", map[string]string{
			"peer.mjs":                                "",
			"node_modules/ts-mls/package.json":        `{"version":"1.6.4"}`,
			"node_modules/@noble/hashes/package.json": `{"version":"2.0.1"}`,
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for rel, c := range tt.files {
				write(dir, rel, c)
			}
			t.Setenv(DirEnv, dir)
			_, got, err := Locate()
			if !errors.Is(err, tt.want) {
				t.Fatalf("Locate() error = %v, want %v", err, tt.want)
			}
			if err == nil && got != dir {
				t.Errorf("Locate() dir = %q, want %q", got, dir)
			}
		})
	}
}
