package mqtt

import (
	"context"
	"errors"
	"time"

	"github.com/eclipse/paho.golang/paho"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
)

// Handler decides what becomes of the commands a Client received and
// stored: admission, execution and the answer. runtime/manage implements
// it.
type Handler interface {
	// Order returns the backlog a connection brought (complete, once the
	// end-of-backlog probe came back) in the order it is to be handled.
	Order(backlog []*Delivery) []*Delivery
	// Handle takes one stored message. The Client calls it from one
	// goroutine: the backlog in Order's order, then messages as they come.
	// The handler must call d.Done once d is answered, or left stored for
	// the next start; it may do so from another goroutine. ctx ends when
	// the Client stops.
	Handle(ctx context.Context, d *Delivery)
	// Interrupted is called at Start, in tx, for each message d admitted
	// (Delivery.Admit) as a before a restart and never completed. It
	// returns the reply payload to queue for it, or false for none; the
	// message is then forgotten.
	Interrupted(tx *bolt.Tx, d *Delivery, a Admission) (reply any, ok bool, err error)
}

// StatusReporter is implemented by a Handler that describes the device's
// state for the retained status topic (mode, window, next wake, halt, ...).
type StatusReporter interface {
	Status() envelope.Status
}

// Admission is what an answer after a restart needs to know of an
// admitted command; the inbox keeps it from the admission transaction on.
type Admission struct {
	ID       string // the command's id
	Operator string // its issuer's DID
	Seq      uint64
	Op       string
	Key      string // its key in the idempotency ledger
}

// Unreadable says why a stored message could not be read as a Governed
// Object: Reason is envelope.ReasonUnsupportedContentType or governed's malformed.
type Unreadable struct {
	Reason, Detail string
}

// ErrAborted is returned by Delivery.Complete after Client.Abort: as after
// a power cut, nothing more is recorded.
var ErrAborted = errors.New("mqtt: client aborted")

// Delivery is one stored message handed to a Handler.
type Delivery struct {
	c     *Client
	entry uint64 // inbox key
	// Object is the message's Governed Object; nil when the payload did
	// not decode, and Err says why.
	Object *governed.Object
	Err    *Unreadable
	// CBOR says the message came as CBOR: the answer goes in CBOR too.
	CBOR bool
	// Correlation is the MQTT correlation data as the publisher set it.
	Correlation []byte
	// Key is the device's identity when the message was taken: it signs
	// the answer.
	Key *did.PrivateKey
}

// Admit marks the message admitted, in the admission transaction tx: from
// its commit on, a restart before Complete answers it through
// Handler.Interrupted instead of handling it again.
func (d *Delivery) Admit(tx *bolt.Tx, a Admission) error {
	return markAdmitted(tx, d.entry, a, d.CBOR)
}

// Complete signs reply, a reply payload, with d.Key, queues it on the
// reply topic with id as correlation data and forgets the message, all in
// tx, and returns the signed reply (the receipt to record). After
// Client.Abort it records nothing and returns ErrAborted.
func (d *Delivery) Complete(tx *bolt.Tx, id string, reply any) ([]byte, error) {
	if d.c.isAborted() {
		return nil, ErrAborted
	}
	obj, payload, err := d.sign(reply)
	if err != nil {
		return nil, err
	}
	pkt := publishPacket(d.c.topics.Reply(), payload, envelope.ContentType(d.CBOR), []byte(id), envelope.DefaultReplyTTL)
	if err := d.c.queue.EnqueueTx(tx, pkt); err != nil {
		return nil, err
	}
	tx.OnCommit(d.c.kickStatus)
	return obj, deleteInbox(tx, d.entry)
}

// Answer signs reply with d.Key and publishes it on the reply topic at
// once, outside the durable queue (for rejections, and when recording a
// completion failed). It does not forget the message.
func (d *Delivery) Answer(ctx context.Context, id string, reply any) error {
	_, payload, err := d.sign(reply)
	if err != nil {
		return err
	}
	return d.publishReply(ctx, id, payload)
}

// Resend publishes receipt, a reply Complete signed before (the
// receipt it returned), on the reply topic again with id as correlation
// data: the answer to a copy of a command that completed.
func (d *Delivery) Resend(ctx context.Context, id string, receipt []byte) error {
	payload, err := envelope.EncodePayload(receipt, d.CBOR)
	if err != nil {
		return err
	}
	return d.publishReply(ctx, id, payload)
}

// publishReply publishes a signed reply's payload on the reply topic at
// once, with id as correlation data.
func (d *Delivery) publishReply(ctx context.Context, id string, payload []byte) error {
	exp := uint32(envelope.DefaultReplyTTL / time.Second)
	_, err := d.c.cm.Publish(ctx, &paho.Publish{Topic: d.c.topics.Reply(), QoS: 1, Payload: payload,
		Properties: &paho.PublishProperties{ContentType: envelope.ContentType(d.CBOR), CorrelationData: []byte(id), MessageExpiry: &exp}})
	return err
}

// Event publishes e on the event topic (PublishEvent).
func (d *Delivery) Event(ctx context.Context, e envelope.Event) error {
	return d.c.PublishEvent(ctx, e)
}

func (d *Delivery) sign(reply any) (obj, payload []byte, err error) {
	o, err := envelope.SignReply(d.Key, d.c.clock.Now(), reply)
	if err != nil {
		return nil, nil, err
	}
	obj, _ = o.MarshalJSON()
	payload, err = envelope.EncodePayload(obj, d.CBOR)
	return obj, payload, err
}

// Forget removes the message from the inbox.
func (d *Delivery) Forget() error {
	return d.c.cfg.DB.Update(func(tx *bolt.Tx) error { return deleteInbox(tx, d.entry) })
}

// Done tells the Client the handler is finished with d (WaitIdle, Sleep).
func (d *Delivery) Done() { d.c.end() }
