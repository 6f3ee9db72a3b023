package conformance

import (
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/wake"
)

func init() { Register("reachability-verdict", runReachability) }

// runReachability evaluates the profile's reachability table (Reachability
// Modes, Asleep Signal) with the schedule the relay uses: wake.Evaluate with
// the agent's window from wake.WindowFor(wakeSeed). A refusal that may be
// queued is the agent_asleep signal; its Retry-After is reported as
// retryAfterSec and checked against the vector's retryAfterSecMin. A vector
// that names no minimum expects no retry hint (sleep).
func runReachability(v *Vector) Result {
	var in struct {
		Config struct {
			Mode          string `json:"mode"`
			WakeSeed      string `json:"wakeSeed"`
			ForceAlwaysOn bool   `json:"forceAlwaysOn"`
		} `json:"config"`
		Now    time.Time `json:"now"`
		Expect struct {
			Accept           bool   `json:"accept"`
			Error            string `json:"error"`
			RetryAfterSecMin *int   `json:"retryAfterSecMin"`
		} `json:"expect"`
	}
	if err := v.Decode(&in); err != nil {
		return Broken(err)
	}
	mode, err := wake.ParseMode(in.Config.Mode)
	if err != nil {
		return Broken(err)
	}
	if in.Config.ForceAlwaysOn { // the reference's community hosts
		mode = wake.AlwaysOn
	}
	verdict := wake.Evaluate(mode, wake.WindowFor(in.Config.WakeSeed), in.Now, nil)

	expected := "accept"
	if !in.Expect.Accept {
		expected = "reject(" + in.Expect.Error + ")"
		if in.Expect.RetryAfterSecMin != nil {
			expected = fmt.Sprintf("reject(%s, retryAfterSec>=%d)", in.Expect.Error, *in.Expect.RetryAfterSecMin)
		}
	}
	got := "accept"
	switch {
	case verdict.Accept:
	case !verdict.Queue:
		got = "reject(refused, not queued)"
	case verdict.RetryAfter == 0:
		got = "reject(agent_asleep)"
	case in.Expect.RetryAfterSecMin != nil && verdict.RetryAfter >= *in.Expect.RetryAfterSecMin:
		// Show the bound the value satisfies so that the strings compare,
		// and the value itself in the note.
		got = fmt.Sprintf("reject(agent_asleep, retryAfterSec>=%d)", *in.Expect.RetryAfterSecMin)
	default:
		got = fmt.Sprintf("reject(agent_asleep, retryAfterSec=%d)", verdict.RetryAfter)
	}
	r := Compare(expected, got)
	if verdict.RetryAfter != 0 {
		r.Note = fmt.Sprintf("retryAfterSec=%d", verdict.RetryAfter)
	}
	return r
}
