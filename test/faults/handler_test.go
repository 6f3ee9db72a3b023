package faults

import "testing"

// TestHandlerSaid: only a line that names one process other than init
// yields a pid to kill. Before handlerSaid, an empty line (a handler
// killed before it wrote) parsed as pid 0, and kill(0, SIGKILL) took
// down the whole CI job with the test.
func TestHandlerSaid(t *testing.T) {
	for _, c := range []struct {
		line string
		pid  int
		id   string
		ok   bool
	}{
		{"4242 h04\n", 4242, "h04", true},
		{"", 0, "", false},
		{"\n", 0, "", false},
		{"0 h04\n", 0, "", false},
		{"-1 h04\n", 0, "", false},
		{"1 h04\n", 0, "", false},
		{"4242\n", 0, "", false},
		{"x h04\n", 0, "", false},
		{"4242 h04 extra\n", 0, "", false},
	} {
		pid, id, ok := handlerSaid(c.line)
		if pid != c.pid || id != c.id || ok != c.ok {
			t.Errorf("handlerSaid(%q) = %d, %q, %v; want %d, %q, %v", c.line, pid, id, ok, c.pid, c.id, c.ok)
		}
	}
}
