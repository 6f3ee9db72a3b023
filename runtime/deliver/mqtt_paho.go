package deliver

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	"github.com/eclipse/paho.golang/autopaho"
	"github.com/eclipse/paho.golang/paho"
)

// PahoPublisher implements Publisher with paho.golang's autopaho connection
// manager, which reconnects on its own.
type PahoPublisher struct {
	cm *autopaho.ConnectionManager
}

// DialMQTT connects to the MQTT 5 broker at brokerURL (mqtt://host:port or
// tls://…) as clientID and waits until the first connection is up or ctx
// ends. Close disconnects.
func DialMQTT(ctx context.Context, brokerURL, clientID string) (*PahoPublisher, error) {
	u, err := url.Parse(brokerURL)
	if err != nil {
		return nil, fmt.Errorf("deliver: MQTT broker URL: %w", err)
	}
	cm, err := autopaho.NewConnection(context.WithoutCancel(ctx), autopaho.ClientConfig{
		ServerUrls:                    []*url.URL{u},
		KeepAlive:                     30,
		CleanStartOnInitialConnection: true,
		ClientConfig:                  paho.ClientConfig{ClientID: clientID},
	})
	if err != nil {
		return nil, fmt.Errorf("deliver: MQTT: %w", err)
	}
	if err := cm.AwaitConnection(ctx); err != nil {
		cm.Disconnect(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("deliver: connecting to %s: %w", brokerURL, err)
	}
	return &PahoPublisher{cm: cm}, nil
}

// Publish implements Publisher.
func (p *PahoPublisher) Publish(ctx context.Context, m Message) error {
	resp, err := p.cm.Publish(ctx, &paho.Publish{
		Topic:   m.Topic,
		QoS:     m.QoS,
		Payload: m.Payload,
		Properties: &paho.PublishProperties{
			ContentType:     m.ContentType,
			CorrelationData: m.CorrelationData,
		},
	})
	if errors.Is(err, autopaho.ConnectionDownError) {
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
