package agents

import (
	"fmt"
	"slices"
	"time"

	"github.com/fxamacker/cbor/v2"
)

// MaxWakes is how many wakes of each agent a Store keeps (RecordWake):
// two days of hourly wakes.
const MaxWakes = 48

// Wake is one wake of an agent's device as the relay learned of it when
// the device published its state (transport/relay), for the fleet
// console's history (transport/relay/console).
type Wake struct {
	// At is when the wake started: the device's signed status says so
	// (link wire.Status.Wake), else the relay's clock when its link came up.
	At time.Time
	// Reason is the status's wake reason ("" when it gave none).
	Reason string
	// AwakeMs is how long the device stayed awake, which its status
	// reports at the next wake (wire.Status.LastWake); 0 until then.
	AwakeMs int64
	// Drained counts the records the device acknowledged over its link.
	Drained int
	// QueueDepth is how many records were queued for it when it published.
	QueueDepth int
	// Missed counts the windows (or pulses) its published schedule
	// promised since the wake before and that it did not keep.
	Missed int
	// Relay is the relay the device linked to.
	Relay string
}

// AddWake returns h (ordered by At) with w: in place of the wake at the
// same instant, else in order of At, and without the oldest wakes while
// more than MaxWakes are left. Stores keep their history with it.
func AddWake(h []Wake, w Wake) []Wake {
	i, found := slices.BinarySearchFunc(h, w.At, func(e Wake, t time.Time) int { return e.At.Compare(t) })
	if found {
		h[i] = w
	} else {
		h = slices.Insert(h, i, w)
	}
	if n := len(h) - MaxWakes; n > 0 {
		h = slices.Delete(h, 0, n)
	}
	return h
}

// wakeRecord is Wake as stored.
type wakeRecord struct {
	_          struct{} `cbor:",toarray"`
	At         int64    // Unix ns
	Reason     string
	AwakeMs    int64
	Drained    int
	QueueDepth int
	Missed     int
	Relay      string
}

const wakesVersion = 1

// EncodeWakes is a history as stored by both engines: a version byte (1)
// then a CBOR array of wakes, each an array.
func EncodeWakes(h []Wake) ([]byte, error) {
	rs := make([]wakeRecord, 0, len(h))
	for _, w := range h {
		rs = append(rs, wakeRecord{At: w.At.UnixNano(), Reason: w.Reason, AwakeMs: w.AwakeMs, Drained: w.Drained,
			QueueDepth: w.QueueDepth, Missed: w.Missed, Relay: w.Relay})
	}
	b, err := cbor.Marshal(rs)
	if err != nil {
		return nil, err
	}
	return append([]byte{wakesVersion}, b...), nil
}

// DecodeWakes reads what EncodeWakes wrote; nil or empty b is no wake.
func DecodeWakes(b []byte) ([]Wake, error) {
	h := []Wake{}
	if len(b) == 0 {
		return h, nil
	}
	if b[0] != wakesVersion {
		return nil, fmt.Errorf("agents: wakes: unknown layout version %d", b[0])
	}
	var rs []wakeRecord
	if err := cbor.Unmarshal(b[1:], &rs); err != nil {
		return nil, fmt.Errorf("agents: wakes: %v", err)
	}
	for _, r := range rs {
		h = AddWake(h, Wake{At: time.Unix(0, r.At).UTC(), Reason: r.Reason, AwakeMs: r.AwakeMs, Drained: r.Drained,
			QueueDepth: r.QueueDepth, Missed: r.Missed, Relay: r.Relay})
	}
	return h, nil
}
