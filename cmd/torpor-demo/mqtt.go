package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"time"
)

// confirmHeld has the owner confirm, over MQTT, every action a held: it
// runs `torporctl device confirm` as an operator would. a is asleep by now,
// so the signed command waits in a's persistent broker session and runs at
// a's next wake; torporctl waits for the device's signed reply.
func (d *demo) confirmHeld(a *agent) {
	for _, l := range a.lettersExpecting(expectHold) {
		if !l.held {
			d.fail("%s: %s was not held, so there is nothing to confirm", a.name, l.Label)
			continue
		}
		d.n.Event("owner", KindMQTT, "→ %s: torporctl device confirm %q — a command signed by the owner's key; %s is asleep, so it waits in its persistent MQTT session",
			a.name, clip(l.Key, 40)+"…", a.name)
		d.bg.Go(func() { d.confirm(d.ops, a, l) })
	}
}

// deviceOutput is what `torporctl device … --json` prints.
type deviceOutput struct {
	Op      string `json:"op"`
	Seq     uint64 `json:"seq"`
	Waiting bool   `json:"waiting"`
	Reply   *struct {
		Outcome string `json:"outcome"`
		Reason  string `json:"reason"`
		Detail  string `json:"detail"`
	} `json:"reply"`
}

// confirm runs one confirmation and narrates the device's reply.
func (d *demo) confirm(ctx context.Context, a *agent, l Letter) {
	cmd := exec.CommandContext(ctx, d.bin("torporctl"), "device", "confirm", "--broker", d.mqttURL, "--key", d.ownerKey,
		"--did", a.did(), "--wait", "45s", "--json", a.did(), l.Key)
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		d.fail("torporctl device confirm: %v", err)
		return
	}
	var o deviceOutput
	if jerr := json.Unmarshal(out, &o); jerr != nil || o.Reply == nil {
		d.fail("torporctl device confirm for %s: no reply (%v, %v): %s%s", a.name, err, jerr, out, stderrOf(err))
		return
	}
	a.mu.Lock()
	for i := range a.letters {
		if a.letters[i].Key == l.Key {
			a.letters[i].confirmed = o.Reply.Outcome
		}
	}
	a.mu.Unlock()
	d.n.Event(a.name, KindMQTT, "reply to the owner's confirm (seq %d), signed by %s: %s%s", o.Seq, a.name, o.Reply.Outcome, detail(o.Reply.Reason, o.Reply.Detail))
}

func detail(reason, text string) string {
	switch {
	case reason != "" && text != "":
		return fmt.Sprintf(" (%s: %s)", reason, clip(text, 80))
	case reason != "" || text != "":
		return " (" + clip(reason+text, 80) + ")"
	}
	return ""
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return "\n" + string(ee.Stderr)
	}
	return ""
}
