package console

import (
	"strings"

	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// updateMark is the fleet row's mark of a device whose last update went
// wrong (operatorapi.Device.UpdateTrouble): Label is what the row shows,
// Title says it whole for the tooltip. Both are text for html/template,
// which escapes what the device wrote.
type updateMark struct {
	Label, Title string
}

// markOf is d's update mark, the zero mark when nothing went wrong.
func markOf(d operatorapi.Device) updateMark {
	var labels, titles []string
	add := func(label, title string) {
		labels = append(labels, label)
		titles = append(titles, title)
	}
	if in := d.Install; in != nil && in.Result == wire.InstallRolledBack {
		add("rolled back", "last install of "+in.Version+" rolled back"+reasonSuffix(in.Reason))
	}
	if u := d.Update; u != nil && u.Outcome == wire.UpdateRefused {
		add("update refused", "last update check refused"+reasonSuffix(u.Reason))
	}
	if in := d.OSInstall; in != nil && in.Result == wire.InstallFailed {
		add("OS install failed", "last OS bundle "+in.Version+" failed"+reasonSuffix(in.Reason))
	}
	if u := d.OSUpdate; u != nil && u.Outcome == wire.UpdateRefused {
		add("OS update refused", "last OS bundle check refused"+reasonSuffix(u.Reason))
	}
	return updateMark{Label: strings.Join(labels, ", "), Title: strings.Join(titles, "; ")}
}

func reasonSuffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}

// outcomeWord is an update check's or install's outcome as the device
// page says it, and whether it is flagged.
func outcomeWord(outcome string) (string, bool) {
	switch outcome {
	case wire.UpdateVerified:
		return "verified, ready to install", false
	case wire.UpdateHeld:
		return "held for the owner's confirmation", false
	case wire.UpdateWaiting:
		return "verified, waiting for the running build's trial to end", false
	case wire.UpdateRefused:
		return "refused", true
	case wire.InstallRolledBack:
		return "rolled back", true
	case wire.InstallFailed:
		return "failed", true
	}
	return outcome, false // up-to-date, installed, or one a newer agent sends
}
