package rollout

import (
	"fmt"
	"slices"
	"time"
)

// cohort is the devices waking at one second of the hour.
type cohort struct {
	at      int // second of the hour, minute*60 + second
	devices []string
}

// cohorts groups devices by the second of the hour their window opens
// at, ordered by when they next wake after now (the cohort waking at now's
// second first), devices sorted within.
func cohorts(devices []Device, now time.Time) ([]cohort, error) {
	by := map[int][]string{}
	seen := map[string]bool{}
	for _, d := range devices {
		if d.ID == "" || seen[d.ID] {
			return nil, fmt.Errorf("%w: device %q is empty or listed twice", ErrBadSpec, d.ID)
		}
		if d.Minute < 0 || d.Minute > 59 || d.Second < 0 || d.Second > 59 {
			return nil, fmt.Errorf("%w: device %s wakes at minute %d second %d", ErrBadSpec, d.ID, d.Minute, d.Second)
		}
		seen[d.ID] = true
		at := d.Minute*60 + d.Second
		by[at] = append(by[at], d.ID)
	}
	start := now.UTC().Minute()*60 + now.UTC().Second()
	var out []cohort
	for at, ids := range by {
		slices.Sort(ids)
		out = append(out, cohort{at: at, devices: ids})
	}
	wait := func(c cohort) int { return (c.at - start + 3600) % 3600 }
	slices.SortFunc(out, func(a, b cohort) int { return wait(a) - wait(b) })
	return out, nil
}

// planWaves cuts the cohorts into waves: wave i takes whole cohorts until
// the devices of waves 0..i are at least percents[i] % of all, rounded
// up. A wave that would be empty (the cohorts before it already reach
// its share) is merged into the one before, which takes its percent.
func planWaves(percents []int, devices []Device, now time.Time) ([]Wave, error) {
	cs, err := cohorts(devices, now)
	if err != nil {
		return nil, err
	}
	var waves []Wave
	taken, next := 0, 0
	for _, p := range percents {
		want := (len(devices)*p + 99) / 100
		w := Wave{Percent: p}
		for ; next < len(cs) && taken < want; next++ {
			w.Cohorts = append(w.Cohorts, cs[next].at)
			w.Devices = append(w.Devices, cs[next].devices...)
			taken += len(cs[next].devices)
		}
		if len(w.Devices) > 0 {
			waves = append(waves, w)
		} else if len(waves) > 0 {
			waves[len(waves)-1].Percent = p
		}
	}
	return waves, nil
}
