package command

import (
	"context"
	"fmt"
	"strings"

	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
)

// NameOf returns the name (topic level) under which the device with DID
// dev publishes its status: it reads every device's retained status
// (PREFIX/+/status, which the broker lets operators read) and takes the
// first one that verifies as signed by dev and names the topic it came
// on. It waits until one arrives or ctx ends; a device that never
// published a status under any name is ErrNoStatus.
func (o *Operator) NameOf(ctx context.Context, dev did.DID) (string, error) {
	filter := o.topics("+").Status()
	ch := make(chan Message, 256)
	o.mu.Lock()
	o.scan = ch
	o.mu.Unlock()
	defer func() { // the subscription stays for the session, unread
		o.mu.Lock()
		o.scan = nil
		o.mu.Unlock()
	}()
	if err := o.subscribeFilter(ctx, filter); err != nil {
		return "", fmt.Errorf("command: reading the devices' statuses: %w", err)
	}
	for {
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%w: no device signed by %s published its status on %s", ErrNoStatus, dev, filter)
		case m := <-ch:
			name, ok := o.statusName(m.Topic)
			if !ok {
				continue
			}
			s, _, err := envelope.VerifyStatus(m.ContentType, m.Payload, dev, o.clock.Now())
			if err == nil && s.Name == name {
				return name, nil
			}
		}
	}
}

// statusName returns NAME for a topic PREFIX/NAME/status.
func (o *Operator) statusName(topic string) (string, bool) {
	base := strings.TrimSuffix(o.topics("").Status(), "/status")
	rest, ok := strings.CutPrefix(topic, base)
	if !ok {
		return "", false
	}
	name, ok := strings.CutSuffix(rest, "/status")
	return name, ok && name != "" && !strings.Contains(name, "/")
}

// subscribeFilter subscribes to one topic filter, trying again after
// mochi's 0x91 (see subscribe).
func (o *Operator) subscribeFilter(ctx context.Context, filter string) error {
	var err error
	for range 5 {
		var sa *paho.Suback
		sa, err = o.cm.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}})
		if err != nil && sa != nil && len(sa.Reasons) > 0 && sa.Reasons[0] == 0x87 {
			return fmt.Errorf("the broker refused the subscription to %s (not authorized)", filter)
		}
		if err == nil || sa == nil || len(sa.Reasons) == 0 || sa.Reasons[0] != 0x91 {
			return err
		}
	}
	return err
}
