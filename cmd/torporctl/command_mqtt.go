package main

import (
	"bufio"
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/atomicfile"
	"github.com/torpor-dev/torpor/transport/mqtt"
	"github.com/torpor-dev/torpor/transport/mqtt/login"
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

// mosquittoIterations is PBKDF2's iteration count in the password file, as
// mosquitto_passwd writes it.
const mosquittoIterations = 101

func runMQTT(_ context.Context, e *env, fs *flag.FlagSet, args []string) error {
	if len(args) == 0 || args[0] != "acl" {
		fmt.Fprint(e.stderr, mqttACLHelp)
		return exitError{2}
	}
	devices := fs.String("devices", "", "The devices: \"NAME DID\" lines.")
	operators := fs.String("operators", "", "The operators: one DID a line.")
	out := fs.String("out", "", "The directory to write to.")
	prefix := fs.String("prefix", mqtt.DefaultPrefix, "The topic prefix.")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *devices == "" || *operators == "" || *out == "" || fs.NArg() > 0 {
		fmt.Fprint(e.stderr, mqttACLHelp)
		return exitError{2}
	}
	if err := mqtt.CheckPrefix(*prefix); err != nil {
		return err
	}
	known, err := loadKnownDevices(*devices)
	if err != nil {
		return err
	}
	ops, err := readDIDList(*operators)
	if err != nil {
		return err
	}
	if err := writeMosquitto(*out, *prefix, known.pins, ops); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "wrote %s: %d devices, %d operators; include %s in mosquitto's configuration\n",
		*out, len(known.pins), len(ops), filepath.Join(*out, "mosquitto.conf"))
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

// writeMosquitto writes the password file, the ACL, the configuration and
// the secrets for devices (name → DID) and operators.
func writeMosquitto(dir, prefix string, devices map[string]did.DID, ops []did.DID) error {
	if err := os.MkdirAll(filepath.Join(dir, "secrets"), 0o700); err != nil {
		return err
	}
	var passwd, acl []string
	users := map[did.DID]string{}
	names := sortedKeys(devices)
	for _, name := range names {
		d := devices[name]
		if prev, ok := users[d]; ok {
			return fmt.Errorf("%s is both %s and %s: one DID, one device", d, prev, name)
		}
		users[d] = "device " + name
		line, err := passwdLine(dir, "device-"+name, d)
		if err != nil {
			return err
		}
		passwd = append(passwd, line)
		acl = append(acl, "user "+login.StaticUser(d),
			"topic read "+prefix+"/"+name+"/cmd", "topic readwrite "+prefix+"/"+name+"/sync",
			"topic write "+prefix+"/"+name+"/status", "topic write "+prefix+"/"+name+"/reply",
			"topic write "+prefix+"/"+name+"/event", "")
	}
	for _, d := range ops {
		if prev, ok := users[d]; ok {
			return fmt.Errorf("%s is both %s and an operator", d, prev)
		}
		users[d] = "operator"
		line, err := passwdLine(dir, "operator-"+d.String()[len(d.String())-12:], d)
		if err != nil {
			return err
		}
		passwd = append(passwd, line)
		acl = append(acl, "user "+login.StaticUser(d), "topic write "+prefix+"/+/cmd", "topic read "+prefix+"/+/reply",
			"topic read "+prefix+"/+/status", "topic read "+prefix+"/+/event", "")
	}
	sort.Strings(passwd)
	conf := []string{"# generated by torporctl mqtt acl", "allow_anonymous false",
		"password_file " + filepath.Join(dir, "passwd"), "acl_file " + filepath.Join(dir, "acl"),
		"use_username_as_clientid true"}
	return errors.Join(atomicfile.WriteFile(filepath.Join(dir, "passwd"), []byte(strings.Join(passwd, "\n")+"\n"), 0o600),
		atomicfile.WriteFile(filepath.Join(dir, "acl"), []byte(strings.Join(acl, "\n")), 0o644),
		atomicfile.WriteFile(filepath.Join(dir, "mosquitto.conf"), []byte(strings.Join(conf, "\n")+"\n"), 0o644))
}

// passwdLine returns d's password file line, with the secret in
// dir/secrets/label.password (made when absent).
func passwdLine(dir, label string, d did.DID) (string, error) {
	path := filepath.Join(dir, "secrets", label+".password")
	b, err := os.ReadFile(path)
	secret := strings.TrimSpace(string(b))
	if errors.Is(err, os.ErrNotExist) || secret == "" {
		secret = base64.RawURLEncoding.EncodeToString(randomBytes(24))
		if err := atomicfile.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
			return "", err
		}
	} else if err != nil {
		return "", err
	}
	h, err := mosquittoHash(secret, randomBytes(12))
	return login.StaticUser(d) + ":" + h, err
}

// mosquittoHash is mosquitto's "$7$" password hash: PBKDF2 (RFC 8018)
// with HMAC-SHA512, 101 iterations, a 12-byte salt and a 64-byte key, salt
// and key in standard base64 (mosquitto 2.0 password_mosq.c).
func mosquittoHash(secret string, salt []byte) (string, error) {
	key, err := pbkdf2.Key(sha512.New, secret, salt, mosquittoIterations, sha512.Size)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("$7$%d$%s$%s", mosquittoIterations, base64.StdEncoding.EncodeToString(salt), base64.StdEncoding.EncodeToString(key)), nil
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}
