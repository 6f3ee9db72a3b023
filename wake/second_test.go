package wake

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/benchcpu"
)

func TestWakeSecond(t *testing.T) {
	tests := []struct {
		seed string
		want int
	}{
		// Pinned: the first 8 bytes of SHA-256("torpor wake second\x00" ||
		// seed), big-endian, mod 60 (checked with Python's hashlib).
		{"wake-vector-seed", 41},
		{"did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG", 3},
		{"did:key:z6MknGc3ocHs3zdPiJbnaaqDi58NGb4pk1Sp9WxWufuXSdxf", 36},
		{"", 59},
	}
	for _, tt := range tests {
		if got := WakeSecond(tt.seed); got != tt.want {
			t.Errorf("WakeSecond(%q) = %d, want %d", tt.seed, got, tt.want)
		}
		if again := WakeSecond(tt.seed); again != WakeSecond(tt.seed) {
			t.Errorf("WakeSecond(%q) is not deterministic", tt.seed)
		}
	}
	w := SpreadWindowFor("wake-vector-seed")
	if w != (Window{Minute: 11, Second: 41}) {
		t.Errorf("SpreadWindowFor(vector seed) = %+v, want minute 11 second 41", w)
	}
}

// fleet returns n distinct did:key DIDs, deterministic (public keys are
// SHA-256 of the index: the derivation only hashes the DID's text).
func fleet(tb testing.TB, n int) []string {
	tb.Helper()
	out := make([]string, n)
	var b [8]byte
	for i := range out {
		binary.BigEndian.PutUint64(b[:], uint64(i))
		pub := sha256.Sum256(b[:])
		d, err := did.FromPublicKey(ed25519.PublicKey(pub[:]))
		if err != nil {
			tb.Fatal(err)
		}
		out[i] = d.String()
	}
	return out
}

// chiSquare returns Pearson's statistic of counts against a uniform spread.
func chiSquare(counts []int) float64 {
	total := 0
	for _, c := range counts {
		total += c
	}
	e := float64(total) / float64(len(counts))
	var x float64
	for _, c := range counts {
		x += (float64(c) - e) * (float64(c) - e) / e
	}
	return x
}

// TestWakeSecondSpread: over 36,000 DIDs the seconds are bounded and
// uniform (chi-square with 59 degrees of freedom under 100; its 99.9 %
// point is 98.3 for a uniform source), and the devices that share a wake
// minute are spread over the seconds as uniformly as the whole fleet.
func TestWakeSecondSpread(t *testing.T) {
	ids := fleet(t, 36000)
	all := make([]int, 60)
	byMinute := make([][]int, 60)
	for m := range byMinute {
		byMinute[m] = make([]int, 60)
	}
	for _, id := range ids {
		s := WakeSecond(id)
		if s < 0 || s > 59 {
			t.Fatalf("WakeSecond(%s) = %d, outside 0-59", id, s)
		}
		all[s]++
		byMinute[WakeMinute(id)][s]++
	}
	if x := chiSquare(all); x > 100 {
		t.Errorf("seconds over the fleet: chi-square %.1f, not uniform: %v", x, all)
	}
	// Summed over the minutes, the within-minute statistics follow a
	// chi-square with 60*59 degrees of freedom (mean 3540, sd 84).
	var sum float64
	for _, c := range byMinute {
		sum += chiSquare(c)
	}
	if sum > 3540+4*84 {
		t.Errorf("seconds within a minute: summed chi-square %.0f, the second depends on the minute", sum)
	}
}

// arrivals counts the windows opening in each second of the hour.
func arrivals(ws []Window) []int {
	out := make([]int, 3600)
	for _, w := range ws {
		out[int(w.start()/time.Second)]++
	}
	return out
}

// peak returns the busiest second's count and max/mean over the hour.
func peak(counts []int) (int, float64) {
	top, total := 0, 0
	for _, c := range counts {
		top, total = max(top, c), total+c
	}
	return top, float64(top) / (float64(total) / float64(len(counts)))
}

// storm returns the windows of ids: the reference's (the minute, from :00)
// or Torpor's (SpreadWindowFor), plus offset.
func storm(ids []string, spread bool, offset time.Duration) []Window {
	ws := make([]Window, len(ids))
	for i, id := range ids {
		ws[i] = WindowFor(id)
		if spread {
			ws[i] = SpreadWindowFor(id)
		}
		ws[i].Offset = offset
	}
	return ws
}

// TestWakeStormSpread: 10,000 devices linking at their minute's :00 make
// a busiest second of ~200 links (max/mean ~70); with WakeSecond the
// busiest second is a balls-into-bins maximum, about 4 times the mean.
func TestWakeStormSpread(t *testing.T) {
	ids := fleet(t, 10000)
	_, before := peak(arrivals(storm(ids, false, 0)))
	top, after := peak(arrivals(storm(ids, true, 0)))
	if before < 50 {
		t.Errorf("minute only: max/mean %.1f, want the :00 storm (> 50)", before)
	}
	if after > 5 || top > 14 {
		t.Errorf("spread: busiest second %d, max/mean %.2f, want under 5", top, after)
	}
	// An offset moves the whole fleet; it does not change the spread.
	if _, shifted := peak(arrivals(storm(ids, true, 90*time.Second))); shifted != after {
		t.Errorf("offset 90s: max/mean %.2f, want %.2f", shifted, after)
	}
}

// TestSecondWindow: the window opens at its second, keeps its length, and
// RetryAfter lands inside it; Shift carries the second for the link.
func TestSecondWindow(t *testing.T) {
	w := Window{Minute: 11, Second: 41}
	start, end := w.Next(at("12:05:00"))
	if !start.Equal(at("12:11:41")) || !end.Equal(at("12:16:41")) {
		t.Errorf("Next = %s..%s, want 12:11:41..12:16:41", start.Format(time.TimeOnly), end.Format(time.TimeOnly))
	}
	if w.Contains(at("12:11:40")) || !w.Contains(at("12:11:41")) || !w.Contains(at("12:16:40")) || w.Contains(at("12:16:41")) {
		t.Error("Contains does not follow the second")
	}
	for i := range 200 {
		now := at("12:05:00")
		s := RetryAfter(w, now, bytes.NewReader(bytes.Repeat([]byte{byte(i), byte(i * 7)}, 400)))
		if got := now.Add(time.Duration(s) * time.Second); got.Before(start) || !got.Before(end) {
			t.Fatalf("RetryAfter = %d s: %s, outside the window", s, got.Format(time.TimeOnly))
		}
	}
	// What a relay reconstructs from the link (minute, offset = Shift).
	relay := Window{Minute: 11, Offset: (Window{Minute: 11, Second: 41, Offset: -30 * time.Second}).Shift()}
	if rs, _ := relay.Next(at("12:05:00")); !rs.Equal(at("12:11:11")) {
		t.Errorf("relay's window from Shift starts %s, want 12:11:11", rs.Format(time.TimeOnly))
	}
	for _, bad := range []Window{{Minute: 3, Second: -1}, {Minute: 3, Second: 60}} {
		if bad.Validate() == nil {
			t.Errorf("%+v.Validate() = nil, want an error", bad)
		}
	}
}

// BenchmarkWakeStorm simulates fleets of hourly_wake agents: the busiest
// second of link arrivals over the hour, and max/mean per second, with
// the reference's derivation (every device at its minute's :00) and with
// WakeSecond; the per-minute figures show what the minute alone spreads.
// The loop times the derivation of one device's window. The rows
// assigned-agents=N are the same fleets with the seconds a relay assigns
// (benchWakeStormAssigned).
func BenchmarkWakeStorm(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("assigned-agents=%d", n), func(b *testing.B) { benchWakeStormAssigned(b, n) })
		b.Run(map[int]string{10000: "agents=10000", 100000: "agents=100000"}[n], func(b *testing.B) {
			ids := fleet(b, n)
			before := arrivals(storm(ids, false, 0))
			after := arrivals(storm(ids, true, 0))
			perMinute := make([]int, 60)
			for s, c := range after {
				perMinute[s/60] += c
			}
			b.ResetTimer()
			meter := benchcpu.Start(b)
			for i := 0; i < b.N; i++ {
				_ = SpreadWindowFor(ids[i%n])
			}
			meter.Stop()
			b.StopTimer()
			_, minuteRatio := peak(perMinute)
			topB, ratioB := peak(before)
			topA, ratioA := peak(after)
			b.ReportMetric(minuteRatio, "minute-max/mean")
			b.ReportMetric(float64(topB), "busiest-s-before")
			b.ReportMetric(ratioB, "s-max/mean-before")
			b.ReportMetric(float64(topA), "busiest-s-after")
			b.ReportMetric(ratioA, "s-max/mean-after")
		})
	}
}
