//go:build integration

package updates

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

// killRounds is how many switches TestSIGKILLDuringSwitch cuts.
const killRounds = 20

// TestSIGKILLDuringSwitch: each round installs the build not running (v1
// and v2 in turn) and SIGKILLs the install at a random moment, then starts
// the unit and SIGKILLs its whole process group at a random moment (the
// launcher counting the trial's start, the new build starting, linking,
// draining, confirming), as a power cut would stop them. After each round
// the next start runs exactly the old or exactly the new version, never
// anything else, and no trial is left open. The seeds are printed.
func TestSIGKILLDuringSwitch(t *testing.T) {
	d := newDevice(t)
	p, running, _, _ := d.boot()
	p.stop(t)
	ends := map[string]int{}
	for i := range killRounds {
		seed := uint64(time.Now().UnixNano())
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		next := map[string]string{v1: v2, v2: v1}[running]
		installAfter := time.Duration(rng.Int64N(int64(120 * time.Millisecond)))
		point, after := killPoints[rng.IntN(len(killPoints))], time.Duration(rng.Int64N(int64(100*time.Millisecond)))
		t.Logf("round %d: seed %d: %s to %s, install killed after %v, the start %v after %s", i, seed, running, next, installAfter, after, point.name)
		d.killedInstall(next, installAfter)
		cut := []string{d.where()}
		k := d.start()
		if point.re == nil || k.waitUpTo(point.re, 5*time.Second) {
			sleepOrEnd(k, after)
		}
		k.kill()
		cut = append(cut, d.where())
		p, v, slot, _ := d.boot()
		if v != running && v != next {
			t.Fatalf("round %d (seed %d): runs %s from slot %q; want %s or %s", i, seed, v, slot, running, next)
		}
		// The launcher says "on trial" before the agent it starts says
		// "starting".
		if trialRE.MatchString(p.log()) && p.wait(t, installedRE) == nil {
			t.Fatalf("round %d (seed %d): the trial start did not confirm:\n%s", i, seed, p.log())
		}
		p.stop(t)
		st := d.state()
		if st.Trial != nil {
			t.Fatalf("round %d (seed %d): a trial is left open: %+v", i, seed, st.Trial)
		}
		if running = v1; st.Active != "" {
			running = st.ActiveVersion
		}
		if running != v && running != next {
			t.Fatalf("round %d (seed %d): ends on %s", i, seed, running)
		}
		ends[map[bool]string{true: "new", false: "old"}[running == next]]++
		t.Logf("round %d: after the install's kill %s; after the start's %s; runs %s", i, cut[0], cut[1], running)
	}
	t.Logf("%d rounds: %d ended on the new version, %d on the old", killRounds, ends["new"], ends["old"])
}

// killPoints are where TestSIGKILLDuringSwitch's cuts of a start are
// aimed, plus a random delay: the launcher starting (and counting the
// start), the launcher having started the build on trial, the build
// starting its agent, the build having confirmed.
var killPoints = []struct {
	name string
	re   *regexp.Regexp
}{{"the launcher's start", nil}, {`"update on trial"`, trialRE}, {`"torpor-agent starting"`, startingRE}, {`"update installed"`, installedRE}}

// killedInstall runs "slots install" of build and SIGKILLs it after d
// unless it ended before.
func (d *device) killedInstall(build string, after time.Duration) {
	d.t.Helper()
	args := append([]string{"slots", "install", "--build-version", build}, d.flags...)
	cmd := exec.Command(bin(d.t, v1), append(args, bin(d.t, build))...)
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(after):
		cmd.Process.Kill()
		<-done
	}
}

// sleepOrEnd waits d of real time (the moment of the cut) or until p
// ended; true when it ended.
func sleepOrEnd(p *proc, d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

// where says what the state file shows after a cut.
func (d *device) where() string {
	st := d.state()
	switch {
	case st.Trial != nil:
		return fmt.Sprintf("%s on trial, %d of %d starts", st.Trial.Version, st.Trial.Starts, st.Trial.MaxStarts)
	case st.Outcome != nil:
		return fmt.Sprintf("no trial, last outcome %s %s", st.Outcome.Result, st.Outcome.Version)
	}
	return "no trial"
}

// waitUpTo waits up to d of real time for a line matching re; false when
// none came (the point of the cut does not occur in this round).
func (p *proc) waitUpTo(re *regexp.Regexp, d time.Duration) bool {
	limit := time.After(d)
	for {
		p.mu.Lock()
		ok, changed := re.MatchString(p.out.String()), p.changed
		p.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-changed:
		case <-p.done:
			return re.MatchString(p.log())
		case <-limit:
			return false
		}
	}
}
