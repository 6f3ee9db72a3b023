package main

import (
	"fmt"
	"strings"

	"github.com/torpor-dev/torpor/wake"
)

// summary prints the table of what each agent did and records every
// expectation that was not met.
func (d *demo) summary() {
	if len(d.agents) == 0 {
		return
	}
	var rows [][]string
	for _, a := range d.agents {
		rows = append(rows, d.summaryRow(a))
	}
	d.n.Printf("\nSummary (clock ×%g; every figure comes from the processes' logs, the relay's answers and the application's socket)\n\n%s",
		d.cfg.scale(), Table([]string{"agent", "mode", "wakes (reason)", "relay answers", "records drained", "delivered", "held → ran", "peak RSS", "rejected (cause)"}, rows))
	d.relayRSS()
	d.mu.Lock()
	if len(d.warnings) > 0 {
		d.n.Printf("Warnings the daemons logged (every one is in the logs): %s.\n", counts(d.warnings))
	}
	d.mu.Unlock()
	for _, a := range d.agents {
		d.check(a)
	}
}

func (d *demo) summaryRow(a *agent) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	answers := []string{}
	if a.asleep > 0 {
		answers = append(answers, fmt.Sprintf("%d×503 queued", a.asleep))
	}
	if a.live > 0 {
		answers = append(answers, fmt.Sprintf("%d×200 live", a.live))
	}
	var msgs, actions, delegated int
	if a.sink != nil {
		for _, r := range a.sink.Received() {
			switch i := a.letterFor(r.ObjectID); {
			case r.Path != "/action":
				msgs++
			case i >= 0 && a.letters[i].Expect == expectDelegated:
				delegated++
			default:
				actions++
			}
		}
	}
	ran := fmt.Sprintf("%d → %d", a.drained["held"], actions)
	if delegated > 0 {
		ran += fmt.Sprintf(", %d delegated", delegated)
	}
	wakes := fmt.Sprintf("%d (%s)", len(a.wakes), strings.Join(a.wakes, ", "))
	return []string{a.name, string(a.mode), wakes, strings.Join(answers, ", "), fmt.Sprint(a.drained["records"]),
		fmt.Sprint(msgs), ran, mib(a.rss), fmt.Sprintf("%d: %s", sum(a.rejected), counts(a.rejected))}
}

// mib renders a byte count in MiB; "?" when unknown.
func mib(n int64) string {
	if n <= 0 {
		return "?"
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// check records the expectations a did not meet: every honest object
// delivered exactly once, every action held and run once after the
// confirmation, every hostile object rejected for the reason it was built
// to fail, nothing else rejected, and the wakes the plan promised.
func (d *demo) check(a *agent) {
	a.mu.Lock()
	letters, wakes, unmatched, held := append([]Letter(nil), a.letters...), len(a.wakes), a.unmatched, a.drained["held"]
	a.mu.Unlock()
	for _, l := range letters {
		switch {
		case l.Expect == expectDelegated && (l.held || l.delivered != 1):
			d.fail("%s: %s ran %d times (held %v), want once under the envelope, never held", a.name, l.Label, l.delivered, l.held)
		case l.Expect == expectRefused && (!l.held || l.heldFor != l.Reason || l.delivered > 0):
			d.fail("%s: %s: want held (%s) and never run, saw held=%v (%s) delivered=%d", a.name, l.Label, l.Reason, l.held, l.heldFor, l.delivered)
		case l.Expect == expectDelegated || l.Expect == expectRefused:
		case l.Expect == expectAccept && l.delivered != 1:
			d.fail("%s: %s was delivered %d times, want once", a.name, l.Label, l.delivered)
		case l.Expect == expectHold && (held == 0 || !l.held):
			d.fail("%s: %s was never held", a.name, l.Label)
		case l.Expect == expectHold && l.confirmed != "ok":
			d.fail("%s: the owner's confirmation of %s was answered %q, want ok", a.name, l.Label, l.confirmed)
		case l.Expect == expectHold && l.delivered != 1:
			d.fail("%s: %s ran %d times after the confirmation, want once", a.name, l.Label, l.delivered)
		case l.Expect != expectAccept && l.Expect != expectHold && (!l.seen || l.delivered > 0):
			d.fail("%s: %s: want rejected as %s, saw rejected=%v delivered=%d", a.name, l.Label, l.Expect, l.seen, l.delivered)
		}
		want := "503"
		if a.mode == wake.AlwaysOn {
			want = "200"
		}
		if l.answer != want {
			d.fail("%s: %s: the relay answered %s, want %s", a.name, l.Label, l.answer, want)
		}
	}
	if len(unmatched) > 0 {
		d.fail("%s: rejections no object was built for: %s", a.name, strings.Join(unmatched, ", "))
	}
	want := map[wake.Mode]int{wake.HourlyWake: 3, wake.Sleep: 2, wake.AlwaysOn: 1}[a.mode]
	if wakes < want {
		d.fail("%s: %d wake report(s), want at least %d", a.name, wakes, want)
	}
}

// relayRSS prints the relays' peak resident set sizes.
func (d *demo) relayRSS() {
	if len(d.relays) == 1 && d.relays[0].rss > 0 {
		d.n.Printf("torpor-relay peak RSS %s (with its embedded broker and store).\n", mib(d.relays[0].rss))
	}
	if len(d.relays) < 2 {
		return
	}
	var parts []string
	for _, r := range d.relays {
		parts = append(parts, r.name+" "+mib(r.rss))
	}
	d.n.Printf("torpor-relay peak RSS %s (the store is the NATS cluster, in the demo's own process).\n", strings.Join(parts, ", "))
}
