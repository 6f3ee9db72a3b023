package qmp_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/torpor-dev/torpor/test/qemu/qmp"
)

// fakeQEMU speaks the server side of QMP as QEMU 7.2 does, and records the
// commands it received.
func fakeQEMU(t *testing.T) (string, <-chan []string) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "qmp.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	got := make(chan []string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		var cmds []string
		defer func() { got <- cmds }()
		w := func(s string) { c.Write([]byte(s + "\r\n")) }
		w(`{"QMP": {"version": {"qemu": {"micro": 22, "minor": 2, "major": 7}, "package": ""}, "capabilities": ["oob"]}}`)
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			var req struct {
				Execute string `json:"execute"`
			}
			if json.Unmarshal(sc.Bytes(), &req) != nil {
				return
			}
			cmds = append(cmds, req.Execute)
			switch req.Execute {
			case "qmp_capabilities":
				w(`{"return": {}}`)
			case "system_powerdown":
				w(`{"timestamp": {"seconds": 1796220089, "microseconds": 5}, "event": "POWERDOWN"}`)
				w(`{"return": {}}`)
			case "query-status":
				w(`{"return": {"status": "running", "singlestep": false, "running": true}}`)
			default:
				w(`{"error": {"class": "CommandNotFound", "desc": "The command ` + req.Execute + ` has not been found"}}`)
			}
		}
	}()
	return sock, got
}

func TestConn(t *testing.T) {
	sock, got := fakeQEMU(t)
	q, err := qmp.Dial(sock, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Execute("system_powerdown", nil); err != nil {
		t.Fatal(err)
	}
	ev := q.Events()
	if len(ev) != 1 || ev[0].Event != "POWERDOWN" || ev[0].Timestamp.Seconds != 1796220089 {
		t.Errorf("events = %+v, want one POWERDOWN", ev)
	}
	ret, err := q.Execute("query-status", nil)
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ Status string }
	if err := json.Unmarshal(ret, &st); err != nil || st.Status != "running" {
		t.Errorf("query-status = %s, %v", ret, err)
	}
	_, err = q.Execute("frobnicate", map[string]any{"x": 1})
	var qe *qmp.Error
	if !errors.As(err, &qe) || qe.Class != "CommandNotFound" {
		t.Errorf("unknown command error = %v, want CommandNotFound", err)
	}
	q.Close()
	want := []string{"qmp_capabilities", "system_powerdown", "query-status", "frobnicate"}
	if diff := cmp.Diff(want, <-got); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
}

func TestDialNoServer(t *testing.T) {
	if _, err := qmp.Dial(filepath.Join(t.TempDir(), "none.sock"), time.Second); err == nil {
		t.Error("Dial to a missing socket succeeded")
	}
}
