package deliver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/transport/mqtt/mqttconn"
)

// PahoPublisher implements Publisher with paho.golang's client, kept
// connected by mqttconn, which reconnects on its own.
type PahoPublisher struct {
	cm *mqttconn.Manager
	// ConnectTimeout bounds Publish's wait for a connection; zero means
	// 10 seconds. clock.Unscaled(Clock) measures it; nil means clock.Real.
	ConnectTimeout time.Duration
	Clock          clock.Clock
}

// NewMQTT starts connecting to the MQTT 5 broker at brokerURL
// (mqtt://host:port or tls://…) as clientID, in the background, and keeps
// the connection up (mqttconn reconnects). It does not wait: a broker that
// is down at startup does not stop the agent, and Publish waits for the
// connection. Close disconnects.
func NewMQTT(brokerURL, clientID string) (*PahoPublisher, error) {
	u, err := url.Parse(brokerURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("deliver: MQTT broker URL %q: want mqtt://host:port", brokerURL)
	}
	cm, err := mqttconn.Start(mqttconn.Config{
		Server: u,
		Connect: mqttconn.Connect{
			KeepAlive:  30,
			CleanStart: true,
		},
		Client: paho.ClientConfig{ClientID: clientID},
	})
	if err != nil {
		return nil, fmt.Errorf("deliver: MQTT: %w", err)
	}
	return &PahoPublisher{cm: cm}, nil
}

// DialMQTT is NewMQTT, then waits until the first connection is up or ctx
// ends.
func DialMQTT(ctx context.Context, brokerURL, clientID string) (*PahoPublisher, error) {
	p, err := NewMQTT(brokerURL, clientID)
	if err != nil {
		return nil, err
	}
	if err := p.cm.AwaitConnection(ctx); err != nil {
		p.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("deliver: connecting to %s: %w", brokerURL, err)
	}
	return p, nil
}

// Publish implements Publisher. It waits for the connection while ctx
// allows; a connection that does not come up is ErrNotStarted.
func (p *PahoPublisher) Publish(ctx context.Context, m Message) error {
	wait := p.ConnectTimeout
	if wait == 0 {
		wait = 10 * time.Second
	}
	// A wait for the broker: real time (the clock package's rule).
	actx, cancel := clock.WithTimeoutCause(ctx, clock.Unscaled(p.Clock), wait, errors.New("timed out"))
	defer cancel()
	if err := p.cm.AwaitConnection(actx); err != nil {
		return fmt.Errorf("deliver: MQTT broker not connected: %v (%w)", context.Cause(actx), ErrNotStarted)
	}
	resp, err := p.cm.Publish(ctx, &paho.Publish{
		Topic:   m.Topic,
		QoS:     m.QoS,
		Payload: m.Payload,
		Properties: &paho.PublishProperties{
			ContentType:     m.ContentType,
			CorrelationData: m.CorrelationData,
		},
	})
	if errors.Is(err, mqttconn.ErrConnectionDown) {
		return fmt.Errorf("%w (%w)", err, ErrNotStarted)
	}
	if err != nil {
		return err
	}
	if resp != nil && resp.ReasonCode >= 0x80 {
		// The broker refused the message: no subscriber received it.
		return fmt.Errorf("broker refused the message (reason code 0x%02x) (%w)", resp.ReasonCode, ErrNotStarted)
	}
	return nil
}

// Close disconnects from the broker.
func (p *PahoPublisher) Close(ctx context.Context) error { return p.cm.Disconnect(ctx) }
