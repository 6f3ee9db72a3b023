package wakemeter

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// Rounds returns how many rounds a benchmark that compares two builds
// runs, one run of each build per round: TORPOR_EMPTYWAKE_ROUNDS, or def
// when it is unset. On shared cores the load drifts over the minutes a
// run takes; rounds whose order alternates (RoundOrder) spread the drift
// over both builds.
func Rounds(def int) (int, error) {
	v := os.Getenv("TORPOR_EMPTYWAKE_ROUNDS")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("TORPOR_EMPTYWAKE_ROUNDS=%q: want a whole number of rounds, at least 1", v)
	}
	return n, nil
}

// RoundOrder returns the builds of round r in the order they run: base
// then tree in the first round and every other one after it, tree then
// base in the others (base, tree, tree, base, base, tree, …), so that a
// load that drifts one way over a run favours neither build.
func RoundOrder(r int) []string {
	if r%2 == 1 {
		return []string{"tree", "base"}
	}
	return []string{"base", "tree"}
}

// RoundSuffix is what the names of round r's runs end with: nothing in
// the first round, "-2" in the second, and so on.
func RoundSuffix(r int) string {
	if r == 0 {
		return ""
	}
	return "-" + strconv.Itoa(r+1)
}

// ReportRatios reports tree's CPU per wake over base's, each summed over
// every round so far (the ratio of the sums): wake-cpu-ratio inside the
// wake, cpu-ratio the whole cycle. It reports nothing before both builds
// measured some CPU.
func ReportRatios(b Reporter, base, tree Wakes) {
	if base.N == 0 || tree.N == 0 || base.InWake == 0 || base.Cycle.User+base.Cycle.Sys == 0 {
		return
	}
	b.ReportMetric(perWake(tree.InWake, tree.N)/perWake(base.InWake, base.N), "wake-cpu-ratio")
	b.ReportMetric(perWake(tree.Cycle.User+tree.Cycle.Sys, tree.N)/perWake(base.Cycle.User+base.Cycle.Sys, base.N), "cpu-ratio")
}

// perWake is d per wake, in milliseconds.
func perWake(d time.Duration, n int) float64 { return ms(d) / float64(n) }
