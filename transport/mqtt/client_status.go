package mqtt

import (
	"context"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
)

// statusLoop publishes the status whenever kicked, coalescing kicks that
// come while a publication is in progress, so a command's completion never
// waits on the broker's acknowledgement of a status.
//
// Every envelope.StatusAwakeTTL/2 on Config.Clock it publishes again, so that the
// retained status of a device awake for long never expires.
func (c *Client) statusLoop() {
	defer c.wg.Done()
	refresh := c.clock.NewTimer(envelope.StatusAwakeTTL / 2)
	defer func() { refresh.Stop() }()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-refresh.C():
			refresh = c.clock.NewTimer(envelope.StatusAwakeTTL / 2)
			c.kickStatus()
		case <-c.statusKick:
			ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
			if err := c.publishAwake(ctx, 0); err != nil {
				c.log.Debug("publishing status failed", "err", err)
			}
			cancel()
		}
	}
}

// kickStatus asks for the status to be published again, soon.
func (c *Client) kickStatus() {
	select {
	case c.statusKick <- struct{}{}:
	default:
	}
}

// PublishStatus publishes the device's current status (state awake) as the
// retained message of its status topic. The Client does so on every
// connection and after every command; the runtime calls it when its state
// changes otherwise.
func (c *Client) PublishStatus(ctx context.Context) error { return c.publishAwake(ctx, 1) }

// publishAwake publishes status awake at qos. The refreshes after commands
// go at QoS 0: a lost one is replaced by the next, and QoS 1 would cost two
// fsynced session writes each.
func (c *Client) publishAwake(ctx context.Context, qos byte) error {
	c.mu.Lock()
	since := c.connectedAt
	c.mu.Unlock()
	return c.publishStatus(ctx, envelope.StateAwake, since, nil, qos)
}

// publishStatus publishes a status. Publications are serialised, and none
// follows the final one (asleep or offline): the retained message must end
// on what the device said last.
func (c *Client) publishStatus(ctx context.Context, s envelope.State, since time.Time, nextWake *time.Time, qos byte) error {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	if c.statusFinal {
		return nil
	}
	if s != envelope.StateAwake {
		c.statusFinal = true
	}
	p, err := c.statusPayload(s, since, nextWake)
	if err != nil {
		return err
	}
	_, err = c.cm.Publish(ctx, &paho.Publish{Topic: c.topics.Status(), QoS: qos, Retain: true, Payload: p,
		Properties: &paho.PublishProperties{ContentType: envelope.ContentTypeJSON}})
	return err
}

func (c *Client) statusPayload(s envelope.State, since time.Time, nextWake *time.Time) ([]byte, error) {
	var st envelope.Status
	if r, ok := c.cfg.Handler.(StatusReporter); ok {
		st = r.Status()
	}
	key := c.Key()
	st.Device, st.Name, st.State, st.Since = key.DID().String(), c.cfg.Name, s, since.UTC()
	st.Version = c.cfg.Version
	if nextWake != nil {
		st.NextWake = nextWake
	}
	if s != envelope.StateAwake && s != envelope.StateAsleep {
		st.NextWake = nil
	}
	o, err := envelope.SignStatus(key, c.clock.Now(), st)
	if err != nil {
		return nil, err
	}
	return o.MarshalJSON()
}

// PublishEvent publishes e (Device is filled in) on the event topic. It
// returns an error when the connection is down: events are not queued.
func (c *Client) PublishEvent(ctx context.Context, e envelope.Event) error {
	key := c.Key()
	e.Device = key.DID().String()
	o, err := envelope.SignEvent(key, c.clock.Now(), e)
	if err != nil {
		return err
	}
	b, _ := o.MarshalJSON()
	_, err = c.cm.Publish(ctx, &paho.Publish{Topic: c.topics.Event(), QoS: 1, Payload: b,
		Properties: &paho.PublishProperties{ContentType: envelope.ContentTypeJSON}})
	return err
}
