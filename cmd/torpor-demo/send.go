package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/session/sender"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/wake"
)

// firstRound establishes a pair session with each agent and sends each its
// letters: to the hourly agent, asleep, one honest message, the five
// hostile kinds and a consequential action; to the sleeping one an honest
// message and one that expires before its wake; to the always-on one an
// honest message and a forged one, answered live.
func (d *demo) firstRound(ctx context.Context) error {
	f := forge{sender: d.senderKey, stranger: d.stranger}
	now := d.clock.Now()
	valid, err := f.Valid(now, "soil moisture 31% at plot 7")
	if err != nil {
		return err
	}
	build := map[string][]func() (Letter, error){
		"hourly": {
			func() (Letter, error) { return valid, nil },
			func() (Letter, error) { return f.Forged(now, "open the gate at 06:00", "open the gate at 03:00") },
			func() (Letter, error) { return f.Expired(now, 2*time.Minute) },
			func() (Letter, error) { return Replay(valid), nil },
			func() (Letter, error) { return f.WrongSender(now) },
			func() (Letter, error) { return f.NotPermitted(now) },
			func() (Letter, error) { return f.Action(now, "open-valve", "valve-7-open-0600", 1250) },
		},
		"sleeper": {
			func() (Letter, error) { return f.Valid(now, "firmware 1.4.2 is available") },
			func() (Letter, error) { return f.Expired(now, 3*time.Minute) },
		},
		"always": {
			func() (Letter, error) { return f.Valid(now, "battery at 78%") },
			func() (Letter, error) { return f.Forged(now, "reading ok", "reading tampered") },
		},
	}
	for _, a := range d.agents {
		if err := d.establish(ctx, a); err != nil {
			return err
		}
		for _, b := range build[a.name] {
			l, err := b()
			if err != nil {
				return err
			}
			d.deliver(ctx, a, l)
		}
	}
	return nil
}

// secondRound sends one more message to the hourly agent, asleep again:
// the relay's Retry-After now points into the next hour's window.
func (d *demo) secondRound(ctx context.Context, a *agent) error {
	l, err := forge{sender: d.senderKey, stranger: d.stranger}.Valid(d.clock.Now(), "plot 7 irrigated, 40 l")
	if err != nil {
		return err
	}
	d.deliver(ctx, a, l)
	return nil
}

// establish creates the pair session with a through the relay (draft
// Section 6.2): fetch one KeyPackage, check its credential binding, create
// the group, add the agent, post the Welcome.
func (d *demo) establish(ctx context.Context, a *agent) error {
	peer := sender.RelayPeer(d.relayURL, a.key.DID())
	if _, err := d.send.Establish(ctx, peer); err != nil {
		d.fail("pair session with %s: %v", a.name, err)
		return fmt.Errorf("%w with %s: %v", errNoSession, a.name, err)
	}
	how := "the Welcome went live to the awake agent"
	if a.mode != wake.AlwaysOn {
		how = "the Welcome is queued (handshake reserve) until it wakes"
	}
	d.n.Event("sender", KindSession, "MLS pair session with %s: fetched one of its KeyPackages from the relay, checked the did:key binding, created the group and added it; %s",
		a.name, how)
	return nil
}

// deliver sends one letter to a and narrates the relay's answer.
func (d *demo) deliver(ctx context.Context, a *agent, l Letter) {
	// Recorded before sending: a live agent delivers before the answer.
	a.mu.Lock()
	a.letters = append(a.letters, l)
	i := len(a.letters) - 1
	a.mu.Unlock()
	answer := ""
	defer func() {
		a.mu.Lock()
		a.letters[i].answer = answer
		a.mu.Unlock()
	}()
	peer := sender.RelayPeer(d.relayURL, a.key.DID())
	peer.Envelope = l.Envelope
	var by string // the relay that answered, in a fleet
	dl, err := d.send.Send(context.WithValue(ctx, answeredKey{}, &by), peer, l.Object)
	switch {
	case err == nil && dl.Queued:
		answer = "503"
		hint := "no Retry-After: no wake is known"
		if dl.RetryAfter > 0 {
			back := d.clock.Now().Add(dl.RetryAfter)
			hint = fmt.Sprintf("Retry-After %d s (come back at %s, %.1f s real)", int(dl.RetryAfter/time.Second),
				back.UTC().Format("15:04:05"), dl.RetryAfter.Seconds()/d.cfg.scale())
		}
		d.n.Event("sender", KindAsleep, "→ %s: %s — 503 agent_asleep, queued:true, %s%s", a.name, l.Label, hint, d.answeredBy(a, by, false))
		a.mu.Lock()
		a.asleep++
		a.mu.Unlock()
		if l.Expect != "" && dl.RetryAfter == 0 && a.mode != wake.AlwaysOn {
			d.fail("%s: the relay gave no Retry-After although the agent's next wake is known", a.name)
		}
	case err == nil:
		answer = fmt.Sprint(dl.Status)
		d.n.Event("sender", KindLive, "→ %s: %s — %d, answered live by the awake agent: %s%s", a.name, l.Label, dl.Status, rpcText(dl.Body), d.answeredBy(a, by, true))
		a.mu.Lock()
		a.live++
		a.mu.Unlock()
	default:
		var he *sender.HTTPError
		var re *a2a.RPCError
		switch {
		case errors.As(err, &re):
			// A live JSON-RPC error: the agent refused the object and says
			// no more (draft Section 8.4).
			answer = "200"
			d.n.Event("sender", KindLive, "→ %s: %s — 200, answered live: JSON-RPC error %d %q (a sender learns no more)%s", a.name, l.Label, re.Code, re.Message, d.answeredBy(a, by, true))
			a.mu.Lock()
			a.live++
			a.mu.Unlock()
		case errors.As(err, &he):
			answer = fmt.Sprint(he.Status)
			d.fail("sending %s to %s: %v", l.Label, a.name, err)
		default:
			answer = "error"
			d.fail("sending %s to %s: %v", l.Label, a.name, err)
		}
	}
}

// rpcText summarises a JSON-RPC answer: the text of a result message.
func rpcText(body []byte) string {
	var r struct {
		Result struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"result"`
	}
	if json.Unmarshal(body, &r) == nil && len(r.Result.Parts) > 0 {
		return fmt.Sprintf("%q", r.Result.Parts[0].Text)
	}
	return clip(string(body), 80)
}

// answeredBy says which relay of a fleet answered a request for a: the
// one the balancer sent it to, which queued it in the shared store or, for
// a live request, forwarded it over NATS to the relay holding a's link.
// Nothing for the one relay.
func (d *demo) answeredBy(a *agent, by string, live bool) string {
	if !d.cfg.Cluster || by == "" {
		return ""
	}
	if !live {
		return fmt.Sprintf(" [%s answered, queued in JetStream]", by)
	}
	a.mu.Lock()
	on := a.linkedOn
	a.mu.Unlock()
	if on == by {
		return fmt.Sprintf(" [%s answered: it holds %s's link]", by, a.name)
	}
	return fmt.Sprintf(" [%s answered: forwarded over NATS to %s, which holds %s's link]", by, on, a.name)
}
