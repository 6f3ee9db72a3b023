package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/torpor-dev/torpor/transport/mqtt/envelope"
)

// lostHelp is what torporctl device lost prints under its listing.
const lostHelp = `  The application may or may not have received these objects: a kill cut
  their hand-off off with at-most-once notify, and the device does not
  hand them over again. Ask their issuers to resend what matters, or run
  the handler with "notify": "at-least-once" (docs/agent.md). The device
  keeps listing them for its ledger's retention (30 days after it found
  them).
`

// lostStatus is the device status a lost operation's output carries: the
// reply's, or the retained one (a sleeping device, or no reply yet).
func lostStatus(o commandOutput) (*envelope.Status, string) {
	if o.Reply != nil {
		var res struct {
			Status envelope.Status `json:"status"`
		}
		if json.Unmarshal(o.Reply.Result, &res) == nil {
			return &res.Status, "as the device answered"
		}
	}
	if o.Status != nil {
		return o.Status, fmt.Sprintf("from its retained status, signed %s ago", (time.Duration(*o.StatusAgeMs) * time.Millisecond).Round(time.Second))
	}
	return nil, ""
}

// printLost prints the possibly lost hand-offs of torporctl device lost.
func printLost(w io.Writer, o commandOutput) {
	st, from := lostStatus(o)
	if st == nil || o.RefusedBy != "" {
		printCommand(w, o)
		return
	}
	fmt.Fprintf(w, "lost %s (%s), %s\n", o.Name, shortDID(o.Device), from)
	if st.Lost == 0 {
		fmt.Fprintf(w, "  no hand-off possibly lost\n")
		return
	}
	fmt.Fprintf(w, "  %d hand-offs possibly lost", st.Lost)
	if len(st.LostHandOffs) < st.Lost {
		fmt.Fprintf(w, ", the newest %d listed", len(st.LostHandOffs))
	}
	fmt.Fprintf(w, ":\n")
	for _, l := range st.LostHandOffs {
		fmt.Fprintf(w, "  %s  seq %d  object %s  purpose %s  issuer %s\n",
			l.RecordedAt.Format(time.RFC3339), l.Seq, l.ObjectID, l.Purpose, l.Issuer)
	}
	fmt.Fprint(w, lostHelp)
}
