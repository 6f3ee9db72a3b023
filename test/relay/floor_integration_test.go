//go:build integration

package relay

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
)

// floorListening is the line the floor server prints once it serves.
var floorListening = regexp.MustCompile(`floor listening on (http://\S+)`)

// floorServer is the floor of BenchmarkAnswerPath: the least a server
// that promises durability can do per request. It reads each POST body
// whole, appends it (length-prefixed) to one file in dir, fsyncs a group
// of bodies at once (group commit: the bodies that arrived while the last
// fsync ran), and only then answers 503 with a small JSON body, as the
// relay answers for a sleeping agent. No parsing, no checks, no index.
func floorServer(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, "bodies"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	commits := make(chan floorCommit, 1024)
	go groupCommit(f, commits)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "floor listening on http://%s\n", ln.Addr())
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		done := make(chan error, 1)
		commits <- floorCommit{body: body, done: done}
		if err := <-done; err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":"agent_asleep","queued":true}`)
	}))
}

// floorCommit is one body waiting for its fsync.
type floorCommit struct {
	body []byte
	done chan error
}

// groupCommit writes every body waiting, fsyncs once, answers them all,
// and starts over.
func groupCommit(f *os.File, commits <-chan floorCommit) {
	var buf []byte
	for c := range commits {
		batch := []floorCommit{c}
	more:
		for {
			select {
			case c := <-commits:
				batch = append(batch, c)
			default:
				break more
			}
		}
		buf = buf[:0]
		for _, c := range batch {
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(c.body)))
			buf = append(buf, c.body...)
		}
		_, err := f.Write(buf)
		if err == nil {
			err = f.Sync()
		}
		for _, c := range batch {
			c.done <- err
		}
	}
}
