package runtime

import (
	"fmt"
	"time"

	"github.com/fxamacker/cbor/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/wake"
)

var (
	bucketAgent = []byte("agent")
	keyCycle    = []byte("cycle")
	keyLastWake = []byte("last-wake")
)

// cycle is the duty cycle's state in bbolt, so that a device that powered
// off resumes its cycle at the next boot.
type cycle struct {
	// Mode is the mode in force when it was changed at runtime, and
	// ConfigMode the configured mode it overrode: the override holds
	// across restarts until the configuration's mode itself changes.
	Mode       wake.Mode `cbor:"1,keyasint,omitempty"`
	ConfigMode wake.Mode `cbor:"2,keyasint,omitempty"`
	// ScheduledWake is the operator's planned wake in sleep mode.
	ScheduledWake time.Time `cbor:"3,keyasint,omitempty"`
	// LastWake is when the last wake began, NextWake the wake it planned.
	LastWake time.Time `cbor:"4,keyasint,omitempty"`
	NextWake time.Time `cbor:"5,keyasint,omitempty"`
	Wakes    uint64    `cbor:"6,keyasint,omitempty"`
	// Length and Offset are the hourly window set at runtime (WindowSet),
	// and ConfigLength and ConfigOffset the configured window they
	// overrode: like the mode, the override holds until the configured
	// window changes.
	Length       time.Duration `cbor:"7,keyasint,omitempty"`
	Offset       time.Duration `cbor:"8,keyasint,omitempty"`
	ConfigLength time.Duration `cbor:"9,keyasint,omitempty"`
	ConfigOffset time.Duration `cbor:"10,keyasint,omitempty"`
	WindowSet    bool          `cbor:"11,keyasint,omitempty"`
	// Minute is the hourly window's wake minute kept across key rotations
	// (MinuteSet): the first identity's, so the window stays where it was.
	Minute    int  `cbor:"12,keyasint,omitempty"`
	MinuteSet bool `cbor:"13,keyasint,omitempty"`
	// Second is the window's wake second (SecondSet): the one the relay
	// assigned (adoptWakeSecond), or the first identity's kept across key
	// rotations like Minute. A rotation recorded before wake seconds
	// existed has MinuteSet without it: the window then opens at the
	// current DID's second of the first identity's minute.
	Second    int  `cbor:"14,keyasint,omitempty"`
	SecondSet bool `cbor:"15,keyasint,omitempty"`
}

var encMode, _ = cbor.EncOptions{Time: cbor.TimeUnixMicro}.EncMode()

func loadCycle(tx *bolt.Tx) (cycle, error) {
	var c cycle
	b := tx.Bucket(bucketAgent)
	if b == nil {
		return c, nil
	}
	v := b.Get(keyCycle)
	if v == nil {
		return c, nil
	}
	if err := cbor.Unmarshal(v, &c); err != nil {
		return c, fmt.Errorf("runtime: decoding cycle state: %w", err)
	}
	return c, nil
}

func putCBOR(tx *bolt.Tx, key []byte, v any) error {
	b, err := tx.CreateBucketIfNotExists(bucketAgent)
	if err != nil {
		return err
	}
	enc, err := encMode.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(key, enc)
}

// LastWake returns the report of the last wake recorded in tx, if any.
func LastWake(tx *bolt.Tx) (WakeReport, bool, error) {
	var r WakeReport
	b := tx.Bucket(bucketAgent)
	if b == nil {
		return r, false, nil
	}
	v := b.Get(keyLastWake)
	if v == nil {
		return r, false, nil
	}
	if err := cbor.Unmarshal(v, &r); err != nil {
		return r, false, fmt.Errorf("runtime: decoding last wake: %w", err)
	}
	return r, true, nil
}
