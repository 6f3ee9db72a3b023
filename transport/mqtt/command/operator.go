package command

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/mqtt"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
	"github.com/torpor-dev/torpor/transport/mqtt/login"
	"github.com/torpor-dev/torpor/transport/mqtt/mqttconn"
)

// OperatorConfig configures DialOperator.
type OperatorConfig struct {
	// Broker is the MQTT 5 broker URL (mqtt://, tcp://, mqtts://, tls://)
	// or a bare HOST:PORT (plain); see mqttconn.ParseBroker.
	Broker string
	TLS    *tls.Config
	// Prefix is the topic prefix; empty means mqtt.DefaultPrefix.
	Prefix string
	// Key is the operator's identity; it signs commands.
	Key *did.PrivateKey
	// ClientID is the MQTT client id; empty means "torporctl-" and a
	// random suffix. The operator's session is not persistent.
	ClientID string
	// Clock stamps commands; nil means clock.Real.
	Clock clock.Clock
	// Password, when set, is sent instead of a token (mqtt.Config.Security.Password).
	Password []byte
	// AuthClock dates the token presented to the broker at each
	// connection (login.Authenticate); nil means clock.Real.
	AuthClock clock.Clock
}

// Operator is the operator's side: it signs and publishes commands and
// reads replies, statuses and events. torporctl uses it.
type Operator struct {
	cfg   OperatorConfig
	cm    *mqttconn.Manager
	clock clock.Clock

	mu sync.Mutex
	// mu guards all following fields.
	watches map[string]*watch
	// scan, while NameOf runs, gets every status publication.
	scan chan Message
}

// Message is a device publication as an Operator received it.
type Message struct {
	Topic       string
	ContentType string
	Payload     []byte
	Retained    bool
	Correlation []byte
}

// watch holds what arrived for one device.
type watch struct {
	status, events chan Message
	// replies holds replies by correlation data (the command id) until
	// AwaitReply takes them; arrived is closed and replaced on each
	// arrival (Operator.mu guards all three).
	replies map[string][]Message
	order   []string // correlation data in arrival order, to bound replies
	arrived chan struct{}
}

// maxHeldReplies bounds the replies an Operator keeps for AwaitReply.
const maxHeldReplies = 1024

func (w *watch) addReplyLocked(m Message) {
	k := string(m.Correlation)
	w.replies[k] = append(w.replies[k], m)
	w.order = append(w.order, k)
	for len(w.order) > maxHeldReplies {
		old := w.order[0]
		w.order = w.order[1:]
		if rs := w.replies[old]; len(rs) > 1 {
			w.replies[old] = rs[1:]
		} else {
			delete(w.replies, old)
		}
	}
	close(w.arrived)
	w.arrived = make(chan struct{})
}

// ErrNoStatus is returned by Operator.Status when the broker holds no
// status for the device.
var ErrNoStatus = errors.New("command: no status published for this device")

// DialOperator connects to the broker with a clean, non-persistent session
// and waits until connected or ctx ends.
func DialOperator(ctx context.Context, cfg OperatorConfig) (*Operator, error) {
	if cfg.Key == nil {
		return nil, errors.New("command: OperatorConfig needs Key")
	}
	u, err := mqttconn.ParseBroker(cfg.Broker)
	if err != nil {
		return nil, err
	}
	cfg.Broker = u.String() // a bare HOST:PORT gets its scheme, for the token's audience
	if cfg.ClientID == "" {
		cfg.ClientID = "torporctl-" + randomHex(6)
	}
	o := &Operator{cfg: cfg, clock: clock.Or(cfg.Clock), watches: map[string]*watch{}}
	var (
		connErr   error
		connMu    sync.Mutex
		connected bool
	)
	cm, err := mqttconn.Start(mqttconn.Config{
		Server: u, TLS: cfg.TLS, Backoff: mqttconn.ConstantBackoff(time.Second),
		Connect: mqttconn.Connect{KeepAlive: 30, CleanStart: true, Timeout: 10 * time.Second, Packet: o.connectPacket},
		Hooks: mqttconn.Hooks{
			OnConnectionUp: func(ca *paho.Connack) {
				connMu.Lock()
				again := connected
				connected = true
				connMu.Unlock()
				if again && !ca.SessionPresent {
					go o.resubscribe()
				}
			},
			OnConnectError: func(err error) {
				connMu.Lock()
				connErr = err
				connMu.Unlock()
			},
		},
		Client: paho.ClientConfig{
			ClientID:          cfg.ClientID,
			OnPublishReceived: []func(paho.PublishReceived) (bool, error){o.received},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("command: %w", err)
	}
	o.cm = cm
	if err := cm.AwaitConnection(ctx); err != nil {
		cm.Disconnect(context.Background())
		connMu.Lock()
		defer connMu.Unlock()
		if connErr != nil {
			return nil, fmt.Errorf("command: connecting to %s: %w", cfg.Broker, connErr)
		}
		return nil, fmt.Errorf("command: connecting to %s: %w", cfg.Broker, err)
	}
	return o, nil
}

// connectPacket authenticates every connection with a fresh token
// (login.Authenticate).
func (o *Operator) connectPacket(cp *paho.Connect) (*paho.Connect, error) {
	return cp, login.Authenticate(cp, o.cfg.Key, o.cfg.Broker, clock.Or(o.cfg.AuthClock).Now(), o.cfg.Password)
}

// Close disconnects.
func (o *Operator) Close(ctx context.Context) error { return o.cm.Disconnect(ctx) }

func (o *Operator) topics(device string) mqtt.Topics {
	return mqtt.Topics{Prefix: o.cfg.Prefix, Device: device}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (o *Operator) received(pr paho.PublishReceived) (bool, error) {
	p := pr.Packet
	m := Message{Topic: p.Topic, Payload: p.Payload, Retained: p.Retain}
	if p.Properties != nil {
		m.ContentType, m.Correlation = p.Properties.ContentType, p.Properties.CorrelationData
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.statusName(p.Topic); ok && o.scan != nil {
		select {
		case o.scan <- m:
		default:
		}
	}
	for name, w := range o.watches {
		t := o.topics(name)
		var ch chan Message
		switch p.Topic {
		case t.Reply():
			w.addReplyLocked(m)
			continue
		case t.Status():
			ch = w.status
		case t.Event():
			ch = w.events
		default:
			continue
		}
		select {
		case ch <- m:
		default: // nobody reads fast enough: drop rather than stall paho
		}
	}
	return true, nil
}

// Watch subscribes to device's reply, status and event topics (again after
// every reconnection). Send calls it; call it yourself to read statuses or
// events without sending.
func (o *Operator) Watch(ctx context.Context, device string) error {
	t := o.topics(device)
	if err := t.Validate(); err != nil {
		return err
	}
	o.mu.Lock()
	if _, ok := o.watches[device]; ok {
		o.mu.Unlock()
		return nil
	}
	o.watches[device] = &watch{replies: map[string][]Message{}, arrived: make(chan struct{}),
		status: make(chan Message, 16), events: make(chan Message, 256)}
	o.mu.Unlock()
	if err := o.subscribe(ctx, device); err != nil {
		o.mu.Lock()
		delete(o.watches, device)
		o.mu.Unlock()
		return fmt.Errorf("command: subscribing to %s: %w", device, err)
	}
	return nil
}

// subscribe subscribes to device's topics. mochi refuses a SUBSCRIBE whose
// packet identifier equals that of one of its own deliveries still in
// flight (0x91; MQTT 5.0 Section 2.2.1 keeps the two independent), which a
// retained status delivered a moment before can be: the delivery is
// acknowledged at once, so trying again succeeds.
func (o *Operator) subscribe(ctx context.Context, device string) error {
	t := o.topics(device)
	var err error
	for range 5 {
		var sa *paho.Suback
		sa, err = o.cm.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{
			{Topic: t.Reply(), QoS: 1}, {Topic: t.Status(), QoS: 1}, {Topic: t.Event(), QoS: 1},
		}})
		if err != nil && sa != nil && len(sa.Reasons) > 0 && sa.Reasons[0] == 0x87 {
			// Not authorized (MQTT 5.0 Section 3.9.3): the broker's ACL.
			return fmt.Errorf("the broker refused the subscription (not authorized): is %s one of the broker's operators (torpor-relay --operator)?", o.cfg.Key.DID())
		}
		if err == nil || sa == nil || len(sa.Reasons) == 0 || sa.Reasons[0] != 0x91 {
			return err
		}
	}
	return err
}

// resubscribe restores the subscriptions after a reconnection that found
// no session (the operator's sessions are not persistent).
func (o *Operator) resubscribe() {
	o.mu.Lock()
	var devices []string
	for d := range o.watches {
		devices = append(devices, d)
	}
	o.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, d := range devices {
		o.subscribe(ctx, d)
	}
}

func (o *Operator) watch(device string) (*watch, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.watches[device]
	if !ok {
		return nil, fmt.Errorf("command: not watching %s (call Watch)", device)
	}
	return w, nil
}

// Sent is what Send published.
type Sent struct {
	// Object is the signed command.
	Object *governed.Object
	// NoSubscribers is true when the broker said no session subscribes to
	// the device's command topic (MQTT 5 reason code 0x10): the device
	// never connected to this broker, or its session expired, and the
	// command is lost.
	NoSubscribers bool
}

// Send signs the command spec describes (Seq must be set; see NextSeq),
// watches device, and publishes the command on its command topic with
// QoS 1, the content type asCBOR selects, the command id as correlation
// data, the reply topic as response topic, and a message expiry equal to
// the command's lifetime (MQTT 5.0 Section 3.3.2.3.3), so the broker drops
// it when the device would refuse it anyway.
func (o *Operator) Send(ctx context.Context, device string, spec Spec, asCBOR bool) (Sent, error) {
	if err := o.Watch(ctx, device); err != nil {
		return Sent{}, err
	}
	if spec.IssuedAt.IsZero() {
		spec.IssuedAt = o.clock.Now()
	}
	obj, err := Sign(o.cfg.Key, spec)
	if err != nil {
		return Sent{}, err
	}
	return o.PublishCommand(ctx, device, obj, asCBOR)
}

// PublishCommand publishes a command signed beforehand (Sign; for
// example on a machine that never touches the network) as Send does.
func (o *Operator) PublishCommand(ctx context.Context, device string, obj *governed.Object, asCBOR bool) (Sent, error) {
	if err := o.Watch(ctx, device); err != nil {
		return Sent{}, err
	}
	j, _ := obj.MarshalJSON()
	payload, ct, err := envelope.Encode(j, asCBOR)
	if err != nil {
		return Sent{}, err
	}
	exp, ok := obj.Expiry()
	if !ok {
		exp = obj.IssuedAt.Add(DefaultMaxTTL)
	}
	left := math.Ceil(exp.Sub(o.clock.Now()).Seconds())
	if left < 1 {
		return Sent{}, errors.New("command: the command expires before it could be sent")
	}
	expiry := uint32(min(left, math.MaxUint32))
	t := o.topics(device)
	resp, err := o.cm.Publish(ctx, &paho.Publish{Topic: t.Command(), QoS: 1, Payload: payload,
		Properties: &paho.PublishProperties{ContentType: ct, CorrelationData: []byte(obj.ID),
			ResponseTopic: t.Reply(), MessageExpiry: &expiry}})
	if err != nil {
		return Sent{}, fmt.Errorf("command: publishing the command: %w", err)
	}
	s := Sent{Object: obj}
	if resp != nil {
		switch {
		case resp.ReasonCode == 0x10:
			s.NoSubscribers = true
		case resp.ReasonCode >= 0x80:
			return s, fmt.Errorf("command: the broker refused the command (reason code 0x%02x)", resp.ReasonCode)
		}
	}
	return s, nil
}

// AwaitReply waits for the reply to command id from device, signed by
// deviceDID (any signer when it is the zero DID; the reply must still
// name and be signed by one device). Replies to other commands are kept
// for their own AwaitReply; messages that fail verification are skipped:
// a broker cannot forge an answer. Each call returns one reply, in the
// order they came (a command answered twice, as a replay, has two). It
// returns an error wrapping ctx.Err() when none came in time, which also
// wraps ErrNotFromDevice when a reply was ignored.
func (o *Operator) AwaitReply(ctx context.Context, device, id string, deviceDID did.DID) (Reply, *governed.Object, error) {
	w, err := o.watch(device)
	if err != nil {
		return Reply{}, nil, err
	}
	var invalid error
	for {
		m, ok, arrived := o.takeReply(w, id)
		if ok {
			r, obj, err := VerifyReply(m.ContentType, m.Payload, deviceDID, o.clock.Now())
			if err == nil && r.Command == id {
				return r, obj, nil
			}
			if err == nil {
				err = fmt.Errorf("%w: answers command %q, not %q", envelope.ErrNotFromDevice, truncate(r.Command), id)
			}
			invalid = err
			continue
		}
		select {
		case <-ctx.Done():
			if invalid != nil {
				return Reply{}, nil, fmt.Errorf("%w; a reply that failed verification was ignored: %w", ctx.Err(), invalid)
			}
			return Reply{}, nil, ctx.Err()
		case <-arrived:
		}
	}
}

// takeReply removes and returns the oldest reply held for id, or the
// channel that is closed when the next reply arrives.
func (o *Operator) takeReply(w *watch, id string) (Message, bool, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	rs := w.replies[id]
	if len(rs) == 0 {
		return Message{}, false, w.arrived
	}
	if len(rs) == 1 {
		delete(w.replies, id)
	} else {
		w.replies[id] = rs[1:]
	}
	for i, k := range w.order {
		if k == id {
			w.order = append(w.order[:i], w.order[i+1:]...)
			break
		}
	}
	return rs[0], true, nil
}

// Status returns device's latest status as received (the retained
// message, or a newer one published since), signed by deviceDID unless it
// is the zero DID. It waits until one arrives or ctx ends; ctx should
// allow a round trip to the broker, after which no status means
// ErrNoStatus. A status that fails verification is skipped.
func (o *Operator) Status(ctx context.Context, device string, deviceDID did.DID) (envelope.Status, *governed.Object, error) {
	if err := o.Watch(ctx, device); err != nil {
		return envelope.Status{}, nil, err
	}
	w, err := o.watch(device)
	if err != nil {
		return envelope.Status{}, nil, err
	}
	var invalid error
	for {
		select {
		case <-ctx.Done():
			if invalid != nil {
				return envelope.Status{}, nil, fmt.Errorf("%w: %v", ErrNoStatus, invalid)
			}
			return envelope.Status{}, nil, ErrNoStatus
		case m := <-w.status:
			// Newer statuses may be queued behind it: take the last.
			for more := true; more; {
				select {
				case n := <-w.status:
					m = n
				default:
					more = false
				}
			}
			s, obj, err := envelope.VerifyStatus(m.ContentType, m.Payload, deviceDID, o.clock.Now())
			if err != nil {
				invalid = err
				continue
			}
			return s, obj, nil
		}
	}
}

// Events returns the channel of device's events and statuses as they
// arrive (Watch first). Payloads are unverified; use envelope.VerifyEvent and
// envelope.VerifyStatus.
func (o *Operator) Events(device string) (events, status <-chan Message, err error) {
	w, err := o.watch(device)
	if err != nil {
		return nil, nil, err
	}
	return w.events, w.status, nil
}
