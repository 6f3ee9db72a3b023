package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const scheduleVectorDir = "../testdata/vectors/atom/offline-delivery"

// checkScheduleKindPasses runs the offline-delivery vectors and checks that want
// vectors of kind ran, all passing.
func checkScheduleKindPasses(t *testing.T, kind string, want int) {
	t.Helper()
	rep, err := Run(scheduleVectorDir)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, o := range rep.Results {
		if o.Kind != kind {
			continue
		}
		ran++
		if o.Status != Pass {
			t.Errorf("%s %s: expected=%s got=%s (%s)", o.Status, o.ID, o.Expected, o.Got, o.Note)
		}
	}
	if ran != want {
		t.Errorf("ran %d %s vectors, want %d", ran, kind, want)
	}
}

type scheduleVectorChange struct {
	name   string
	file   string
	change func(v map[string]any)
}

// checkAlteredScheduleVectorsFail alters vectors so that the real code must disagree with
// them, and checks each then fails.
func checkAlteredScheduleVectorsFail(t *testing.T, tests []scheduleVectorChange) {
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(scheduleVectorDir, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			var v map[string]any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			tt.change(v)
			dir := t.TempDir()
			b, _ = json.Marshal(v)
			if err := os.WriteFile(filepath.Join(dir, tt.file), b, 0o600); err != nil {
				t.Fatal(err)
			}
			rep, err := Run(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Results) != 1 || rep.Results[0].Status != Fail {
				t.Fatalf("altered %s: results %+v, want one FAIL", tt.file, rep.Results)
			}
			if o := rep.Results[0]; strings.Contains(o.Note, "cannot read vector") {
				t.Errorf("altered %s failed as unreadable (%s), want a disagreement", tt.file, o.Note)
			}
		})
	}
}

func expectOf(v map[string]any) map[string]any { return v["expect"].(map[string]any) }

// TestAsleepQueueKind runs the asleep-queue vectors through store/queue.
func TestAsleepQueueKind(t *testing.T) { checkScheduleKindPasses(t, "asleep-queue", 6) }

func TestAsleepQueueKindFails(t *testing.T) {
	checkAlteredScheduleVectorsFail(t, []scheduleVectorChange{
		{"messages cap not reached", "od-040.json", func(v map[string]any) { v["caps"] = map[string]any{"maxMessages": 2} }},
		{"wrong bound", "od-041.json", func(v map[string]any) { expectOf(v)["rejectKind"] = "messages" }},
		{"peer cap not reached", "od-042.json", func(v map[string]any) { v["caps"] = map[string]any{"maxPendingPerPeer": 2} }},
		{"not yet expired", "od-043.json", func(v map[string]any) { v["advancedNow"] = "2026-01-15T10:00:01.000Z" }},
		{"reopen loses nothing", "od-031.json", func(v map[string]any) { expectOf(v)["listCountAfterReopen"] = 0 }},
		{"count", "od-030.json", func(v map[string]any) { expectOf(v)["listCount"] = 2 }},
	})
}
