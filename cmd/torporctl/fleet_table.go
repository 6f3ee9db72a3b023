package main

import (
	"fmt"
	"github.com/torpor-dev/torpor/internal/safetext"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"io"
	"time"
	"unicode/utf8"
)

// fleetColumns are the table's columns and widths: 99 characters with the
// spaces between them, so that it fits a terminal of 100 columns. NEXT
// holds "overdue by 14m".
var fleetColumns = []column{
	{"STATE", 8}, {"NAME", 12}, {"DID", 11}, {"MODE", 7}, {"NEXT", 14}, {"LAST WAKE", 11}, {"PULSE", 9}, {"QUEUE", 10}, {"KP", 4}, {"HELD", 4},
}

// printFleet prints the summary line and one row per device, each cell
// with what could reorder or hide text neutralised (package safetext).
func printFleet(w io.Writer, f operatorapi.Fleet) {
	w = safetext.Writer(w)
	fmt.Fprintln(w, summaryLine(f.Summary))
	head := make([]string, len(fleetColumns))
	for i, c := range fleetColumns {
		head[i] = c.title
	}
	fmt.Fprintln(w, fleetRow(head))
	for _, d := range f.Devices {
		fmt.Fprintln(w, fleetRow(deviceCells(d, f.Now)))
	}
	if len(f.Devices) == 0 {
		fmt.Fprintln(w, "(no device)")
	}
	printAwaiting(w, f.Devices)
	printUpdateTrouble(w, f.Devices)
}

// summaryLine is the line above the tables.
func summaryLine(s operatorapi.Summary) string {
	line := fmt.Sprintf("%d devices · %d awake · %d asleep · %d offline · %d overdue · %d halted · %d held · %d queues >80%%",
		s.Devices, s.Awake, s.Asleep, s.Offline, s.Overdue, s.Halted, s.WithHeld, s.QueuesAbove)
	if s.AwaitingAdmission > 0 {
		line += fmt.Sprintf(" · %d awaiting admission", s.AwaitingAdmission)
	}
	return line
}

// printAwaiting lists the devices awaiting admission (marked "?"), with
// the command that admits one.
func printAwaiting(w io.Writer, ds []operatorapi.Device) {
	head := false
	for _, d := range ds {
		if !d.AwaitingAdmission {
			continue
		}
		if !head {
			fmt.Fprintln(w, "? awaiting admission; admit one with: torporctl device admit DID")
			head = true
		}
		fmt.Fprintf(w, "  %s %s\n", d.DID, cut(d.Name, 20))
	}
}

// cut shortens s to n runes, the last one "…".
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// deviceCells are d's cells, in fleetColumns' order.
func deviceCells(d operatorapi.Device, now time.Time) []string {
	name := d.Name
	if d.DuplicateName {
		name = "*" + name // another device has this name
	}
	if d.Halted && d.State != operatorapi.StateHalted {
		name = "!" + name
	}
	if d.AwaitingAdmission {
		name = "?" + name // on probation until admitted
	}
	if d.UpdateTrouble() {
		name = "~" + name // its last install rolled back, or a check was refused
	}
	next := "-"
	switch {
	case d.NextWindow != nil:
		next = relDur(time.Duration(d.NextWindow.In) * time.Second)
	case d.Expected != nil && d.Expected.Before(now):
		next = "overdue by " + shortDur(now.Sub(*d.Expected))
	case d.Expected != nil:
		next = "pulse " + shortDur(d.Expected.Sub(now))
	}
	last := "-"
	if d.LastWake != nil {
		last = shortDur(now.Sub(d.LastWake.At)) + " " + d.LastWake.Reason
	}
	pulse := "-"
	if p := d.Pulse; p != nil && p.Verified {
		pulse = fmt.Sprintf("#%d %s", p.Seq, shortDur(time.Duration(p.Age)*time.Second))
	} else if p != nil {
		pulse = "INVALID"
	}
	kp := fmt.Sprint(d.KeyPackages.Left)
	if d.KeyPackages.LastResortInUse {
		kp = "LR"
	}
	return []string{d.State, name, shortID(d.DID), shortMode(d.Mode), next, last, pulse,
		fmt.Sprintf("%d %.0f%%", d.Queue.Messages, d.Queue.Share*100), kp, fmt.Sprint(d.HeldCount)}
}

// fleetRow pads or cuts each cell to its column's width.
func fleetRow(cells []string) string { return row(fleetColumns, cells) }

// shortID is a did:key's last characters, enough to tell devices apart
// (the console and --json have the whole DID).
func shortID(id string) string {
	if len(id) <= 11 {
		return id
	}
	return "…" + id[len(id)-10:]
}

func shortMode(m string) string {
	switch m {
	case "always_on":
		return "always"
	case "hourly_wake":
		return "hourly"
	}
	return m
}

// relDur is "in 14m" for a time to come, "3m ago" for one past.
func relDur(d time.Duration) string {
	if d < 0 {
		return shortDur(-d) + " ago"
	}
	return "in " + shortDur(d)
}

// shortDur is d in one unit: "45s", "14m", "3h", "2d"; "-" prefixes a
// time past.
func shortDur(d time.Duration) string {
	if d < 0 {
		return "-" + shortDur(-d)
	}
	switch {
	case d < 90*time.Second:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < 90*time.Minute:
		return fmt.Sprintf("%dm", int((d+30*time.Second)/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int((d+30*time.Minute)/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}
