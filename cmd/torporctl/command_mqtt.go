package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/mqtt"
	"github.com/torpor-dev/torpor/transport/mqtt/command"
	"github.com/torpor-dev/torpor/transport/mqtt/mosquitto"
)

func init() {
	register(&subcommand{
		name:  "mqtt",
		args:  "acl --devices FILE --operators FILE --out DIR",
		short: "Generate a mosquitto password file, ACL and configuration for the fleet (an external broker).",
		run:   runMQTT,
	})
}

const mqttACLHelp = `usage: torporctl mqtt acl --devices FILE --operators FILE --out DIR [--prefix P]

Writes, for an external mosquitto (which cannot check DID Bearer tokens):
  DIR/passwd          mosquitto password file: user name the DID's key (did:key:
                      dropped: mosquitto's user names cannot hold ':'), a
                      PBKDF2-SHA512 hash of a random password ($7$)
  DIR/acl             each device reads only its own cmd and sync topics and writes
                      only its own status, reply, event and sync; operators write
                      every cmd topic and read replies, statuses and events
  DIR/mosquitto.conf  include it: no anonymous clients, the two files above, and
                      use_username_as_clientid (a session belongs to a DID)
  DIR/secrets/        each client's password (0600), kept across runs: give a
                      device its file as mqtt.passwordFile, an operator as
                      torporctl --mqtt-password-file
--devices has "NAME DID" lines (the format of known_devices), --operators one
DID a line. Run it again after a change; existing passwords are kept.
`

func runMQTT(_ context.Context, e *env, fs *flag.FlagSet, args []string) error {
	devices := fs.String("devices", "", "The devices: \"NAME DID\" lines.")
	operators := fs.String("operators", "", "The operators: one DID a line.")
	out := fs.String("out", "", "The directory to write to.")
	prefix := fs.String("prefix", mqtt.DefaultPrefix, "The topic prefix.")
	group := fs.String("group", defaultMosquittoGroup(), "The group that may read the password file (mode 0640): mosquitto started by root drops to the user mosquitto before reading it. Empty keeps it 0600. The default is mosquitto where that group exists.")
	acl, args := takeSubcommand(fs, args, "acl")
	if !acl {
		fmt.Fprint(e.stderr, mqttACLHelp)
		return exitError{2}
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *devices == "" || *operators == "" || *out == "" || fs.NArg() > 0 {
		fmt.Fprint(e.stderr, mqttACLHelp)
		return exitError{2}
	}
	if err := mqtt.CheckPrefix(*prefix); err != nil {
		return err
	}
	known, err := command.LoadKnownDevices(*devices)
	if err != nil {
		return err
	}
	ops, err := readDIDList(*operators)
	if err != nil {
		return err
	}
	if err := mosquitto.Write(*out, mosquitto.Fleet{Prefix: *prefix, Devices: known.Devices(), Operators: ops, Group: *group}); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s: %d devices, %d operators; include %s in mosquitto's configuration\n",
		*out, len(known.Devices()), len(ops), filepath.Join(*out, "mosquitto.conf"))
	return nil
}

// readDIDList reads one DID a line ('#' comments).
func readDIDList(path string) ([]did.DID, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []did.DID
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		d, err := did.Parse(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		out = append(out, d)
	}
	return out, sc.Err()
}

// defaultMosquittoGroup is "mosquitto" where the group exists (the Debian
// package creates it), else "".
func defaultMosquittoGroup() string {
	if _, err := user.LookupGroup("mosquitto"); err == nil {
		return "mosquitto"
	}
	return ""
}
