package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/torpor-dev/torpor/boards"
)

func init() {
	register(&subcommand{
		name:  "boards",
		args:  "[NAME]",
		short: "List the board profiles (GOARCH/GOARM, wake methods, RTC, GPIO, data dir, power), or show one.",
		run:   runBoards,
	})
}

// runBoards prints a table of every profile, or all of one profile's
// fields when NAME is given or --detect finds it. --json writes the same
// data as JSON.
func runBoards(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	asJSON := fs.Bool("json", false, "Write the profiles as JSON instead of a table.")
	detect := fs.Bool("detect", false, "Show the profile of the board this runs on, detected from the device-tree model.")
	model := fs.String("model", boards.ModelPath, "Read the device-tree model from this file with --detect.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 || (*detect && fs.NArg() == 1) {
		return errUsage
	}
	var one *boards.Board
	switch {
	case *detect:
		b, m, err := boards.Detect(*model)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "detected %q\n", m)
		one = &b
	case fs.NArg() == 1:
		b, err := boards.ByName(fs.Arg(0))
		if err != nil {
			return err
		}
		one = &b
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if one != nil {
			return enc.Encode(one)
		}
		return enc.Encode(boards.All())
	}
	if one != nil {
		return printBoard(e.stdout, *one)
	}
	return printBoards(e.stdout, boards.All())
}

func printBoards(w io.Writer, all []boards.Board) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTARGETS\tDEFAULT\tMETHODS\tRTC\tWAKE LINE\tTITLE")
	for _, b := range all {
		rtc := b.RTC
		if rtc == "" {
			rtc = "(HAT)"
		}
		line := "(configure)"
		if b.WakeLine != "" {
			line = fmt.Sprintf("%s/%d %s", b.GPIOChip, b.WakeLineNumber, b.WakeLine)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", b.Name, targets(b), b.Default, methods(b), rtc, line, b.Title)
	}
	return tw.Flush()
}

func printBoard(w io.Writer, b boards.Board) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	rtc := b.RTC
	if rtc == "" {
		rtc = "none on board (RTC HAT via rtc-ds1307)"
	}
	rows := [][2]string{
		{"name", b.Name}, {"title", b.Title}, {"models", strings.Join(b.Models, "; ")},
		{"targets", targets(b)}, {"methods", methods(b)}, {"default", string(b.Default)},
		{"sleep", b.Sleep}, {"rtc", rtc}, {"gpio chip", b.GPIOChip},
		{"wake line", wakeLine(b)},
		{"wake key", b.WakeKey}, {"data dir", b.DataDir}, {"power", b.Power},
		{"health", healthSources(b.Health)},
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

// healthSources says what the board reports as health in its status
// besides uptime and free flash, which every board reports.
func healthSources(h boards.Health) string {
	out := []string{"uptime", "free flash", "CPU temperature (" + cmp.Or(h.ThermalZone, "cpu-thermal or x86_pkg_temp") + ")"}
	if h.Supply != "" {
		out = append(out, "supply voltage ("+h.Supply+")")
	}
	if h.Throttled != "" {
		out = append(out, "under-voltage ("+h.Throttled+")")
	}
	return strings.Join(append(out, "WiFi ("+cmp.Or(h.WiFi, "the first interface")+")"), "; ")
}

func wakeLine(b boards.Board) string {
	if b.WakeLine == "" {
		return "none declared: configure the line the board's wake signal is wired to"
	}
	return fmt.Sprintf("%s (offset %d)", b.WakeLine, b.WakeLineNumber)
}

func targets(b boards.Board) string {
	s := make([]string, len(b.Targets))
	for i, t := range b.Targets {
		s[i] = t.String()
	}
	return strings.Join(s, ",")
}

func methods(b boards.Board) string {
	s := make([]string, len(b.Methods))
	for i, m := range b.Methods {
		s[i] = string(m)
	}
	return strings.Join(s, ",")
}
