package conformance

import "testing"

// TestReachabilityKind runs the reachability-verdict vectors through the
// relay's handler and stores, with the device linked.
func TestReachabilityKind(t *testing.T) { checkScheduleKindPasses(t, "reachability-verdict", 5) }

func TestReachabilityKindFails(t *testing.T) {
	checkAlteredScheduleVectorsFail(t, []scheduleVectorChange{
		{"hourly_wake outside accepted", "od-005.json", func(v map[string]any) { v["now"] = "2026-01-15T12:41:00.000Z" }},
		{"hourly_wake inside refused", "od-004.json", func(v map[string]any) { v["now"] = "2026-01-15T12:15:59.000Z" }},
		{"sleep with a retry hint", "od-003.json", func(v map[string]any) { expectOf(v)["retryAfterSecMin"] = 1 }},
		{"sleep accepted", "od-003.json", func(v map[string]any) { expectOf(v)["accept"] = true }},
		// 12:41 → the window 13:11:00-13:16:00: at most 2099 s.
		{"retry at the window's end", "od-004.json", func(v map[string]any) { expectOf(v)["retryAfterSecMin"] = 2100 }},
		{"session refused", "od-002.json", func(v map[string]any) { expectOf(v)["accept"] = false }},
		{"always_on asleep", "od-001.json", func(v map[string]any) {
			e := expectOf(v)
			e["accept"], e["error"] = false, "agent_asleep"
		}},
	})
}
