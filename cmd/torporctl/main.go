// Command torporctl is the operator and developer tool of Torpor: keys and
// DIDs, sending messages to agents, managing devices over MQTT, running
// conformance vectors and inspecting stores.
//
// Usage:
//
//	torporctl <command> [flags] [arguments]
//
// Run "torporctl help" for the list of commands and "torporctl <command> -h"
// for the flags of one. Each command lives in its own file, command_<name>.go.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/torpor-dev/torpor/internal/version"
)

// subcommand is one torporctl command.
type subcommand struct {
	name  string
	args  string // synopsis of the arguments, for help
	short string // one line, for the command list
	// run executes the command. Flags are parsed by run itself from fs,
	// which is named after the command and writes usage to stderr.
	run func(ctx context.Context, env *env, fs *flag.FlagSet, args []string) error
}

// env is what a command may touch: its output streams. Commands never write
// to os.Stdout directly, so the tests can run them in-process.
type env struct {
	stdout, stderr io.Writer
}

var commands = map[string]*subcommand{}

func register(c *subcommand) { commands[c.name] = c }

// errUsage makes main print the command's usage and exit 2.
var errUsage = errors.New("usage")

// usageError is errUsage with the reason the arguments were not understood,
// which main prints before the usage.
type usageError struct{ why string }

func (e usageError) Error() string        { return e.why }
func (e usageError) Is(target error) bool { return target == errUsage }

// parseFlags parses args with fs, accepting flags anywhere among the
// arguments (torporctl queue list --agent DID, torporctl send DID hi --ttl
// 1h): the flag package stops at the first argument, so parseFlags first
// moves the flags, with the values of those that take one, before the
// arguments. Everything after a "--" is an argument, so an argument that
// begins with "-" is written after a "--"; a negative number ("-5") is an
// argument too unless fs has a flag of that name.
func parseFlags(fs *flag.FlagSet, args []string) error {
	return fs.Parse(flagsFirst(fs, args))
}

// flagsFirst returns args with the flags (and their values) of fs before
// the arguments, the arguments after a "--" when there are any.
func flagsFirst(fs *flag.FlagSet, args []string) []string {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		name, isFlag := flagName(fs, a)
		if !isFlag {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		if !strings.Contains(a, "=") && takesValue(fs, name) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	if len(positional) == 0 {
		return flags
	}
	return append(append(flags, "--"), positional...)
}

// takeSubcommand reports whether the first argument that is not one of
// fs's flags (or a flag's value) is sub, and returns args without it, so
// that a subcommand may follow the flags: fleet --relay R open.
func takeSubcommand(fs *flag.FlagSet, args []string, sub string) (bool, []string) {
	for i := 0; i < len(args); i++ {
		name, isFlag := flagName(fs, args[i])
		switch {
		case args[i] == "--":
			return false, args
		case !isFlag:
			if args[i] != sub {
				return false, args
			}
			return true, append(args[:i:i], args[i+1:]...)
		case !strings.Contains(args[i], "=") && takesValue(fs, name):
			i++
		}
	}
	return false, args
}

// flagName reports whether a is written as a flag ("-x", "--x", "-x=v")
// and returns the flag's name.
func flagName(fs *flag.FlagSet, a string) (string, bool) {
	if len(a) < 2 || a[0] != '-' {
		return "", false
	}
	name := strings.TrimPrefix(a[1:], "-")
	if i := strings.IndexByte(name, '='); i >= 0 {
		name = name[:i]
	}
	if name == "" {
		return "", false
	}
	if _, err := strconv.ParseFloat(a, 64); err == nil && fs.Lookup(name) == nil {
		return "", false // a negative number
	}
	return name, true
}

// takesValue reports whether the flag name of fs takes the next argument
// as its value: every flag but a boolean one. An unknown name takes none;
// fs.Parse refuses it.
func takesValue(fs *flag.FlagSet, name string) bool {
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}

// exitError carries an exit status without printing anything more.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printHelp(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		fmt.Fprintln(stdout, "torporctl", version.Get())
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "torporctl: unknown command %q; run 'torporctl help'\n", args[0])
		return 2
	}
	fs := flag.NewFlagSet("torporctl "+c.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: torporctl %s [flags] %s\n\n%s\n", c.name, c.args, c.short)
		if hasFlags(fs) {
			fmt.Fprintln(stderr, "\nflags:")
			fs.PrintDefaults()
		}
	}
	err := c.run(ctx, &env{stdout: stdout, stderr: stderr}, fs, args[1:])
	var ee exitError
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "torporctl %s: %s\n", c.name, ue.why)
		}
		fs.Usage()
		return 2
	case errors.As(err, &ee):
		return ee.code
	default:
		fmt.Fprintf(stderr, "torporctl %s: %v\n", c.name, err)
		return 1
	}
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "torporctl is the operator and developer tool of Torpor.")
	fmt.Fprintln(w, "\nusage: torporctl <command> [flags] [arguments]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-14s %s\n", n, commands[n].short)
	}
	fmt.Fprintln(w, "\nRun 'torporctl <command> -h' for a command's flags.")
}
