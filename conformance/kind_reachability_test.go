package conformance

import "testing"

// TestReachabilityKind runs the reachability-verdict vectors through wake.
func TestReachabilityKind(t *testing.T) { checkScheduleKindPasses(t, "reachability-verdict", 5) }

func TestReachabilityKindFails(t *testing.T) {
	checkAlteredScheduleVectorsFail(t, []scheduleVectorChange{
		{"hourly_wake outside accepted", "od-005.json", func(v map[string]any) { v["now"] = "2026-01-15T12:41:00.000Z" }},
		{"hourly_wake inside refused", "od-004.json", func(v map[string]any) { v["now"] = "2026-01-15T12:15:59.000Z" }},
		{"sleep with a retry hint", "od-003.json", func(v map[string]any) { expectOf(v)["retryAfterSecMin"] = 1 }},
		{"retry later than possible", "od-004.json", func(v map[string]any) { expectOf(v)["retryAfterSecMin"] = 2200 }},
		{"session refused", "od-002.json", func(v map[string]any) { expectOf(v)["accept"] = false }},
	})
}
