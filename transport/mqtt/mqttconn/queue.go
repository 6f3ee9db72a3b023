package mqttconn

import (
	"context"
	"errors"
	"time"

	"github.com/eclipse/paho.golang/autopaho/queue"
	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/clock"
)

// drainQueue hands Config.Queue's messages to the session, oldest first,
// while a connection is up, until ctx ends. A message leaves the queue once
// paho holds it in the session (which resends it until acknowledged), so
// none is lost between the two.
func (m *Manager) drainQueue(ctx context.Context) {
	defer m.wg.Done()
	for {
		if m.AwaitConnection(ctx) != nil {
			return
		}
		cli, down := m.client()
		if cli == nil {
			continue // down again already
		}
		if !m.drainWhileUp(ctx, cli, down) {
			return
		}
	}
}

// drainWhileUp publishes from the queue on cli until the connection ends
// (true) or ctx does (false).
func (m *Manager) drainWhileUp(ctx context.Context, cli *paho.Client, down <-chan struct{}) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-down:
			return true
		case <-m.cfg.Queue.Wait():
		}
		for {
			more, err := m.publishOne(ctx, cli)
			if err != nil {
				select {
				case <-ctx.Done():
					return false
				case <-down:
					return true
				default: // retry
				}
				continue
			}
			if !more {
				break
			}
		}
	}
}

// publishOne publishes the queue's oldest message, if any (more is false
// when the queue is empty). Every Entry is settled (Remove, Leave or
// Quarantine) before it returns, as queue.Queue requires.
func (m *Manager) publishOne(ctx context.Context, cli *paho.Client) (more bool, err error) {
	entry, err := m.cfg.Queue.Peek()
	if errors.Is(err, queue.ErrEmpty) {
		return false, nil
	}
	if err != nil {
		m.cfg.Logs.Errors.Printf("mqttconn: reading the queue: %v", err)
		m.pause(ctx)
		return false, err
	}
	pub, err := m.readEntry(ctx, entry)
	if err != nil {
		return true, nil // quarantined or left; the next one
	}
	_, err = cli.PublishWithOptions(ctx, pub, paho.PublishOptions{Method: paho.PublishMethod_AsyncSend})
	switch {
	case err == nil, errors.Is(err, paho.ErrNetworkErrorAfterStored):
		// In the session: paho sends it (again) until acknowledged.
		if rerr := entry.Remove(); rerr != nil {
			m.cfg.Logs.Errors.Printf("mqttconn: removing a queue entry: %v", rerr)
		}
		return true, err
	case errors.Is(err, paho.ErrInvalidArguments):
		// It would be refused again.
		m.cfg.Logs.Errors.Printf("mqttconn: dropping a queued message the server cannot take: %v", err)
		if rerr := entry.Remove(); rerr != nil {
			m.cfg.Logs.Errors.Printf("mqttconn: removing a queue entry: %v", rerr)
		}
		return true, err
	default:
		m.cfg.Logs.Errors.Printf("mqttconn: publishing from the queue: %v", err)
		if lerr := entry.Leave(); lerr != nil {
			m.cfg.Logs.Errors.Printf("mqttconn: leaving a queue entry: %v", lerr)
		}
		m.pause(ctx)
		return true, err
	}
}

// readEntry decodes entry's PUBLISH. An entry that cannot be read is left
// in the queue (after a pause); one that is not a PUBLISH is quarantined.
func (m *Manager) readEntry(ctx context.Context, entry queue.Entry) (*paho.Publish, error) {
	r, err := entry.Reader()
	if err != nil {
		m.cfg.Logs.Errors.Printf("mqttconn: reading a queue entry: %v", err)
		if lerr := entry.Leave(); lerr != nil {
			m.cfg.Logs.Errors.Printf("mqttconn: leaving a queue entry: %v", lerr)
		}
		m.pause(ctx)
		return nil, err
	}
	p, err := packets.ReadPacket(r)
	var pub *packets.Publish
	if err == nil {
		var ok bool
		if pub, ok = p.Content.(*packets.Publish); !ok {
			err = errors.New("not a PUBLISH")
		}
	}
	if err != nil {
		m.cfg.Logs.Errors.Printf("mqttconn: quarantining a queue entry: %v", err)
		if qerr := entry.Quarantine(); qerr != nil {
			m.cfg.Logs.Errors.Printf("mqttconn: quarantining a queue entry: %v", qerr)
		}
		return nil, err
	}
	// A fresh packet identifier: the session assigns one.
	out := &paho.Publish{QoS: pub.QoS, Retain: pub.Retain, Topic: pub.Topic, Payload: pub.Payload}
	out.InitProperties(pub.Properties)
	return out, nil
}

// pause waits a second on Config.Clock after a queue error, so that a
// failing store is not spun on.
func (m *Manager) pause(ctx context.Context) {
	clock.Sleep(ctx, m.clock, time.Second)
}
