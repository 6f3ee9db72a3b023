package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestDequeueVectorsPass(t *testing.T) {
	checkScheduleKindPasses(t, "asleep-dequeue", 5)
}

// dequeueDir writes vectors derived from od-050 (its body, wakeNow and
// purposes) into a directory with the offline-delivery manifest.
func dequeueDir(t *testing.T, vectors map[string]map[string]any) string {
	t.Helper()
	manifest, err := os.ReadFile(filepath.Join(scheduleVectorDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"manifest.json": string(manifest)}
	for name, v := range vectors {
		files[name] = jsonString(t, v)
	}
	return writeVectors(t, files)
}

func fromOD050(t *testing.T, id, kind string, extra map[string]any) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(scheduleVectorDir, "od-050.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	v["id"], v["kind"] = id, kind
	delete(v, "expect")
	for k, x := range extra {
		v[k] = x
	}
	return v
}

// TestDequeueSequenceAndRestart runs the shapes of the reference's od-053
// (asleep-dequeue-sequence) and od-060 (asleep-dequeue-restart), which the
// vector snapshot in testdata predates, over od-050's object.
func TestDequeueSequenceAndRestart(t *testing.T) {
	dir := dequeueDir(t, map[string]map[string]any{
		"od-053.json": fromOD050(t, "od-053", "asleep-dequeue-sequence", map[string]any{
			"steps":  []string{"dequeue-accept", "re-enqueue", "dequeue-reject"},
			"expect": map[string]any{"firstAcceptedMin": 1, "secondRejectedMin": 1, "queueEmpty": true},
		}),
		"od-060.json": fromOD050(t, "od-060", "asleep-dequeue-restart", map[string]any{
			"expect": map[string]any{"firstAcceptedMin": 1, "secondRejectedMin": 1},
		}),
	})
	rep, err := Run(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 {
		t.Fatalf("ran %d vectors, want 2", len(rep.Results))
	}
	for _, o := range rep.Results {
		if o.Status != Pass {
			t.Errorf("%s %s: expected=%s got=%s (%s)", o.Status, o.ID, o.Expected, o.Got, o.Note)
		}
	}
}

// TestDequeueVectorsCanFail alters expectations the real pipeline cannot
// meet, so a passing run means something.
func TestDequeueVectorsCanFail(t *testing.T) {
	tests := []struct {
		name string
		v    map[string]any
	}{
		{"valid object rejected", fromOD050(t, "x-1", "asleep-dequeue", map[string]any{
			"expect": map[string]any{"rejectedMin": 1}})},
		{"purpose not permitted", fromOD050(t, "x-2", "asleep-dequeue", map[string]any{
			"permittedPurposes": []string{"comms:receipt"},
			"expect":            map[string]any{"acceptedMin": 1}})},
		{"expired at dequeue", fromOD050(t, "x-3", "asleep-dequeue", map[string]any{
			"wakeNow": "2026-01-15T15:00:00.000Z",
			"expect":  map[string]any{"acceptedMin": 1}})},
		{"replay accepted", fromOD050(t, "x-4", "asleep-dequeue-sequence", map[string]any{
			"steps":  []string{"dequeue-accept", "re-enqueue", "dequeue-accept"},
			"expect": map[string]any{"firstAcceptedMin": 2}})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Run(dequeueDir(t, map[string]map[string]any{"v.json": tt.v}))
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 1 || rep.Results[0].Status != Fail {
				t.Fatalf("altered vector: %+v, want FAIL", rep.Results)
			}
		})
	}
}
