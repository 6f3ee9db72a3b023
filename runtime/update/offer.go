package update

import (
	"strconv"

	"github.com/torpor-dev/torpor/runtime/update/tuf"
)

// Offer is the target a relay's rollout offers the device (wire.Offer,
// docs/updates.md "Rollouts"). It only names a target: the device takes
// it from the targets metadata its owner's keys signed, and only when the
// signed target is the one offered, so a relay cannot make a device
// install anything else.
type Offer struct {
	// Rollout is the id of the rollout that offers it.
	Rollout string
	// Target is the TUF target path; Version its custom.torpor.version in
	// decimal; SHA256 its SHA-256 in hex ("": not compared).
	Target, Version, SHA256 string
}

// chooseOffered returns the offered target of the signed targets (TUF
// specification Section 5.7.1: the target's info comes from the trusted
// targets metadata, never from the offer), or why it is not installed: a
// target the owner did not sign, another version or SHA-256 than offered
// (Offered), the wrong hardware, an older version than the running one
// (Rollback). The offered version already running is up to date.
func (c *Client) chooseOffered(targets *tuf.Metadata[tuf.Targets], o *Offer) (*tuf.TargetFile, Custom, Result, *Refusal) {
	res := Result{Target: o.Target, Rollout: o.Rollout}
	t, ok := targets.Signed.Targets[o.Target]
	if !ok {
		return nil, Custom{}, res, refuse(Offered, nil, "rollout %s offers %s, which targets version %d the owner signed does not list",
			o.Rollout, o.Target, targets.Signed.Version)
	}
	cu, err := CustomOf(t)
	if err != nil {
		return nil, cu, res, refuse(Invalid, err, "targets version %d", targets.Signed.Version)
	}
	res.Custom = cu
	signed := strconv.FormatUint(cu.Version, 10)
	sum := ""
	if h, ok := t.Hashes["sha256"]; ok {
		sum = h.String()
	}
	d := c.cfg.Device
	switch {
	case o.Version != signed:
		return nil, cu, res, refuse(Offered, nil, "rollout %s offers %s as version %q; the owner signed version %s", o.Rollout, o.Target, o.Version, signed)
	case o.SHA256 != "" && o.SHA256 != sum:
		return nil, cu, res, refuse(Offered, nil, "rollout %s offers %s with SHA-256 %s; the owner signed %s", o.Rollout, o.Target, o.SHA256, sum)
	case !cu.Fits(d):
		return nil, cu, res, refuse(Hardware, nil, "the offered %s is for %s, %s/%s, not board %s, %s/%s", o.Target,
			orAny(cu.Board), cu.GOARCH, cu.GOARM, orAny(d.Board), d.GOARCH, d.GOARM)
	case cu.Version < c.cfg.Installed:
		return nil, cu, res, refuse(Rollback, nil, "the offered %s is version %d, older than the installed %d", o.Target, cu.Version, c.cfg.Installed)
	case cu.Version == c.cfg.Installed:
		res.UpToDate = true
		return nil, cu, res, nil
	}
	return t, cu, res, nil
}
