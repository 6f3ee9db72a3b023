//go:build integration

package qemu

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/session/sender"
	"github.com/torpor-dev/torpor/test/procs"
	"github.com/torpor-dev/torpor/test/qemu/vm"
	"github.com/torpor-dev/torpor/wake"
)

// The agent's files in the guest.
const (
	guestConfig = "/etc/torpor/agent.json"
	guestKey    = "/etc/torpor/agent.key"
)

// agentBoot is one boot of the real torpor-agent (cmd/torpor-agent,
// cross-built for arm64) as the guest's program, with the qemu-virt board
// profile, linked to a relay on the host.
type agentBoot struct {
	// Methods are the wake methods of the configuration ("wake.methods").
	Methods []string
	// Lead is how long after the machine starts the agent's hourly window
	// opens (and then every hour). The window offset in the configuration
	// is computed from it and the wake minute of the agent's DID, as an
	// operator spreading a fleet would set it.
	Lead time.Duration
	// WindowLength is the window's length.
	WindowLength time.Duration
	// DTB and Modules are passed to the machine.
	DTB     string
	Modules []string
	// ClockStep steps the guest's clock before the agent starts
	// (vm.Machine.ClockStep).
	ClockStep time.Duration
}

// agentConfig is torpor-agent's configuration file (runtime/conffile,
// version 1) for the guest: board qemu-virt, hourly_wake, one exec handler
// (test/qemu/guest/sink) for comms:*.
func agentConfig(t testing.TB, key *did.PrivateKey, relayURL string, b agentBoot, start time.Time) []byte {
	t.Helper()
	c := map[string]any{
		"version": 1, "key": guestKey, "dataDir": "/tmp/torpor", "relay": relayURL, "name": "qemu-virt-agent",
		"board": "qemu-virt", "wake": map[string]any{"methods": b.Methods},
		"mode":        string(wake.HourlyWake),
		"window":      map[string]string{"length": b.WindowLength.String(), "offset": windowOffset(key.DID(), start).String()},
		"purposes":    []string{"comms:*"},
		"handlers":    []any{map[string]any{"purpose": "comms:*", "exec": map[string]any{"path": "/bin/sink", "timeout": "30s"}}},
		"keyPackages": 4,
	}
	out, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// windowOffset is the window offset that makes the hourly window of the
// agent id open at start's position in the hour: the window opens at the
// DID's wake minute and second plus the offset (wake.Window).
func windowOffset(id did.DID, start time.Time) time.Duration {
	into := start.Sub(start.Truncate(time.Hour))
	return into - wake.SpreadWindowFor(id.String()).Shift() - time.Duration(wake.WakeMinute(id.String()))*time.Minute
}

// boot starts the machine: the agent with its key and configuration, the
// sink, the network to reach the relay, the kernel's PM debug messages on
// the console so that the host sees the guest suspend and resume. It
// returns the machine and when the agent's window opens: b.Lead from now,
// in whole seconds, counted once the binaries are built.
func (b agentBoot) boot(t *testing.T, k *vm.Kernel, key *did.PrivateKey, r *hostRelay) (*vm.VM, time.Time) {
	t.Helper()
	agent, sink := vm.GuestBinary(t, "./cmd/torpor-agent"), vm.GuestBinary(t, "./test/qemu/guest/sink")
	vm.GuestBinary(t, "./test/qemu/guest/init")
	start := time.Now().Add(b.Lead).Truncate(time.Second)
	return vm.Start(t, vm.Machine{
		Kernel: k, DTB: b.DTB,
		Files: map[string][]byte{
			"bin/torpor-agent":                   agent,
			"bin/sink":                           sink,
			strings.TrimPrefix(guestConfig, "/"): agentConfig(t, key, r.URL, b, start),
			strings.TrimPrefix(guestKey, "/"):    did.MarshalKeyFile(key),
		},
		Modes:   map[string]uint32{strings.TrimPrefix(guestKey, "/"): 0o600},
		Modules: append([]string{"virtio_mmio", "virtio_net"}, b.Modules...), Net: true,
		Writes: []string{"/proc/sys/kernel/printk=8", "/sys/power/pm_debug_messages=1"},
		Run:    "/bin/torpor-agent", Args: []string{"--config", guestConfig}, ClockStep: b.ClockStep,
	}), start
}

// agentVM is a running agentBoot and its cast: the agent's key, the relay
// on the host that admits it, a sender with its own key, the guest's
// console (followed for up to 4 minutes from the start) and when the
// agent's window opens.
type agentVM struct {
	key    *did.PrivateKey
	relay  *hostRelay
	snd    *sender.Client
	sndKey *did.PrivateKey
	*console
	start time.Time
}

// run starts a relay on the host that admits a new agent key, a sender
// and the machine (boot).
func (b agentBoot) run(t *testing.T) *agentVM {
	t.Helper()
	k := vm.FindKernel(t)
	a := &agentVM{key: didtest.New(t)}
	a.relay = startRelay(t, relayOptions{Guest: true, Allow: []string{a.key.DID().String()}})
	a.snd, a.sndKey = newSender(t, a.relay)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	v, start := b.boot(t, k, a.key, a.relay)
	a.console, a.start = &console{t: t, v: v, ctx: ctx}, start
	return a
}

// checkLead fails the test when the sender's queueing ended less than a
// second before the agent's window: the boot took too long for lead.
func (a *agentVM) checkLead(lead time.Duration) {
	a.t.Helper()
	if left := time.Until(a.start); left < time.Second {
		a.t.Fatalf("queueing ended %v before the window: the boot took too long for the lead of %v", left, lead)
	}
}

// console follows the guest's console: the kernel's messages, the agent's
// log (slog text lines) and the sink's DELIVERED lines, in order.
type console struct {
	t    *testing.T
	v    *vm.VM
	ctx  context.Context
	next int // index of the next line to look at
}

// kernel waits for a kernel message containing s, after the events seen so
// far, and returns the host's time when it was read.
func (c *console) kernel(s string) time.Time {
	c.t.Helper()
	_, next, err := c.v.Await(c.ctx, c.next, func(l string) bool { return strings.Contains(l, s) })
	if err != nil {
		c.t.Fatalf("waiting for the kernel's %q: %v", s, err)
	}
	c.next = next
	return time.Now()
}

// wake waits for the agent's next wake report (the "wake" line it logs
// when a wake ends).
func (c *console) wake() procs.Line {
	c.t.Helper()
	var w procs.Line
	_, next, err := c.v.Await(c.ctx, c.next, func(s string) bool {
		l, err := procs.ParseLine(s)
		if err == nil && l.Msg == "wake" {
			w = l
			return true
		}
		return err == nil && l.Level == "ERROR"
	})
	if err != nil {
		c.t.Fatalf("waiting for the agent's wake report: %v", err)
	}
	if w.Msg != "wake" {
		c.t.Fatalf("the agent logged an error before its wake report: %s", c.v.Lines()[next-1])
	}
	c.next = next
	return w
}

// delivered returns the sink's DELIVERED lines among the console lines
// from index from to the current position.
func (c *console) delivered(from int) []sinkLine {
	c.t.Helper()
	var out []sinkLine
	lines := c.v.Lines()
	for _, l := range lines[from:min(c.next, len(lines))] {
		_, js, ok := strings.Cut(l, "DELIVERED ")
		if !ok {
			continue
		}
		var d sinkLine
		if err := json.Unmarshal([]byte(js), &d); err != nil {
			c.t.Errorf("sink line %q: %v", l, err)
			continue
		}
		out = append(out, d)
	}
	return out
}

// sinkLine mirrors test/qemu/guest/sink's DELIVERED line.
type sinkLine struct {
	ObjectID string `json:"objectId"`
	Issuer   string `json:"issuer"`
	Purpose  string `json:"purpose"`
	Text     string `json:"text"`
}

// drainCounts parses a wake report's drain summary (drain.Report.String):
// "records=6 acked=6 … handshake=1 rejected[purpose-not-permitted=1]".
func drainCounts(s string) map[string]int {
	out := map[string]int{}
	for _, m := range regexp.MustCompile(`([a-z-]+)=(\d+)`).FindAllStringSubmatch(s, -1) {
		n, _ := strconv.Atoi(m[2])
		out[m[1]] = n
	}
	return out
}

// letters are what both tests send while the agent sleeps: four messages
// its handler must receive, and an action it does not accept (purposes
// comms:* only), which the drain must reject at dequeue.
func letters(t testing.TB, key *did.PrivateKey) []letter {
	var ls []letter
	for i := range 4 {
		l := message(t, key, "comms:message", fmt.Sprintf("reading %d while the device slept", i+1))
		l.deliver = true
		ls = append(ls, l)
	}
	return append(ls, message(t, key, "action:open-door", "open the door"))
}

// checkDrain checks the wake report's drain and the deliveries the sink
// saw against what was sent: the MLS Welcome applied, every message
// handed to the handler exactly once, the action rejected.
func checkDrain(t *testing.T, report procs.Line, got []sinkLine, sent []letter, from did.DID) {
	t.Helper()
	counts := drainCounts(report.First("drain"))
	want := map[string]int{"records": len(sent) + 1, "acked": len(sent) + 1, "handshake": 1, "objects": len(sent),
		"accepted": len(sent) - 1, "delivered": len(sent) - 1, "purpose-not-permitted": 1}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("drain %s = %d, want %d (report %q)", k, counts[k], v, report.First("drain"))
		}
	}
	var wantGot []sinkLine
	for _, l := range sent {
		if l.deliver {
			wantGot = append(wantGot, sinkLine{ObjectID: l.id, Issuer: from.String(), Purpose: l.purpose, Text: l.text})
		}
	}
	if diff := cmp.Diff(wantGot, got); diff != "" {
		t.Errorf("objects the agent's handler received (-want +got):\n%s", diff)
	}
}

// checkQueueEmpty checks that the relay holds nothing more for the agent:
// every record was acknowledged after the device committed it.
func checkQueueEmpty(t *testing.T, r *hostRelay, id did.DID) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	depths, err := procs.QueueDepths(ctx, r.HTTP, r.URL)
	if err != nil {
		t.Fatal(err)
	}
	if n := depths[id.String()]; n != 0 {
		t.Errorf("the relay still queues %d records for the agent", n)
	}
}

func duration(t *testing.T, l procs.Line, key string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(l.Get(key))
	if err != nil {
		t.Fatalf("wake report %s=%q: %v", key, l.Get(key), err)
	}
	return d
}

// TestAgentRTCWake: the real torpor-agent in the guest (board qemu-virt,
// wake method rtc, hourly_wake) boots outside its window, publishes its
// state and KeyPackages to the relay on the host, arms the PL031's wake
// alarm for its window and suspends to idle. While it sleeps a sender on
// the host establishes an MLS pair session through the relay and sends
// four messages and one action the agent does not accept: the relay
// queues them (503 agent_asleep). The RTC wakes the guest at the window;
// the agent drains the queue over QEMU user networking, its handler
// receives exactly the four messages, the action is rejected at dequeue,
// and at the window's end the agent announces its next wake an hour later
// and suspends again.
func TestAgentRTCWake(t *testing.T) {
	// The window opens lead after boot: long enough for the boot, the
	// first wake and the queueing under TCG emulation on a loaded machine.
	const lead, length = 40 * time.Second, 10 * time.Second
	a := agentBoot{Methods: []string{"rtc"}, Lead: lead, WindowLength: length}.run(t)
	key, r, snd, sndKey, c, start := a.key, a.relay, a.snd, a.sndKey, a.console, a.start

	boot := c.wake()
	if boot.Get("reason") != "boot" || boot.Get("nextWake") != start.UTC().Format(time.RFC3339) {
		t.Fatalf("first wake: reason %q next wake %q; want boot, next wake %s", boot.Get("reason"), boot.Get("nextWake"), start.UTC().Format(time.RFC3339))
	}
	asleep := c.kernel("PM: suspend entry")
	sent := letters(t, sndKey)
	sendAll(t, snd, r, key.DID(), sent)
	a.checkLead(lead)
	from := c.next
	resumed := c.kernel("PM: suspend exit")
	w := c.wake()
	back := c.kernel("PM: suspend entry")
	got := c.delivered(from)
	t.Logf("boot wake: %s", boot.Raw)
	t.Logf("rtc wake: %s", w.Raw)
	t.Logf("host: guest suspended at %s, resumed %s later, asleep again %s after that",
		asleep.Format("15:04:05.000"), resumed.Sub(asleep).Round(time.Millisecond), back.Sub(resumed).Round(time.Millisecond))

	if w.Get("reason") != "rtc" {
		t.Errorf("wake reason %q, want rtc", w.Get("reason"))
	}
	// The kernel set the clock from the PL031, which agrees with it:
	// expiry is judged by the board's RTC (runtime/trusted).
	if w.Get("trustedTime") != "rtc" {
		t.Errorf("trusted time %q (%s), want rtc", w.Get("trustedTime"), w.Get("trustedTimeWhy"))
	}
	// Asleep from the end of the boot wake to the window's start, by
	// CLOCK_BOOTTIME; the RTC fires within a second either side.
	slept := duration(t, w, "slept")
	if want := start.Sub(boot.Time); slept < want-1500*time.Millisecond || slept > want+1500*time.Millisecond {
		t.Errorf("slept %v by CLOCK_BOOTTIME, want %v (from the boot wake's end to the window) ±1.5s", slept, want)
	}
	if host := resumed.Sub(asleep); slept < host-2*time.Second || slept > host+2*time.Second {
		t.Errorf("slept %v by CLOCK_BOOTTIME, but the host saw the guest suspended for %v", slept, host)
	}
	checkDrain(t, w, got, sent, sndKey.DID())
	checkQueueEmpty(t, r, key.DID())
	if want := start.Add(time.Hour).UTC().Format(time.RFC3339); w.Get("nextWake") != want {
		t.Errorf("next wake announced %q, want the next window %s", w.Get("nextWake"), want)
	}
	checkAsleepUntil(t, snd, r, key.DID(), sndKey, start.Add(time.Hour), length)
}

// checkAsleepUntil sends one more message after the agent went back to
// sleep: the relay must queue it and tell the sender to come back inside
// the window the agent announced (from next, for length).
func checkAsleepUntil(t *testing.T, snd *sender.Client, r *hostRelay, id did.DID, key *did.PrivateKey, next time.Time, length time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := snd.Send(ctx, sender.RelayPeer(r.URL, id), message(t, key, "comms:message", "after the window").obj)
	if err != nil {
		t.Fatalf("sending after the window: %v", err)
	}
	back := time.Now().Add(d.RetryAfter)
	if !d.Queued || back.Before(next.Add(-3*time.Second)) || back.After(next.Add(length+3*time.Second)) {
		t.Errorf("after the window: status %d queued %v Retry-After %v (back at %s), want queued with a Retry-After into the window at %s",
			d.Status, d.Queued, d.RetryAfter, back.UTC().Format(time.RFC3339), next.UTC().Format(time.RFC3339))
	}
}

// TestAgentGPIOWake: the real torpor-agent in the guest (board qemu-virt,
// wake methods rtc and gpio-keys, the device tree patched so that the
// gpio-keys button on PL061 line 3 is a wakeup source) boots outside its
// window, publishes its state and suspends to idle with the RTC armed for
// its window, twenty minutes away. While it sleeps the sender queues its
// letters through the relay; then the host presses the virt board's power
// button over QMP (system_powerdown pulses line 3). The agent must wake
// from the GPIO long before the RTC, drain the queue in a window of its
// configured length, and suspend again until its planned window.
func TestAgentGPIOWake(t *testing.T) {
	const fallback, length = 20 * time.Minute, 10 * time.Second
	a := agentBoot{Methods: []string{"rtc", "gpio-keys"}, Lead: fallback, WindowLength: length,
		DTB: vm.PatchDTB(t, 512, 1), Modules: []string{"gpio_keys"}}.run(t)
	key, r, snd, sndKey, c, start := a.key, a.relay, a.snd, a.sndKey, a.console, a.start

	boot := c.wake()
	if boot.Get("reason") != "boot" || boot.Get("nextWake") != start.UTC().Format(time.RFC3339) {
		t.Fatalf("first wake: reason %q next wake %q; want boot, next wake %s", boot.Get("reason"), boot.Get("nextWake"), start.UTC().Format(time.RFC3339))
	}
	bootEnd := time.Now()
	// The button wakes the guest only once it is in suspend-to-idle; the
	// kernel says so on the console (pm_debug_messages).
	c.kernel("PM: suspend-to-idle")
	sent := letters(t, sndKey)
	sendAll(t, snd, r, key.DID(), sent)
	q, err := c.v.QMP()
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	from := c.next
	// Someone presses the button a few seconds into the sleep, so that
	// the time asleep is long enough to compare with the host's view.
	<-time.After(time.Until(bootEnd.Add(3 * time.Second)))
	pressed := time.Now()
	if _, err := q.Execute("system_powerdown", nil); err != nil {
		t.Fatal(err)
	}
	resumed := c.kernel("PM: suspend exit")
	w := c.wake()
	c.kernel("PM: suspend entry")
	got := c.delivered(from)
	t.Logf("boot wake: %s", boot.Raw)
	t.Logf("gpio wake: %s", w.Raw)
	t.Logf("host: button pressed %v after the boot wake's report, resume seen %v after the press",
		pressed.Sub(bootEnd).Round(time.Millisecond), resumed.Sub(pressed).Round(time.Millisecond))

	checkButtonWake(t, w, bootEnd, pressed, resumed)
	checkDrain(t, w, got, sent, sndKey.DID())
	checkQueueEmpty(t, r, key.DID())
	// Woken early, the agent kept a window of its configured length and
	// then planned its hourly window again.
	if w.Get("nextWake") != start.UTC().Format(time.RFC3339) {
		t.Errorf("next wake announced %q, want the planned window %s", w.Get("nextWake"), start.UTC().Format(time.RFC3339))
	}
	checkAsleepUntil(t, snd, r, key.DID(), sndKey, start, length)
}

// checkButtonWake checks that w, the wake report after the button press,
// is a GPIO wake that slept from bootEnd, the boot wake's end, until the
// press at pressed (the host saw the resume at resumed).
func checkButtonWake(t *testing.T, w procs.Line, bootEnd, pressed, resumed time.Time) {
	t.Helper()
	if w.Get("reason") != "gpio" {
		t.Errorf("wake reason %q, want gpio (the gpio-keys wakeup source)", w.Get("reason"))
	}
	// Asleep from the boot wake's end until the press, by CLOCK_BOOTTIME:
	// woken by the button, not by the RTC twenty minutes later.
	slept := duration(t, w, "slept")
	if lo, hi := pressed.Sub(bootEnd)-time.Second, resumed.Sub(bootEnd)+time.Second; slept < lo || slept > hi {
		t.Errorf("slept %v by CLOCK_BOOTTIME, want between %v (the press) and %v (the resume the host saw)", slept, lo, hi)
	}
}
