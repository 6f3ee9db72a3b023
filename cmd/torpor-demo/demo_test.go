package main

import (
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/test/procs"
	"github.com/torpor-dev/torpor/wake"
)

// memReplay is a replay cache in memory, for the receiver checks below.
type memReplay map[string]bool

func (m memReplay) Seen(issuer, id string, _ time.Time) (bool, error) { return m[issuer+" "+id], nil }
func (m memReplay) Admit(issuer, id string, _ time.Time) error {
	m[issuer+" "+id] = true
	return nil
}

func mustKey(t testing.TB) *did.PrivateKey {
	t.Helper()
	k, err := did.Generate(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestLettersFailAsLabelled runs every letter of the demo through the real
// six receiver checks, in the order the demo sends them, with the clock at
// the agent's wake: each must end as the demo tells the reader it will.
func TestLettersFailAsLabelled(t *testing.T) {
	f := forge{sender: mustKey(t), stranger: mustKey(t)}
	sent := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	valid, err := f.Valid(sent, "hello")
	if err != nil {
		t.Fatal(err)
	}
	build := []func() (Letter, error){
		func() (Letter, error) { return valid, nil },
		func() (Letter, error) { return f.Forged(sent, "a", "b") },
		func() (Letter, error) { return f.Expired(sent, 2*time.Minute) },
		func() (Letter, error) { return Replay(valid), nil },
		func() (Letter, error) { return f.WrongSender(sent) },
		func() (Letter, error) { return f.NotPermitted(sent) },
		func() (Letter, error) { return f.Action(sent, "open-valve", "k1", 1250) },
	}
	clk := clocktest.New(sent.Add(20 * time.Minute)) // the window opens later
	r := &governed.Receiver{Purposes: []string{"comms:message", "action:open-valve"}, Clock: clk}
	cache := memReplay{}
	for _, b := range build {
		l, err := b()
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Accept(l.Object, governed.Input{Sender: f.sender.DID(), Replay: cache})
		got := expectAccept
		if err != nil {
			got = governed.ReasonOf(err).String()
		}
		want := l.Expect
		if want == expectHold {
			want = expectAccept // the six checks pass; the gate holds it
		}
		if got != want {
			t.Errorf("letter %q: receiver says %s (%v), want %s", l.Label, got, err, want)
		}
	}
}

func TestActionKey(t *testing.T) {
	f := forge{sender: mustKey(t), stranger: mustKey(t)}
	l, err := f.Action(time.Now(), "open-valve", "valve-7", 1250)
	if err != nil {
		t.Fatal(err)
	}
	o, err := governed.Parse(l.Object)
	if err != nil {
		t.Fatal(err)
	}
	if want := o.Issuer.String() + " valve-7"; l.Key != want {
		t.Errorf("Action key = %q, want %q (runtime/gate's Action.LedgerKey)", l.Key, want)
	}
	if o.Governance.Purpose != "action:open-valve" || !strings.Contains(string(o.Payload), `"amount":1250`) {
		t.Errorf("Action object = purpose %q payload %s", o.Governance.Purpose, o.Payload)
	}
}

func TestParseDrain(t *testing.T) {
	tests := []struct {
		in       string
		counts   map[string]int
		rejected map[string]int
	}{
		{"records=8 acked=8 deferred=0 held=1 rejected[expired=1 replay=2]",
			map[string]int{"records": 8, "acked": 8, "deferred": 0, "held": 1}, map[string]int{"expired": 1, "replay": 2}},
		{"records=0 acked=0 rejected[]", map[string]int{"records": 0, "acked": 0}, map[string]int{}},
		{"", map[string]int{}, map[string]int{}},
	}
	for _, tt := range tests {
		got := parseDrain(tt.in)
		if diff := cmp.Diff(tt.counts, got.counts); diff != "" {
			t.Errorf("parseDrain(%q) counts (-want +got):\n%s", tt.in, diff)
		}
		if diff := cmp.Diff(tt.rejected, got.rejected); diff != "" {
			t.Errorf("parseDrain(%q) rejected (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestTable(t *testing.T) {
	got := Table([]string{"a", "bb"}, [][]string{{"xxx", "y"}, {"", "→z"}})
	want := "a    bb\n---  --\nxxx  y\n     →z\n"
	if got != want {
		t.Errorf("Table = %q, want %q", got, want)
	}
}

func TestCounts(t *testing.T) {
	tests := []struct {
		in   map[string]int
		want string
	}{
		{nil, "–"},
		{map[string]int{"replay": 2, "expired": 1}, "expired, replay×2"},
	}
	for _, tt := range tests {
		if got := counts(tt.in); got != tt.want {
			t.Errorf("counts(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWakeWhy(t *testing.T) {
	tests := []struct {
		mode   wake.Mode
		reason string
		want   string
	}{
		{wake.HourlyWake, "boot", "booted outside its window"},
		{wake.HourlyWake, "timer", "on its timer"},
		{wake.Sleep, "timer", "its operator scheduled"},
		{wake.AlwaysOn, "boot", "linked since it started"},
		{wake.Sleep, "gpio", "woke (gpio)"},
	}
	for _, tt := range tests {
		if got := wakeWhy(tt.mode, tt.reason); !strings.Contains(got, tt.want) {
			t.Errorf("wakeWhy(%s, %s) = %q, want it to contain %q", tt.mode, tt.reason, got, tt.want)
		}
	}
}

// TestSleepToldAfterItsWake: the "asleep until" line follows the wake's
// report at once, although the wake's diagnostics were logged before it
// (during the drain); it used to wait for as many diagnostic lines after
// the report, so it came at the next wake's first line, after the time it
// names, or never after the last wake.
func TestSleepToldAfterItsWake(t *testing.T) {
	var out strings.Builder
	clk := clocktest.New(time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC))
	d := &demo{n: NewNarrator(&out, clk), clock: clk}
	a := &agent{name: "sleeper", mode: wake.Sleep, drained: map[string]int{}, rejected: map[string]int{}}
	for _, s := range []string{
		`time=2026-12-02T15:00:00Z level=WARN msg="record rejected or deferred" seq=3 cause=expired detail=x`,
		`time=2026-12-02T15:00:00Z level=INFO msg="action held" seq=4 reason=consequential key="k 1"`,
		`time=2026-12-02T15:00:01Z level=INFO msg=wake reason=timer mode=sleep awake=1s drain="records=2 acked=2 deferred=0 held=1 rejected[expired=1]" nextWake=2026-12-02T15:20:00Z`,
	} {
		l, err := procs.ParseLine(s)
		if err != nil {
			t.Fatal(err)
		}
		d.agentLine(a, l)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "asleep until 15:20:00 (in 20m0s") {
		t.Errorf("the last line is %q, want the sleep until 15:20:00; all:\n%s", last, out.String())
	}
}
