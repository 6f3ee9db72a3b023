package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/test/procs"
	"github.com/torpor-dev/torpor/wake"
)

// agent is one torpor-agent the demo runs, and what it has seen of it.
type agent struct {
	name   string
	mode   wake.Mode
	key    *did.PrivateKey
	dir    string      // its directory: key, config, data, socket, log
	window wake.Window // hourly_wake
	length time.Duration
	sched  time.Time // sleep: the wake its operator scheduled
	proc   *procs.Proc
	sink   *procs.Sink
	rss    int64 // peak resident set size, read before stopping it

	mu sync.Mutex
	// mu guards the following fields.
	letters   []Letter       // sent, in order
	asleep    int            // 503 agent_asleep answers
	live      int            // answered live (200)
	wakes     []string       // reasons, in order
	drained   map[string]int // summed wake-report counters
	rejected  map[string]int // by cause
	unmatched []string       // rejections no letter expected
	nextWake  string         // the last announced next wake
	published bool           // the relay has its state with KeyPackages
	linkedOn  string         // the relay its last link came up on
	bootDone  bool
}

func (a *agent) did() string { return a.key.DID().String() }

// file is the agent's configuration file (runtime/conffile, version 1).
type file struct {
	Version       int            `json:"version"`
	Key           string         `json:"key"`
	DataDir       string         `json:"dataDir"`
	Relay         string         `json:"relay"`
	Name          string         `json:"name"`
	Mode          string         `json:"mode"`
	Window        map[string]any `json:"window,omitempty"`
	ScheduledWake string         `json:"scheduledWake,omitempty"`
	Owner         string         `json:"owner"`
	Purposes      []string       `json:"purposes"`
	Consequential []string       `json:"consequential"`
	Handlers      []any          `json:"handlers"`
	MQTT          map[string]any `json:"mqtt"`
}

// writeConfig writes the agent's configuration file and returns its path.
func (d *demo) writeConfig(a *agent) (string, error) {
	sock := a.dir + "/app.sock"
	f := file{
		Version: 1, Key: a.dir + "/agent.key", DataDir: a.dir + "/data", Relay: d.relayURL, Name: a.name,
		Mode: string(a.mode), Owner: d.owner.DID().String(),
		Purposes: []string{"comms:*", "action:*"}, Consequential: []string{"action:*"},
		Handlers: []any{
			map[string]any{"purpose": "comms:*", "unix": map[string]string{"socket": sock, "path": "/message"}},
			map[string]any{"purpose": "action:*", "unix": map[string]string{"socket": sock, "path": "/action"}},
		},
		// Operators' commands on the relay's embedded broker; the device's
		// name there defaults to its DID. The owner is the one operator.
		MQTT: map[string]any{"broker": d.mqttURL, "operators": []string{d.owner.DID().String()}},
	}
	if a.length > 0 {
		f.Window = map[string]any{"length": a.length.String()}
	}
	if a.mode == wake.HourlyWake {
		f.Window["offset"] = a.window.Offset.String()
	}
	if !a.sched.IsZero() {
		f.ScheduledWake = a.sched.UTC().Format(time.RFC3339)
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return "", err
	}
	p := a.dir + "/agent.json"
	return p, os.WriteFile(p, append(b, '\n'), 0o600)
}

// startAgent starts a's sink and daemon and follows its log.
func (d *demo) startAgent(ctx context.Context, a *agent) error {
	conf, err := d.writeConfig(a)
	if err != nil {
		return err
	}
	if a.sink, err = procs.StartSink(a.dir+"/app.sock", func(r procs.Received) { d.delivered(a, r) }); err != nil {
		return err
	}
	args := []string{"--config", conf, "--time-scale", strconv.FormatFloat(d.cfg.scale(), 'f', -1, 64)}
	if a.proc, err = procs.StartProc(a.name, d.bin("torpor-agent"), args, a.dir, a.dir+"/agent.log", nil); err != nil {
		return err
	}
	d.bg.Go(func() { a.proc.Out().Follow(ctx, func(l procs.Line) { d.agentLine(a, l) }) })
	return nil
}

// agentLine narrates one line of an agent's log.
func (d *demo) agentLine(a *agent, l procs.Line) {
	switch {
	case l.Level == "":
		if strings.TrimSpace(l.Raw) != "" {
			d.n.Event(a.name, KindError, "%s", l.Raw)
		}
	case l.Msg == "torpor-agent starting":
		d.n.Event(a.name, KindStart, "torpor-agent started: %s, mode %s, owner-confirmed actions: action:*", short(l.Get("did")), l.Get("mode"))
	case l.Msg == "waking":
		d.n.Event(a.name, KindWake, "woke: reason %s, mode %s", l.Get("reason"), l.Get("mode"))
	case l.Msg == "wake":
		d.wakeReport(a, l)
	case l.Msg == "record rejected or deferred" || l.Msg == "live request rejected":
		d.rejection(a, l)
	case l.Msg == "action held":
		d.held(a, l.Get("reason"), l.Get("key"))
	case l.Msg == "mode changed" || strings.HasPrefix(l.Msg, "halted") || l.Msg == "resumed":
		d.n.Event(a.name, KindMQTT, "%s %s", l.Msg, attrs(l, "mode", "note"))
	case l.Level == "ERROR":
		d.n.Event(a.name, KindError, "%s %s", l.Msg, attrs(l, "err", "error"))
	case l.Level == "WARN":
		d.warn(a.name, l.Msg, attrs(l, "err", "error"))
	}
}

// wakeReport narrates the line an agent logs when a wake ends: why it
// woke, what the drain did, and until when it sleeps.
func (d *demo) wakeReport(a *agent, l procs.Line) {
	reason, drain := l.Get("reason"), parseDrain(l.First("drain"))
	awake, _ := time.ParseDuration(l.Get("awake"))
	a.mu.Lock()
	a.wakes = append(a.wakes, reason)
	for k, v := range drain.counts {
		a.drained[k] += v
	}
	a.nextWake = l.Get("nextWake")
	if reason == "boot" {
		a.bootDone = true
	}
	a.mu.Unlock()
	why := wakeWhy(a.mode, reason)
	d.n.Event(a.name, KindWake, "wake report: %s (reason %q); awake %s", why, reason, scaledDur(awake, d.cfg.scale()))
	c := drain.counts
	d.n.Event(a.name, KindDrain, "drain: %d record(s) pulled and acknowledged, %d MLS handshake(s) applied, %d object(s) checked: %d accepted, %d delivered, %d held, %d rejected%s",
		c["records"], c["handshake"], c["objects"], c["accepted"], c["delivered"], c["held"], sum(drain.rejected), causeList(drain.rejected))
	sleep := "asleep with no wake planned: only an event or an operator wakes it"
	if nw := l.Get("nextWake"); nw != "" {
		t, _ := time.Parse(time.RFC3339, nw)
		sleep = fmt.Sprintf("asleep until %s (%s), announced to the relay", t.UTC().Format("15:04:05"), d.until(t))
	} else if a.mode != wake.Sleep {
		sleep = ""
	}
	// The wake's diagnostics (rejections, held actions) were logged
	// during its drain, before this line (runtime/wake.go), and told as
	// they came: the sleep is told now, when the agent goes to sleep.
	if sleep != "" {
		d.n.Event(a.name, KindSleep, "%s", sleep)
	}
}

// wakeWhy says why an agent in mode woke, from the wake report's reason.
func wakeWhy(mode wake.Mode, reason string) string {
	switch {
	case mode == wake.AlwaysOn:
		return "linked since it started, answering live, until it was stopped"
	case reason == "boot":
		return "booted outside its window: published its state and drained at once"
	case reason == "timer" && mode == wake.Sleep:
		return "woke at the wake its operator scheduled"
	case reason == "timer":
		return "woke on its timer at its window"
	case reason == "mode":
		return "woke because its mode changed"
	}
	return "woke (" + reason + ")"
}

// until says how far t is, in scaled and real time.
func (d *demo) until(t time.Time) string {
	dt := t.Sub(d.clock.Now())
	if dt < 0 {
		return "now"
	}
	return fmt.Sprintf("in %v, %.1f s real", dt.Round(time.Second), dt.Seconds()/d.cfg.scale())
}

// rejection narrates one rejected record and matches it to the letter sent
// to provoke it.
func (d *demo) rejection(a *agent, l procs.Line) {
	cause := l.Get("cause")
	if l.Msg == "record rejected or deferred" && l.Get("seq") == "0" {
		return // a live request's, narrated when it was rejected
	}
	a.mu.Lock()
	a.rejected[cause]++
	label := ""
	for i, lt := range a.letters {
		if lt.Expect == cause && !lt.seen {
			a.letters[i].seen = true
			label = lt.Label
			break
		}
	}
	if label == "" && cause != "mls-deferred" {
		a.unmatched = append(a.unmatched, cause)
	}
	a.mu.Unlock()
	where := "seq " + l.Get("seq")
	if l.Msg == "live request rejected" {
		where = "live request"
	}
	if label == "" {
		label = "unexpected"
	}
	d.n.Event(a.name, KindReject, "rejected %s: %s — %s (%s)", where, cause, label, clip(l.Get("detail"), 90))
}

// held narrates an action the gate held for the owner with reason. Not a
// rejection: key is its ledger key, what the owner confirms.
func (d *demo) held(a *agent, reason, key string) {
	why := "consequential, never run just because a message was dequeued"
	if strings.HasPrefix(reason, "envelope-") {
		why = "beyond what the sender's Autonomy Envelope allows, so only the owner can let it run"
	}
	d.n.Event(a.name, KindHold, "held for the owner (%s): %s — %s", reason, d.labelOf(a, key, reason), why)
}

// labelOf returns the label of the action letter whose ledger key is key,
// and records that it was held with reason.
func (d *demo) labelOf(a *agent, key, reason string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, lt := range a.letters {
		if lt.Key == key && lt.Key != "" {
			a.letters[i].held, a.letters[i].heldFor = true, reason
			return lt.Label
		}
	}
	return "ledger key " + key
}

// delivered narrates an object the application received.
func (d *demo) delivered(a *agent, r procs.Received) {
	a.mu.Lock()
	label, delegated := "", false
	if i := a.letterFor(r.ObjectID); i >= 0 {
		label, delegated = a.letters[i].Label, a.letters[i].Expect == expectDelegated
		a.letters[i].delivered++
	}
	a.mu.Unlock()
	if label == "" {
		label = "an object the demo did not send"
		d.fail("%s delivered %s (%s)", a.name, label, r.ObjectID)
	}
	via := fmt.Sprintf("relay seq %d", r.Seq)
	if r.Seq == 0 {
		via = "live request"
	}
	if r.Path == "/action" && delegated {
		d.n.Event(a.name, KindRun, "ran %s unsupervised under the Autonomy Envelope, no confirmation: %s — a principal the owner trusts, within both scopes (%s)",
			r.Purpose, label, via)
		return
	}
	if r.Path == "/action" {
		d.n.Event(a.name, KindConfirm, "ran %s after the owner's confirmation: handed to the application with idempotency key %q (%s)", r.Purpose, r.IdempotencyKey, via)
		return
	}
	d.n.Event(a.name, KindAccept, "accepted and delivered %s from %s: %s (%s)", r.Purpose, short(r.Issuer), label, via)
}

// letterFor returns the index of the letter an object id belongs to: the
// honest one, not its replay, which shares the id; -1 for none. a.mu must
// be held.
func (a *agent) letterFor(id string) int {
	found := -1
	for i, lt := range a.letters {
		if lt.ID != id {
			continue
		}
		if lt.Expect == expectAccept || lt.Expect == expectHold || lt.Expect == expectDelegated {
			return i
		}
		if found < 0 {
			found = i
		}
	}
	return found
}

// lettersExpecting returns the letters sent to a with outcome expect.
func (a *agent) lettersExpecting(expect string) []Letter {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []Letter
	for _, l := range a.letters {
		if l.Expect == expect {
			out = append(out, l)
		}
	}
	return out
}

// drainCounts is a parsed drain.Report.String().
type drainCounts struct {
	counts   map[string]int
	rejected map[string]int
}

// parseDrain reads "records=3 acked=3 … rejected[expired=1 replay=2]".
func parseDrain(s string) drainCounts {
	dc := drainCounts{counts: map[string]int{}, rejected: map[string]int{}}
	head, rej, _ := strings.Cut(s, "rejected[")
	for _, f := range strings.Fields(head) {
		if k, v, ok := strings.Cut(f, "="); ok {
			dc.counts[k], _ = strconv.Atoi(v)
		}
	}
	for _, f := range strings.Fields(strings.TrimSuffix(rej, "]")) {
		if k, v, ok := strings.Cut(f, "="); ok {
			dc.rejected[k], _ = strconv.Atoi(v)
		}
	}
	return dc
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func causeList(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	return " (" + counts(m) + ")"
}

// attrs renders the named attributes that l has, as key=value.
func attrs(l procs.Line, keys ...string) string {
	var parts []string
	for _, k := range keys {
		if l.Has(k) {
			parts = append(parts, k+"="+l.Get(k))
		}
	}
	return strings.Join(parts, " ")
}

// short abbreviates a did:key for narration.
func short(id string) string {
	if len(id) > 20 && strings.HasPrefix(id, "did:key:") {
		return id[:16] + "…" + id[len(id)-4:]
	}
	return id
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
