package deliver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/torpor-dev/torpor/clock"
)

// Publisher publishes one MQTT message and returns once the broker took
// responsibility for it (PUBACK at QoS 1). PahoPublisher implements it over
// paho.golang's client (transport/mqtt/mqttconn); tests may use a fake or an
// embedded broker.
type Publisher interface {
	// Publish returns an error wrapping ErrNotStarted when the message
	// certainly did not reach the broker (no connection).
	Publish(ctx context.Context, m Message) error
}

// Message is one MQTT 5 publication.
type Message struct {
	Topic       string
	Payload     []byte
	QoS         byte
	ContentType string // MQTT 5 content type property
	// CorrelationData carries the idempotency key or object id, so a
	// subscriber can deduplicate without parsing the payload.
	CorrelationData []byte
}

// MQTT publishes each delivery as JSON on Topic (QoS 1 unless set). The
// topic may contain {purpose}, which is replaced by the object's purpose
// with ':' turned into '/', so subscribers can filter with MQTT wildcards
// (torpor/objects/{purpose} → torpor/objects/comms/message).
type MQTT struct {
	Publisher Publisher
	Topic     string
	QoS       byte // 0 means 1: at-most-once to a broker is never what we want here
	Clock     clock.Clock
}

// Deliver implements Handler.
func (m *MQTT) Deliver(ctx context.Context, d Delivery) (Outcome, error) {
	payload, err := json.Marshal(d)
	if err != nil {
		return Outcome{}, fmt.Errorf("deliver: encoding delivery: %w (%w)", err, ErrNotStarted)
	}
	qos := m.QoS
	if qos == 0 {
		qos = 1
	}
	corr := d.IdempotencyKey
	if corr == "" {
		corr = d.Issuer + " " + d.ObjectID
	}
	c := clock.Or(m.Clock)
	start := c.Now()
	topic := expandTopic(m.Topic, d.Purpose)
	err = m.Publisher.Publish(ctx, Message{
		Topic: topic, Payload: payload, QoS: qos,
		ContentType: "application/json", CorrelationData: []byte(corr),
	})
	o := Outcome{OK: err == nil, Detail: "published " + topic, Duration: c.Now().Sub(start)}
	if err != nil {
		o.Detail = err.Error()
		return o, fmt.Errorf("deliver: publishing on %s: %w", topic, err)
	}
	return o, nil
}

func expandTopic(topic, p string) string {
	return strings.ReplaceAll(topic, "{purpose}", strings.ReplaceAll(p, ":", "/"))
}
