package wake

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"time"
)

// zeros is a randomness source that always draws the lowest value.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// fixed draws v once.
func fixed(v uint64) io.Reader { return bytes.NewReader(binary.BigEndian.AppendUint64(nil, v)) }

type failing struct{}

func (failing) Read([]byte) (int, error) { return 0, errors.New("no entropy") }

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name string
		w    Window
		now  string
		rnd  io.Reader
		want int
	}{
		// The reference's overshoot case: it answers 3960.
		{"wake later this hour", Window{Minute: 11}, "12:05:00", zeros{}, 360},
		{"od-004 (reference 1800)", Window{Minute: 11}, "12:41:00", zeros{}, 1800},
		{"sub-second now rounds up", Window{Minute: 11}, "12:05:00.3", zeros{}, 360},
		{"inside: later in this window", Window{Minute: 11}, "12:11:10", zeros{}, 1},
		{"last half second: the next window", Window{Minute: 11}, "12:15:59.5", zeros{}, 3301},
		{"wrapping window", Window{Minute: 58}, "13:10:00", zeros{}, 2880},
		{"offset", Window{Minute: 11, Offset: 30 * time.Second}, "12:05:00", zeros{}, 390},
		{"rnd failing: earliest second", Window{Minute: 11}, "12:05:00", failing{}, 360},
		{"top of the range", Window{Minute: 11}, "12:05:00", fixed(299), 659},
		{"modulo the range", Window{Minute: 11}, "12:05:00", fixed(300 + 7), 367},
		{"short window", Window{Minute: 11, Length: time.Second}, "12:05:00", fixed(99), 360},
		{"invalid window under a second: its start", Window{Minute: 11, Length: time.Millisecond}, "12:05:00.5", zeros{}, 360},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RetryAfter(tt.w, at(tt.now), tt.rnd); got != tt.want {
				t.Errorf("RetryAfter(%+v, %s) = %d, want %d", tt.w, tt.now, got, tt.want)
			}
		})
	}
}

// TestRetryAfterLandsInWindow checks on random windows and instants that
// the answer is at least 1, lands inside a window, and inside the next one.
func TestRetryAfterLandsInWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := rand.NewChaCha8([32]byte{7})
	base := at("00:00:00")
	for range 20000 {
		w := Window{
			Minute: rng.IntN(60),
			Length: time.Second + time.Duration(rng.Int64N(int64(10*time.Minute))),
			Offset: time.Duration(rng.Int64N(int64(3*time.Hour))) - 90*time.Minute,
		}
		now := base.Add(time.Duration(rng.Int64N(int64(48 * time.Hour))))
		got := RetryAfter(w, now, src)
		then := now.Add(time.Duration(got) * time.Second)
		start, end := w.Next(now)
		if got < 1 || !w.Contains(then) || then.Before(start) && !then.Equal(start) {
			t.Fatalf("RetryAfter(%+v, %s) = %d: %s is not in a window (next %s..%s)", w, now, got, then, start, end)
		}
		if !then.Before(end) {
			// Only allowed when less than a second of the current window
			// was left: then it is the following window.
			if start.After(now) || end.Sub(now) >= time.Second {
				t.Fatalf("RetryAfter(%+v, %s) = %d: past the window end %s", w, now, got, end)
			}
		}
	}
}

// TestRetryAfterSpread draws many answers at one instant: every second of
// the window is used, roughly evenly.
func TestRetryAfterSpread(t *testing.T) {
	src := rand.NewChaCha8([32]byte{1})
	w := Window{Minute: 11}
	now := at("12:05:00")
	counts := map[int]int{}
	const draws = 30000
	for range draws {
		counts[RetryAfter(w, now, src)]++
	}
	if len(counts) != 300 {
		t.Errorf("%d distinct answers, want all 300 seconds of the window", len(counts))
	}
	for s, n := range counts {
		if s < 360 || s > 659 {
			t.Errorf("answer %d outside 360..659", s)
		}
		if mean := draws / 300; n < mean/3 || n > 3*mean {
			t.Errorf("answer %d drawn %d times, mean %d: not uniform", s, n, mean)
		}
	}
}

func TestJitter(t *testing.T) {
	now := at("12:00:00")
	tests := []struct {
		name       string
		start, end string
		wantOK     bool
		want       int // with zeros
	}{
		{"future span", "12:10:00", "12:20:00", true, 600},
		{"current span", "11:50:00", "12:00:02", true, 1},
		{"under a second left", "11:50:00", "12:00:00.9", false, 0},
		{"past", "11:00:00", "11:30:00", false, 0},
		{"empty", "12:10:00", "12:10:00", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Jitter(now, at(tt.start), at(tt.end), zeros{})
			if ok != tt.wantOK || got != tt.want {
				t.Errorf("Jitter(%s..%s) = %d, %v; want %d, %v", tt.start, tt.end, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestRetryAfterDefaultRandomness(t *testing.T) {
	w := Window{Minute: 11}
	for range 100 {
		if got := RetryAfter(w, at("12:05:00"), nil); got < 360 || got > 659 {
			t.Fatalf("RetryAfter with crypto/rand = %d, want 360..659", got)
		}
	}
}
