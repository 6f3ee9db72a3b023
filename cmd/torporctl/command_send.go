package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/internal/origin"
	"github.com/torpor-dev/torpor/session/sender"
	"github.com/torpor-dev/torpor/transport/a2a"
)

func init() {
	register(&subcommand{
		name:  "send",
		args:  "AGENT_DID [MESSAGE] [--passport FILE]... [--pulse FILE]",
		short: "Send a signed message to an agent through its relay (MLS-encrypted unless --plaintext); says whether it was delivered or queued.",
		run:   runSend,
	})
}

// sendArgs are the flags of send.
type sendArgs struct {
	relay, key, sessions  string
	purpose, schema, body string
	ttl, wait             time.Duration
	plaintext, json       bool
	timeScale             float64
	clk                   clock.Clock // the relay's clock when timeScale > 1, else clock.Real
	present               presentArgs
	envelope              *a2a.EnvelopeMetadata // what present presents, checked
}

// register adds send's flags to fs.
func (a *sendArgs) register(fs *flag.FlagSet) {
	fs.StringVar(&a.relay, "relay", envOr("TORPOR_RELAY", "http://127.0.0.1:8080"), "The agent's relay, its public origin. Default $TORPOR_RELAY.")
	fs.StringVar(&a.key, "key", os.Getenv("TORPOR_KEY"), "Your identity (torporctl keygen): it signs the object and the DID Bearer token. Default $TORPOR_KEY.")
	fs.StringVar(&a.sessions, "sessions", "", "The bbolt file of your MLS sessions (secrets; mode 0600). Default KEY.sessions.")
	fs.StringVar(&a.purpose, "purpose", "comms:message", "The object's governance.purpose; the agent must permit it.")
	fs.StringVar(&a.schema, "schema", "https://atom.qwixl.dev/schema/CommsMessage", "The object's semantic.schema.")
	fs.StringVar(&a.body, "payload", "", `The object's payload as a JSON object, instead of {"text": MESSAGE}.`)
	fs.DurationVar(&a.ttl, "ttl", 24*time.Hour, "The object's lifetime: a device that drains it later refuses it as expired.")
	fs.DurationVar(&a.wait, "wait", 0, "When the relay refuses without queueing (asleep and not storing, queue full), wait until its Retry-After (or back off) and try again, for up to this long. A queued message is never sent twice.")
	fs.BoolVar(&a.plaintext, "plaintext", false, "Send the Governed Object unencrypted (the agent must allow plaintext) instead of in an MLS pair session.")
	fs.BoolVar(&a.json, "json", false, "Print JSON.")
	a.present.register(fs)
	a.timeScale = 1
	fs.Func("time-scale", "The relay's --time-scale: date the token and the object on the relay's compressed clock (read from its /healthz), for a demonstration relay.", func(s string) (err error) {
		a.timeScale, err = clock.ParseScale(s)
		return err
	})
}

func runSend(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	var a sendArgs
	a.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() < 1 || fs.NArg() > 2 || (fs.NArg() == 1) == (a.body == "") {
		return errUsage
	}
	agent, err := did.Parse(fs.Arg(0))
	if err != nil {
		return err
	}
	if err := origin.Check("--relay", a.relay); err != nil {
		return err
	}
	if a.key == "" {
		return errors.New("no key: pass --key FILE or set TORPOR_KEY (torporctl keygen makes one)")
	}
	key, err := loadKey(a.key)
	if err != nil {
		return err
	}
	if a.clk, err = relayClock(ctx, strings.TrimRight(a.relay, "/"), a.timeScale); err != nil {
		return err
	}
	if a.envelope, err = a.present.envelope(key, agent, a.clk); err != nil {
		return err
	}
	obj, err := a.object(key, fs.Arg(1))
	if err != nil {
		return err
	}
	attempt, closeFn, err := a.attempter(key, agent)
	if err != nil {
		return err
	}
	defer closeFn()
	r := &sender.Retry{Attempt: attempt, Wait: a.wait, TimeScale: a.timeScale}
	if !a.json {
		r.OnRetry = func(ans sender.Answer, delay time.Duration) {
			fmt.Fprintf(e.stderr, "%s; retrying in %v\n", ans, delay)
		}
	}
	res := r.Send(ctx, obj)
	res.Agent = agent.String()
	if a.json {
		printJSONTo(e.stdout, res)
	} else {
		printSend(e.stdout, res)
	}
	return exitStatus(res)
}

// object signs the Governed Object to send.
func (a *sendArgs) object(key *did.PrivateKey, text string) (*governed.Object, error) {
	var payload any = map[string]string{"text": text}
	if a.body != "" {
		var m map[string]any
		if err := json.Unmarshal([]byte(a.body), &m); err != nil {
			return nil, fmt.Errorf("--payload is not a JSON object: %v", err)
		}
		payload = m
	}
	return governed.Sign(key, governed.Template{
		IssuedAt: a.clk.Now(), Semantic: governed.Semantic{Schema: a.schema},
		Payload: payload, Purpose: a.purpose, TTL: a.ttl.Truncate(time.Second),
	})
}

// attempter returns how send tries once: in an MLS pair session
// (sender.Client) or, with --plaintext, unencrypted (sender.Plaintext).
func (a *sendArgs) attempter(key *did.PrivateKey, agent did.DID) (func(context.Context, *governed.Object) (sender.Answer, error), func(), error) {
	relay := strings.TrimRight(a.relay, "/")
	if a.plaintext {
		p := &sender.Plaintext{Relay: relay, Key: key, Clock: a.clk, Envelope: a.envelope}
		return func(ctx context.Context, obj *governed.Object) (sender.Answer, error) {
			return p.Attempt(ctx, agent, obj)
		}, func() {}, nil
	}
	path := a.sessions
	if path == "" {
		path = a.key + ".sessions"
	}
	c, err := sender.Open(path, key, nil, a.clk)
	if err != nil {
		return nil, nil, fmt.Errorf("MLS sessions in %s: %w", path, err)
	}
	peer := sender.RelayPeer(relay, agent)
	peer.Envelope = a.envelope
	return func(ctx context.Context, obj *governed.Object) (sender.Answer, error) {
		return c.Attempt(ctx, peer, obj)
	}, func() { c.Close() }, nil
}

// exitStatus maps the outcome to an exit status: 0 delivered or queued, 1
// rejected by the agent, refused or failed.
func exitStatus(r sender.Result) error {
	if r.OK() {
		return nil
	}
	return exitError{1}
}

func printSend(w io.Writer, r sender.Result) {
	if len(r.Attempts) > 0 {
		fmt.Fprintf(w, "%s\n", r.Attempts[len(r.Attempts)-1])
		if n := len(r.Attempts); n > 1 {
			fmt.Fprintf(w, "  after %d attempts\n", n)
		}
	}
	if r.Err != "" {
		fmt.Fprintf(w, "error: %s\n", r.Err)
	}
	fmt.Fprintf(w, "  object %s\n", r.Object)
}

// timeScaleFlag registers --time-scale, the relay's, into *scale (1 by
// default): every command that dates a token or a command reads the
// relay's clock with relayClock.
func timeScaleFlag(fs *flag.FlagSet, scale *float64) {
	*scale = 1
	fs.Func("time-scale", "The relay's --time-scale: date tokens and commands on the relay's compressed clock (read from its /healthz), for a demonstration relay.", func(s string) (err error) {
		*scale, err = clock.ParseScale(s)
		return err
	})
}

// relayClock returns the clock send dates its token and object on: the
// real clock at time scale 1; otherwise the relay's own compressed clock,
// which its token check runs on. A relay started with --time-scale N
// starts its clock from the real time at its start and runs it N times
// faster, so no local clock agrees with it: send reads the relay's time
// from its /healthz and runs a clock N times faster from there. The relay
// checks tokens as strictly as ever; they are just dated on its clock.
func relayClock(ctx context.Context, relay string, scale float64) (clock.Clock, error) {
	if scale == 1 {
		return clock.Real, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, relay+"/healthz", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("--time-scale: reading the relay's clock: %w", err)
	}
	defer resp.Body.Close()
	var h struct {
		Now       time.Time `json:"now"`
		TimeScale float64   `json:"timeScale"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&h); err != nil || h.Now.IsZero() {
		return nil, fmt.Errorf("--time-scale: the relay's /healthz (HTTP %d) does not say its time", resp.StatusCode)
	}
	if h.TimeScale != 0 && h.TimeScale != scale {
		return nil, fmt.Errorf("--time-scale %v, but the relay runs at time scale %v", scale, h.TimeScale)
	}
	return clock.NewScaled(offsetClock(time.Until(h.Now)), scale)
}

// offsetClock is the real clock shifted by a fixed duration.
type offsetClock time.Duration

func (o offsetClock) Now() time.Time { return time.Now().Add(time.Duration(o)) }

func (o offsetClock) NewTimer(d time.Duration) clock.Timer { return clock.Real.NewTimer(d) }
