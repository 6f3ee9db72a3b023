package main

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/torpor-dev/torpor/internal/safetext"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// updateColumns are the columns of fleet --updates: 100 characters with
// the spaces between them. WHAT is "agent" for the agent's build, "os"
// for the operating-system bundles rauc installs (a second row, only for
// a device that reports them).
var updateColumns = []column{
	{"NAME", 12}, {"DID", 11}, {"WHAT", 5}, {"VERSION", 10}, {"LAST CHECK", 26}, {"LAST INSTALL", 31},
}

// printUpdates prints the summary line and each device's version and the
// outcomes of its last update check and install (docs/updates.md), as
// its signed status says them; --json or the console has them whole.
func printUpdates(w io.Writer, f operatorapi.Fleet) {
	w = safetext.Writer(w)
	fmt.Fprintln(w, summaryLine(f.Summary))
	head := make([]string, len(updateColumns))
	for i, c := range updateColumns {
		head[i] = c.title
	}
	fmt.Fprintln(w, row(updateColumns, head))
	for _, d := range f.Devices {
		name := d.Name
		if d.UpdateTrouble() {
			name = "~" + name
		}
		fmt.Fprintln(w, row(updateColumns, []string{name, shortID(d.DID), "agent", or(d.Version, "?"), checkCell(d.Update), installCell(d.Install, f.Now)}))
		if d.OSUpdate != nil || d.OSInstall != nil {
			v := "-"
			if d.OSInstall != nil && d.OSInstall.Result == wire.InstallInstalled {
				v = d.OSInstall.Version
			}
			fmt.Fprintln(w, row(updateColumns, []string{"", "", "os", v, checkCell(d.OSUpdate), installCell(d.OSInstall, f.Now)}))
		}
	}
	if len(f.Devices) == 0 {
		fmt.Fprintln(w, "(no device)")
	}
}

// checkCell is an update check's outcome: "refused: freeze", "verified
// v3", "up-to-date"; "-" when the device reported none.
func checkCell(u *wire.StatusUpdate) string {
	switch {
	case u == nil:
		return "-"
	case u.Reason != "":
		return u.Outcome + ": " + u.Reason
	case u.Version != 0:
		return fmt.Sprintf("%s v%d", u.Outcome, u.Version)
	}
	return u.Outcome
}

// installCell is an install's outcome: "rolled-back 1.4.0 3h ago: why".
func installCell(in *wire.StatusInstall, now time.Time) string {
	if in == nil {
		return "-"
	}
	s := in.Result + " " + in.Version
	if !in.At.IsZero() {
		s += " " + shortDur(now.Sub(in.At)) + " ago"
	}
	if in.Reason != "" {
		s += ": " + in.Reason
	}
	return s
}

// printUpdateTrouble lists the devices whose last update went wrong
// (marked "~" in the table), with what went wrong.
func printUpdateTrouble(w io.Writer, ds []operatorapi.Device) {
	head := false
	for _, d := range ds {
		if !d.UpdateTrouble() {
			continue
		}
		if !head {
			fmt.Fprintln(w, "~ last update went wrong (torporctl fleet --updates lists every device's):")
			head = true
		}
		var what []string
		if in := d.Install; in != nil && in.Result == wire.InstallRolledBack {
			what = append(what, "install of "+in.Version+" rolled back")
		}
		if u := d.Update; u != nil && u.Outcome == wire.UpdateRefused {
			what = append(what, "check refused ("+u.Reason+")")
		}
		if in := d.OSInstall; in != nil && in.Result == wire.InstallFailed {
			what = append(what, "OS bundle "+in.Version+" failed")
		}
		if u := d.OSUpdate; u != nil && u.Outcome == wire.UpdateRefused {
			what = append(what, "OS check refused ("+u.Reason+")")
		}
		fmt.Fprintf(w, "  %s %s, version %s:\n", d.DID, cut(d.Name, 16), cut(or(d.Version, "?"), 12))
		fmt.Fprintln(w, cut("    "+strings.Join(what, ", "), 100))
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// column is a table's column: its title and width in characters.
type column struct {
	title string
	width int
}

// row pads or cuts each cell to its column's width.
func row(cols []column, cells []string) string {
	var b strings.Builder
	for i, c := range cols {
		v := cut(safetext.Show(cells[i]), c.width)
		b.WriteString(v)
		if i < len(cols)-1 {
			b.WriteString(strings.Repeat(" ", c.width-utf8.RuneCountInString(v)+1))
		}
	}
	return b.String()
}
