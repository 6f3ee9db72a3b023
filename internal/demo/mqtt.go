package demo

import "context"

// confirmHeld confirms, as the owner over MQTT, every action held by a.
func (d *demo) confirmHeld(ctx context.Context, a *agent) {
	for _, l := range a.lettersExpecting(expectHold) {
		d.n.Event("owner", KindMQTT, "confirm %q over MQTT: not wired yet", l.Key)
	}
}
