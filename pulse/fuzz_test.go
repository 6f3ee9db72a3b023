package pulse

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
)

func mustWire(t *testing.T, doc []byte) wire {
	var w wire
	if err := json.Unmarshal(doc, &w); err != nil {
		t.Fatal(err)
	}
	return w
}

// FuzzParse: Parse never panics, and a document it accepts is canonical,
// verifies, and parses to the same pulse again.
func FuzzParse(f *testing.F) {
	k := didtest.Key(f, 1)
	for i, p := range []Pulse{
		{Agent: k.DID(), Seq: 1, At: t0, Mode: "sleep"},
		{Agent: k.DID(), Seq: 7, Prev: "abc", At: t0, NextWake: t0.Add(time.Hour), Mode: "hourly_wake", Halted: true},
	} {
		doc, err := Sign(k, p)
		if err != nil {
			f.Fatal(i, err)
		}
		f.Add(doc)
	}
	f.Add([]byte(`{"v":1}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		p, err := Parse(doc)
		if err != nil {
			return
		}
		// Accepted means canonical: the document is its own JCS form.
		if c, err := canonical(mustWire(t, doc)); err != nil || !bytes.Equal(c, doc) {
			t.Fatalf("accepted a non-canonical document %s", doc)
		}
		q, err := Parse(doc)
		if err != nil || q.Seq != p.Seq || q.Agent != p.Agent || !q.At.Equal(p.At) {
			t.Fatalf("second parse %+v, %v; first %+v", q, err, p)
		}
	})
}
