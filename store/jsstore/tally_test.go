package jsstore

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/internal/benchcpu"
	"github.com/torpor-dev/torpor/store/queue"
)

// TestTallyMatchesWalk folds random records and markers into a view, adds
// records as Enqueue does, and asks for its totals at times that mostly
// move on (records expiring meanwhile) and sometimes go back: the tally's
// totals, for every sender, equal the walk over the view's live records.
// The seeds are fixed: a failing one is named and fails again.
func TestTallyMatchesWalk(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		if !tallyRun(t, seed) {
			t.Fatalf("seed %d: the tally and the walk differ (above)", seed)
		}
	}
}

var tallyPeers = []string{"", "did:key:a", "did:key:b", "did:key:c"}

// tallyRun runs one random history of seed and reports whether the tally
// matched the walk throughout.
func tallyRun(t *testing.T, seed uint64) bool {
	rng := rand.New(rand.NewPCG(seed, 29))
	base := time.Unix(1_800_000_000, 0)
	now := base
	v := &view{}
	for step := range 400 {
		switch op := rng.IntN(10); {
		case op < 4:
			foldRecord(t, v, rng, now)
		case op < 5:
			e := randomEntry(rng, now)
			e.Seq, e.Msg = v.MaxSeq+1, v.Last+1
			v.add(e)
			v.Last, v.MaxSeq = e.Msg, e.Seq
		case op < 7:
			foldMarker(t, v, rng)
		case op < 9:
			now = now.Add(time.Duration(rng.IntN(4000)) * time.Millisecond)
		default:
			now = now.Add(-time.Duration(rng.IntN(3000)) * time.Millisecond)
		}
		for _, peer := range append(tallyPeers, "did:key:nobody") {
			wantAll, wantPeer := v.walk(now, peer)
			all, fromPeer := v.stats(now, peer)
			if all != wantAll || fromPeer != wantPeer {
				t.Errorf("seed %d step %d at +%v, peer %q: stats %+v %+v, walk %+v %+v",
					seed, step, now.Sub(base), peer, all, fromPeer, wantAll, wantPeer)
				return false
			}
		}
	}
	return true
}

// randomEntry is a record enqueued about now that expires 0 to 20 s
// after now (some, by an earlier now, before it).
func randomEntry(rng *rand.Rand, now time.Time) entry {
	enq := now.Add(-time.Duration(rng.IntN(5000)) * time.Millisecond)
	return entry{Size: int64(rng.IntN(2048)), Kind: queue.Kind(rng.IntN(2)), From: tallyPeers[rng.IntN(len(tallyPeers))],
		Enqueued: enq.UnixNano(), Expires: enq.Add(time.Duration(rng.IntN(25000)) * time.Millisecond).UnixNano(), Op: "op"}
}

// foldRecord folds a record message for a random entry, stored a few
// stream sequences after v.Last.
func foldRecord(t *testing.T, v *view, rng *rand.Rand, now time.Time) {
	e := randomEntry(rng, now)
	r := queue.Record{Seq: v.MaxSeq + 1 + uint64(rng.IntN(2)), Agent: "did:key:agent", From: e.From, Kind: e.Kind,
		EnqueuedAt: time.Unix(0, e.Enqueued), ExpiresAt: time.Unix(0, e.Expires), Body: make([]byte, e.Size)}
	m := recordMsg("q.agent", r, e.Op)
	if err := v.fold(m.Header, m.Data, v.Last+1+uint64(rng.IntN(3))); err != nil {
		t.Fatal(err)
	}
}

// foldMarker folds a marker naming some of v's live records and a seq
// that none has.
func foldMarker(t *testing.T, v *view, rng *rand.Rand) {
	gone := []uint64{v.MaxSeq + 100}
	for _, e := range v.Live {
		if rng.IntN(3) == 0 {
			gone = append(gone, e.Seq)
		}
	}
	m, err := markerMsg("q.agent", v.MaxSeq, gone)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.fold(m.Header, m.Data, v.Last+1); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkViewStats asks a view of depth live records for an enqueue's
// totals: from the tally, and by the walk it replaces, side by side.
func BenchmarkViewStats(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	for _, depth := range []int{16, 1024} {
		v := &view{}
		for i := range depth {
			v.add(entry{Seq: uint64(i + 1), Size: 1024, From: tallyPeers[i%len(tallyPeers)], Expires: now.Add(time.Hour).UnixNano()})
		}
		for _, way := range []string{"tally", "walk"} {
			b.Run(way+"/depth="+strconv.Itoa(depth), func(b *testing.B) {
				meter := benchcpu.Start(b)
				for b.Loop() {
					if way == "tally" {
						v.stats(now, "did:key:a")
					} else {
						v.walk(now, "did:key:a")
					}
				}
				meter.Stop()
			})
		}
	}
}
