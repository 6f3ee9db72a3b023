package envelope

import (
	"errors"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
)

// TestStatusExpires: a status is believed only within its lifetime:
// awake for StatusAwakeTTL, asleep until the announced wake plus
// StatusGrace.
func TestStatusExpires(t *testing.T) {
	key := didtest.Key(t, 1)
	wake := t0.Add(3 * time.Hour)
	for _, tc := range []struct {
		st    Status
		valid time.Duration // how long after t0 it is still believed
	}{
		{Status{State: StateAwake}, StatusAwakeTTL},
		{Status{State: StateAsleep, NextWake: &wake}, 3*time.Hour + StatusGrace},
		{Status{State: StateStopped}, MaxStatusTTL},
	} {
		tc.st.Device, tc.st.Name = key.DID().String(), "dev-1"
		o, err := SignStatus(key, t0, tc.st)
		if err != nil {
			t.Fatal(err)
		}
		j, _ := o.MarshalJSON()
		if _, _, err := VerifyStatus(ContentTypeJSON, j, key.DID(), t0.Add(tc.valid)); err != nil {
			t.Errorf("%s status at the end of its lifetime: %v", tc.st.State, err)
		}
		if _, _, err := VerifyStatus(ContentTypeJSON, j, key.DID(), t0.Add(tc.valid+time.Second)); !errors.Is(err, ErrExpired) {
			t.Errorf("%s status after its lifetime: %v, want ErrExpired", tc.st.State, err)
		}
	}
}
