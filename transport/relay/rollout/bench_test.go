package rollout_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/store/rollouts"
	"github.com/torpor-dev/torpor/transport/relay/rollout"
)

// BenchmarkOffer is what rollouts add to a device's wake on the relay:
// Manager.OfferID over a bbolt rollouts file holding no rollout, one of
// 100 devices and one of MaxDevices, side by side in one run with
// "decode", what the offer cost when it decoded the record at every wake
// (Manager.Get); cpu-ns/op is the CPU each costs (docs/updates.md,
// "Limits").
func BenchmarkOffer(b *testing.B) {
	for _, n := range []int{0, 100, rollout.MaxDevices, -rollout.MaxDevices} {
		name := fmt.Sprintf("devices=%d", n)
		if n < 0 {
			name = fmt.Sprintf("decode/devices=%d", -n)
		}
		b.Run(name, func(b *testing.B) {
			st, err := rollouts.OpenBolt(filepath.Join(b.TempDir(), "rollouts.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			m := &rollout.Manager{Store: st}
			decode := n < 0
			n = max(n, -n)
			ds := make([]rollout.Device, max(n, 1))
			for i := range ds {
				ds[i] = rollout.Device{ID: fmt.Sprintf("did:key:z6Mk%044d", i), Minute: i % 60, Second: i % 59}
			}
			if n > 0 {
				if _, err := m.Start(b.Context(), rollout.Spec{ID: "r1", Target: rollout.Target{Name: "t", Version: "1"}}, ds); err != nil {
					b.Fatal(err)
				}
			}
			c := benchcpu.Start(b)
			for b.Loop() {
				if decode {
					r, err := m.Get(b.Context(), "r1")
					if err != nil {
						b.Fatal(err)
					}
					r.Offer(ds[0].ID)
				} else if _, _, _, err := m.OfferID(b.Context(), ds[0].ID); err != nil {
					b.Fatal(err)
				}
			}
			c.Stop()
		})
	}
}
