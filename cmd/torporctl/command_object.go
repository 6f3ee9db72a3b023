package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/transport/a2a"
)

func init() {
	register(&subcommand{
		name:  "object",
		args:  "[flags] [MESSAGE]",
		short: "Print a signed Governed Object as the A2A data part a device takes (docs/a2a.md, \"What to send\").",
		run:   runObject,
	})
}

// objectArgs are object's flags; the object's members are send's.
type objectArgs struct {
	key, purpose, schema, payload, relay string
	ttl                                  time.Duration
	timeScale                            float64
	bare                                 bool
}

func runObject(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	var a objectArgs
	fs.StringVar(&a.key, "key", os.Getenv("TORPOR_KEY"), "Your identity (torporctl keygen): it issues and signs the object. Default $TORPOR_KEY.")
	fs.StringVar(&a.purpose, "purpose", "comms:message", "The object's governance.purpose; the agent must permit it.")
	fs.StringVar(&a.schema, "schema", "https://atom.qwixl.dev/schema/CommsMessage", "The object's semantic.schema.")
	fs.StringVar(&a.payload, "payload", "", `The object's payload as a JSON object, instead of {"text": MESSAGE}.`)
	fs.DurationVar(&a.ttl, "ttl", 24*time.Hour, "The object's lifetime: a device that drains it later refuses it as expired.")
	fs.BoolVar(&a.bare, "bare", false, "Print the signed object alone, not the A2A data part that carries it.")
	fs.StringVar(&a.relay, "relay", envOr("TORPOR_RELAY", "http://127.0.0.1:8080"), "The relay whose clock --time-scale reads (its /healthz). Default $TORPOR_RELAY.")
	timeScaleFlag(fs, &a.timeScale)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 1 || fs.NArg() == 1 && a.payload != "" {
		return errUsage
	}
	if a.key == "" {
		return fmt.Errorf("no key: pass --key FILE or set TORPOR_KEY (torporctl keygen makes one)")
	}
	key, err := loadKey(a.key)
	if err != nil {
		return err
	}
	clk, err := relayClock(ctx, strings.TrimRight(a.relay, "/"), a.timeScale)
	if err != nil {
		return err
	}
	s := sendArgs{purpose: a.purpose, schema: a.schema, body: a.payload, ttl: a.ttl, clk: clk}
	obj, err := s.object(key, fs.Arg(0))
	if err != nil {
		return err
	}
	raw, err := obj.MarshalJSON()
	if err != nil {
		return err
	}
	out := any(json.RawMessage(raw))
	if !a.bare {
		if out, err = (a2a.DataObjectPart{Object: raw}).Part(); err != nil {
			return err
		}
	}
	return json.NewEncoder(e.stdout).Encode(out)
}
