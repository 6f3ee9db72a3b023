package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/wake"
)

func init() { Register("reachability-verdict", runReachability) }

// reachabilityCaller is the vectors' caller (manifest.json identities:
// Alice), and reachabilityBody the message/send the reference's asleep
// vectors post (od-010).
const (
	reachabilityCaller = "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"
	reachabilityBody   = `{"jsonrpc":"2.0","method":"message/send","params":{"message":{"parts":[]}}}`
)

// runReachability runs a reachability-verdict vector through the real
// relay, as runAsleepHTTP does: its handler, bbolt queue and state files,
// and an in-process device linked over the real link that publishes the
// vector's mode and the window of wakeSeed and answers live requests. At
// the vector's now the vectors' caller posts a message/send. The device
// answering is accept; a 503 agent_asleep whose request the queue now holds
// is the asleep signal, and its Retry-After (the header, equal to
// retryAfterSec) is checked against the vector's retryAfterSecMin; a 503
// that stored nothing is a refusal. A vector that names no minimum expects
// no retry hint (sleep).
func runReachability(v *Vector) Result {
	var in struct {
		Config deviceConfig `json:"config"`
		Now    time.Time    `json:"now"`
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
	dir, err := v.TempDir()
	if err != nil {
		return Broken(err)
	}
	h, err := startRelay(dir, in.Now, queuebounds.Default())
	if err != nil {
		return Result{Status: Fail, Got: "error", Note: err.Error()}
	}
	defer h.close()
	if err := h.linkDevice(string(mode), in.Config.WakeSeed); err != nil {
		return Result{Status: Fail, Got: "error", Note: err.Error()}
	}
	a, err := h.reach()
	if err != nil {
		return Result{Status: Fail, Got: "error", Note: err.Error()}
	}

	expected := "accept"
	if !in.Expect.Accept {
		expected = "reject(" + in.Expect.Error + ")"
		if in.Expect.RetryAfterSecMin != nil {
			expected = fmt.Sprintf("reject(%s, retryAfterSec>=%d)", in.Expect.Error, *in.Expect.RetryAfterSecMin)
		}
	}
	r := Compare(expected, a.verdict(in.Expect.RetryAfterSecMin))
	r.Note = a.String()
	return r
}

// reachAnswer is what the relay did with one request.
type reachAnswer struct {
	status   int
	live     bool   // the device answered it
	enqueued bool   // the queue holds one more record
	token    string // the profile's error token
	queued   any    // the answer's queued member
	retry    int    // Retry-After, 0 for none
	retrySec any    // the answer's retryAfterSec member
}

// verdict renders a as a reachability verdict string; min is the vector's
// retryAfterSecMin, which a Retry-After that satisfies it is shown as so
// that the strings compare.
func (a reachAnswer) verdict(min *int) string {
	switch {
	case a.live && a.status == http.StatusOK:
		return "accept"
	case a.live, a.status != http.StatusServiceUnavailable:
		return a.String()
	case a.token != "agent_asleep" || a.queued != true || !a.enqueued:
		return fmt.Sprintf("reject(refused, %s)", a)
	case (a.retry != 0 || a.retrySec != nil) && a.retrySec != float64(a.retry):
		return fmt.Sprintf("reject(agent_asleep, %s)", a)
	case a.retry == 0:
		return "reject(agent_asleep)"
	case min != nil && a.retry >= *min:
		return fmt.Sprintf("reject(agent_asleep, retryAfterSec>=%d)", *min)
	}
	return fmt.Sprintf("reject(agent_asleep, retryAfterSec=%d)", a.retry)
}

func (a reachAnswer) String() string {
	return fmt.Sprintf("status=%d live=%v enqueued=%v error=%s queued=%v Retry-After=%d retryAfterSec=%v", a.status, a.live, a.enqueued, a.token, a.queued, a.retry, a.retrySec)
}

// reach posts reachabilityBody from reachabilityCaller to the agent.
func (h *relayHarness) reach() (reachAnswer, error) {
	ctx, agent := context.Background(), h.agent.DID().String()
	caller, err := callerKey(reachabilityCaller)
	if err != nil {
		return reachAnswer{}, err
	}
	tok, err := bearer.Issue(caller, h.srv.URL, h.clk.Now(), 0)
	if err != nil {
		return reachAnswer{}, err
	}
	before, err := h.q.Stats(ctx, agent, h.clk.Now())
	if err != nil {
		return reachAnswer{}, err
	}
	liveBefore := h.live.Load()
	req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/a/"+agent+a2a.JSONRPCPath, strings.NewReader(reachabilityBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", bearer.Authorization(tok))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reachAnswer{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	after, err := h.q.Stats(ctx, agent, h.clk.Now())
	if err != nil {
		return reachAnswer{}, err
	}
	var ans map[string]any
	json.Unmarshal(body, &ans)
	a := reachAnswer{
		status: resp.StatusCode, live: h.live.Load() > liveBefore, enqueued: after.Messages > before.Messages,
		token: profileToken(ans), queued: ans["queued"], retrySec: ans["retryAfterSec"],
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		if a.retry, err = strconv.Atoi(ra); err != nil || a.retry < 1 {
			return a, fmt.Errorf("Retry-After %q is not a positive whole number of seconds", ra)
		}
	}
	return a, nil
}
