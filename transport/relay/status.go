package relay

import (
	"fmt"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/safetext"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/relay/console"
)

// checkStatus verifies a device's signed status (link wire.State.Status):
// at most wire.MaxStatus bytes, and what ParseStatus checks. The relay
// keeps it verbatim, so that whoever reads it later (the fleet console of
// any relay sharing the store) can check the signature again.
func checkStatus(b []byte, agent did.DID) error {
	if len(b) > wire.MaxStatus {
		return fmt.Errorf("status of %d bytes exceeds %d", len(b), wire.MaxStatus)
	}
	st, err := ParseStatus(b, agent)
	if err != nil {
		return err
	}
	if err := safetext.Check("status: version", st.Version); err != nil {
		return err
	}
	if st.Health != nil && st.Health.WiFi != nil {
		if err := safetext.Check("status: WiFi interface", st.Health.WiFi.Interface); err != nil {
			return err
		}
	}
	if err := checkUpdateText(st); err != nil {
		return err
	}
	return safetext.Check("status: board", st.Board)
}

// checkUpdateText refuses an update or install outcome whose text carries
// a control or invisible character: the console and torporctl show it,
// and the rollout keeps the reason (the agent shows such characters as
// code points before it signs, runtime/update.Status).
func checkUpdateText(st wire.Status) error {
	var texts [][2]string
	if u := st.Update; u != nil {
		texts = append(texts, [2]string{"status: update target", u.Target}, [2]string{"status: update reason", u.Reason},
			[2]string{"status: update detail", u.Detail})
	}
	if in := st.Install; in != nil {
		texts = append(texts, [2]string{"status: install version", in.Version}, [2]string{"status: install from", in.From},
			[2]string{"status: install reason", in.Reason})
	}
	if u := st.OSUpdate; u != nil {
		texts = append(texts, [2]string{"status: osUpdate target", u.Target}, [2]string{"status: osUpdate reason", u.Reason},
			[2]string{"status: osUpdate detail", u.Detail})
	}
	if in := st.OSInstall; in != nil {
		texts = append(texts, [2]string{"status: osInstall version", in.Version}, [2]string{"status: osInstall from", in.From},
			[2]string{"status: osInstall reason", in.Reason})
	}
	for _, t := range texts {
		if err := safetext.Check(t[0], t[1]); err != nil {
			return err
		}
	}
	return nil
}

// checkCardName refuses a card whose name carries a control or invisible
// formatting character (package safetext): a name that reads one way in
// the console and is another.
func checkCardName(raw []byte) error {
	c, err := a2a.ParseCard(raw)
	if err != nil {
		return err
	}
	return safetext.Check("card: name", c.Name)
}

// ParseStatus verifies a signed status of agent (console.VerifyStatus)
// and returns its payload.
func ParseStatus(b []byte, agent did.DID) (wire.Status, error) { return console.VerifyStatus(b, agent) }
