package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/internal/origin"
	"github.com/torpor-dev/torpor/session/sender"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/bearer"
)

func init() {
	register(&subcommand{
		name:  "send",
		args:  "AGENT_DID [MESSAGE]",
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
}

func runSend(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	var a sendArgs
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
	a.timeScale = 1
	fs.Func("time-scale", "The relay's --time-scale: date the token and the object on the relay's compressed clock (read from its /healthz), for a demonstration relay.", func(s string) (err error) {
		a.timeScale, err = clock.ParseScale(s)
		return err
	})
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
	obj, err := a.object(key, fs.Arg(1))
	if err != nil {
		return err
	}
	post, closeFn, err := a.poster(key, agent)
	if err != nil {
		return err
	}
	defer closeFn()
	res := sendLoop(ctx, e, &a, post, obj)
	res.Agent = agent.String()
	if a.json {
		printJSONTo(e.stdout, res)
	} else {
		printSend(e.stdout, res)
	}
	return res.exit()
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

// answer is what one attempt got from the relay.
type answer struct {
	Status     int    `json:"status"`
	Error      string `json:"error,omitempty"` // the profile's token: agent_asleep, asleep_queue_full, ...
	Message    string `json:"message,omitempty"`
	Kind       string `json:"kind,omitempty"` // queue-full bound: messages, bytes, peer
	Queued     bool   `json:"queued"`
	RetryAfter int    `json:"retryAfterSec,omitempty"`
	// RPCCode is the JSON-RPC error code of a live agent's refusal (a 200
	// whose body is a JSON-RPC error); zero otherwise.
	RPCCode int `json:"rpcCode,omitempty"`
	// Challenge is the error_description of the relay's WWW-Authenticate
	// header: why it refused the DID Bearer token.
	Challenge string `json:"challenge,omitempty"`
	// Successor is the DID that replaced a retired agent (410
	// agent_retired): send to it instead.
	Successor string `json:"successor,omitempty"`
	Body      string `json:"body,omitempty"`
}

// rejected reports whether a live agent answered and refused the object.
func (a answer) rejected() bool { return a.Status == http.StatusOK && a.RPCCode != 0 }

// poster sends the object once and reads the relay's answer.
type poster func(ctx context.Context, obj *governed.Object) (answer, error)

func (a *sendArgs) poster(key *did.PrivateKey, agent did.DID) (poster, func(), error) {
	relay := strings.TrimRight(a.relay, "/")
	if a.plaintext {
		return func(ctx context.Context, obj *governed.Object) (answer, error) {
			return postPlaintext(ctx, relay, key, agent, obj, a.clk.Now())
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
	return func(ctx context.Context, obj *governed.Object) (answer, error) {
		j, _ := obj.MarshalJSON()
		d, err := c.Send(ctx, peer, j)
		var he *sender.HTTPError
		var rpcErr *a2a.RPCError
		switch {
		case errors.As(err, &he) && he.Op == "key-package":
			return answer{}, keyPackageError(agent, he)
		case errors.As(err, &he):
			return readAnswer(he.Status, he.Header, he.Body), nil
		case errors.As(err, &rpcErr):
			return answer{Status: http.StatusOK, Error: "rejected", RPCCode: rpcErr.Code, Message: rpcErr.Message}, nil
		case err != nil:
			return answer{}, err
		}
		ans := readAnswer(d.Status, nil, d.Body)
		ans.Queued = ans.Queued || d.Queued
		if ans.RetryAfter == 0 {
			ans.RetryAfter = int(d.RetryAfter / time.Second)
		}
		return ans, nil
	}, func() { c.Close() }, nil
}

// postPlaintext posts obj in a data-object part (draft Section 7.4) as an
// A2A v1.0 SendMessage with a DID Bearer token for the relay's origin,
// issued at now.
func postPlaintext(ctx context.Context, relay string, key *did.PrivateKey, agent did.DID, obj *governed.Object, now time.Time) (answer, error) {
	j, _ := obj.MarshalJSON()
	part, err := a2a.DataObjectPart{Object: j}.Part()
	if err != nil {
		return answer{}, err
	}
	req, err := a2a.NewSendMessage(json.RawMessage(`1`), a2a.Version10, a2a.NewUserMessage(newMessageID(), "", part))
	if err != nil {
		return answer{}, err
	}
	body, _ := json.Marshal(req)
	aud, err := bearer.NormalizeAudience(relay)
	if err != nil {
		return answer{}, fmt.Errorf("--relay: %w", err)
	}
	tok, err := bearer.Issue(key, aud, now, 0)
	if err != nil {
		return answer{}, err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, relay+"/a/"+agent.String()+"/a2a/jsonrpc", bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set(a2a.VersionHeader, a2a.Version10)
	hr.Header.Set("Authorization", bearer.Authorization(tok))
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return readAnswer(resp.StatusCode, resp.Header, b), nil
}

// keyPackageError says why the relay gave no KeyPackage for agent: it
// knows no such agent (404 unknown_agent: a typo in the DID, or a device
// that never linked), or the agent's pool is used up (503
// no_key_package), or something else, with the relay's words.
func keyPackageError(agent did.DID, he *sender.HTTPError) error {
	a := readAnswer(he.Status, he.Header, he.Body)
	switch {
	case a.Error == "agent_retired" && a.Successor != "":
		return fmt.Errorf("%s was retired when its key was rotated; it is now %s: send to that DID", agent, a.Successor)
	case a.Error == "unknown_agent":
		return fmt.Errorf("no such agent on this relay: no device has published %s there (check the DID and --relay)", agent)
	case a.Error == "no_key_package":
		s := fmt.Sprintf("%s has no MLS KeyPackage left on the relay (used up, or none published yet); its device publishes new ones when it next links", agent)
		if a.RetryAfter > 0 {
			s += fmt.Sprintf(" (expected in about %s)", time.Duration(a.RetryAfter)*time.Second)
		}
		return errors.New(s + "; --plaintext sends unencrypted where the agent allows it")
	}
	return fmt.Errorf("no MLS KeyPackage for %s from the relay: %s", agent, describe(a))
}

// readAnswer reads the relay's answer in either of the profile's shapes:
// its body ({"error":"agent_asleep","queued":...,"retryAfterSec":...}) or
// the JSON-RPC mapping (error.data carries them), which Torpor's relay
// combines with the top-level members. h may be nil.
func readAnswer(status int, h http.Header, body []byte) answer {
	a := answer{Status: status, Challenge: challenge(h.Get("WWW-Authenticate"))}
	var top struct {
		Error         json.RawMessage `json:"error"`
		Message       string          `json:"message"`
		Kind          string          `json:"kind"`
		Queued        bool            `json:"queued"`
		RetryAfterSec int             `json:"retryAfterSec"`
		Successor     string          `json:"successor"`
	}
	if json.Unmarshal(body, &top) == nil {
		a.Message, a.Kind, a.Queued, a.RetryAfter = top.Message, top.Kind, top.Queued, top.RetryAfterSec
		a.Successor = top.Successor
		var tok string
		var rpc struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Error         string `json:"error"`
				Kind          string `json:"kind"`
				Queued        bool   `json:"queued"`
				RetryAfterSec int    `json:"retryAfterSec"`
			} `json:"data"`
		}
		switch {
		case json.Unmarshal(top.Error, &tok) == nil:
			a.Error = tok
		case json.Unmarshal(top.Error, &rpc) == nil:
			a.Error = rpc.Data.Error
			if status == http.StatusOK && rpc.Code != 0 {
				a.Error, a.RPCCode = "rejected", rpc.Code
			}
			a.Queued = a.Queued || rpc.Data.Queued
			a.Kind = cmp(a.Kind, rpc.Data.Kind)
			a.Message = cmp(a.Message, rpc.Message)
			if a.RetryAfter == 0 {
				a.RetryAfter = rpc.Data.RetryAfterSec
			}
		}
	}
	if n, err := strconv.Atoi(h.Get("Retry-After")); err == nil && n > 0 {
		a.RetryAfter = n
	}
	if status != http.StatusOK || a.Error == "" {
		a.Body = string(bytes.TrimSpace(body[:min(len(body), 2048)]))
	}
	return a
}

// challenge returns the error_description of a Bearer challenge
// (RFC 6750, Section 3), or "".
func challenge(h string) string {
	const key = `error_description="`
	i := strings.Index(h, key)
	if i < 0 {
		return ""
	}
	d := h[i+len(key):]
	if j := strings.IndexByte(d, '"'); j >= 0 {
		d = d[:j]
	}
	return d
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// sendResult is what send did.
type sendResult struct {
	Agent    string   `json:"agent"`
	Object   string   `json:"objectId"`
	Outcome  string   `json:"outcome"` // delivered, queued, rejected, refused, unanswered, error
	Attempts []answer `json:"attempts"`
	Err      string   `json:"error,omitempty"`
}

// exit maps the outcome to an exit status: 0 delivered or queued, 1
// rejected by the agent, refused or failed.
func (r sendResult) exit() error {
	if r.Outcome == "delivered" || r.Outcome == "queued" {
		return nil
	}
	return exitError{1}
}

// sendLoop sends obj and follows the offline profile's rules: 200 is
// delivered; 503 with queued true means the relay stored it for the
// sleeping agent, so it is never sent again (the next attempt would only
// queue a duplicate, which the agent's replay cache would refuse anyway);
// a refusal that queued nothing (503 queued false, 507/429
// asleep_queue_full) is retried with --wait, at the Retry-After when the
// relay gives one and otherwise with exponential backoff and jitter; 504
// agent_unanswered is never retried, since the agent may have processed
// it.
func sendLoop(ctx context.Context, e *env, a *sendArgs, post poster, obj *governed.Object) sendResult {
	res := sendResult{Object: obj.ID}
	deadline := time.Now().Add(a.wait)
	backoff := 2 * time.Second
	for {
		ans, err := post(ctx, obj)
		if err != nil {
			res.Outcome, res.Err = "error", err.Error()
			return res
		}
		res.Attempts = append(res.Attempts, ans)
		switch {
		case ans.rejected():
			res.Outcome = "rejected"
			return res
		case ans.Status == http.StatusOK:
			res.Outcome = "delivered"
			return res
		case ans.Status == http.StatusServiceUnavailable && ans.Queued:
			res.Outcome = "queued"
			return res
		}
		res.Outcome = "refused"
		if ans.Status == http.StatusGatewayTimeout {
			res.Outcome = "unanswered"
		}
		if !retryable(ans) {
			return res
		}
		delay := time.Duration(float64(ans.RetryAfter) * float64(time.Second) / a.timeScale) // Retry-After is on the relay's clock
		if delay == 0 {
			delay = jitter(backoff)
			backoff = min(2*backoff, 5*time.Minute)
		}
		if time.Now().Add(delay).After(deadline) {
			return res
		}
		if !a.json {
			fmt.Fprintf(e.stderr, "%s; retrying in %v\n", describe(ans), delay)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			res.Err = ctx.Err().Error()
			return res
		case <-t.C:
		}
	}
}

// retryable reports whether an answer that stored nothing may be tried
// again later.
func retryable(a answer) bool {
	switch a.Status {
	case http.StatusServiceUnavailable, http.StatusInsufficientStorage, http.StatusTooManyRequests:
		return !a.Queued
	}
	return false
}

// jitter returns a duration drawn from [d/2, d].
func jitter(d time.Duration) time.Duration {
	n, err := rand.Int(rand.Reader, big.NewInt(int64(d/2)+1))
	if err != nil {
		return d
	}
	return d/2 + time.Duration(n.Int64())
}

// describe says what one answer means, for people.
func describe(a answer) string {
	switch {
	case a.rejected():
		return fmt.Sprintf("rejected: the agent was awake and refused it: %d %s", a.RPCCode, a.Message)
	case a.Status == http.StatusOK:
		return "delivered: the agent was awake and took it"
	case a.Status == http.StatusServiceUnavailable && a.Queued:
		s := "queued: the agent is asleep; the relay stored the message and delivers it when the agent wakes"
		if a.RetryAfter > 0 {
			s += fmt.Sprintf(" (expected in about %s)", (time.Duration(a.RetryAfter) * time.Second).String())
		}
		return s + "; it will not be sent again"
	case a.Status == http.StatusServiceUnavailable:
		s := "refused: the agent is not accepting this now and nothing was queued"
		if a.RetryAfter > 0 {
			s += fmt.Sprintf("; try again in %ds", a.RetryAfter)
		}
		return s
	case a.Error == "agent_retired" && a.Successor != "":
		return "refused: the agent's key was rotated; it is now " + a.Successor + ": send to that DID (nothing was queued)"
	case a.Error == "asleep_queue_full":
		return fmt.Sprintf("refused: the agent's queue is full (%s bound: %s); nothing was queued", a.Kind, a.Message)
	case a.Status == http.StatusGatewayTimeout:
		return "unanswered: the agent's device did not answer; it may or may not have processed the message (not retried)"
	case a.Status == http.StatusUnauthorized && a.Challenge != "":
		return "refused: the relay did not accept your DID Bearer token: " + a.Challenge
	case a.Status == http.StatusUnauthorized:
		return "refused: the relay did not accept your DID Bearer token: " + a.Body
	case a.Status == http.StatusNotFound:
		return "refused: the relay does not know this agent: " + a.Body
	case a.Status == http.StatusRequestEntityTooLarge:
		return "refused: the message exceeds the agent's maximum message size: " + a.Body
	}
	return fmt.Sprintf("refused: HTTP %d: %s", a.Status, a.Body)
}

func printSend(w io.Writer, r sendResult) {
	if len(r.Attempts) > 0 {
		last := r.Attempts[len(r.Attempts)-1]
		fmt.Fprintf(w, "%s\n", describe(last))
		if n := len(r.Attempts); n > 1 {
			fmt.Fprintf(w, "  after %d attempts\n", n)
		}
	}
	if r.Err != "" {
		fmt.Fprintf(w, "error: %s\n", r.Err)
	}
	fmt.Fprintf(w, "  object %s\n", r.Object)
}

func newMessageID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
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
