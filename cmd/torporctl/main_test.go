package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// TestMain lets the testscript scripts in testdata/script run torporctl as a
// command in the same binary.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"torporctl": func() { os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script", Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"verify-token":  cmdVerifyToken,
		"verify-object": cmdVerifyObject,
	}})
}

// cmdVerifyToken is the script command
//
//	verify-token TOKENFILE AUDIENCE DIDFILE TTL
//
// which succeeds when the token in TOKENFILE verifies with transport/bearer
// for AUDIENCE, asserts the DID in DIDFILE and is valid for TTL.
func cmdVerifyToken(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 4 {
		ts.Fatalf("usage: verify-token TOKENFILE AUDIENCE DIDFILE TTL")
	}
	tok := strings.TrimSpace(ts.ReadFile(args[0]))
	ttl, err := time.ParseDuration(args[3])
	ts.Check(err)
	v := &bearer.Verifier{Audience: args[1]}
	id, err := v.Verify(tok)
	if err == nil {
		if id.String() != strings.TrimSpace(ts.ReadFile(args[2])) {
			err = fmt.Errorf("token asserts %s, want the DID in %s", id, args[2])
		} else if t, _ := bearer.Parse(tok); t.Claims.Exp-t.Claims.Iat != int64(ttl/time.Second) {
			err = fmt.Errorf("token valid for %ds, want %v", t.Claims.Exp-t.Claims.Iat, ttl)
		}
	}
	switch {
	case err != nil && !neg:
		ts.Fatalf("verify-token: %v", err)
	case err == nil && neg:
		ts.Fatalf("verify-token: the token verifies for %s", args[1])
	}
}

// TestFlagsFirst: flags and their values move before the arguments, in
// order; "--" ends the flags; a boolean flag takes no value; a negative
// number is an argument; an unknown flag stays a flag for fs.Parse to
// refuse.
func TestFlagsFirst(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.String("relay", "", "")
	fs.Bool("json", false, "")
	fs.Int("n", 0, "")
	cases := []struct{ in, want string }{
		{"list --relay R --agent", "--relay R --agent -- list"},
		{"list --relay R --json x", "--relay R --json -- list x"},
		{"--json=false a -n 3 b", "--json=false -n 3 -- a b"},
		{"a --relay=R -- --json -5", "--relay=R -- a --json -5"},
		{"set offset -5", "-- set offset -5"},
		{"-n -5 a", "-n -5 -- a"},
		{"a -h", "-h -- a"},
		{"--json", "--json"},
		{"", ""},
	}
	for _, c := range cases {
		got := strings.Join(flagsFirst(fs, strings.Fields(c.in)), " ")
		if got != c.want {
			t.Errorf("flagsFirst(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestParseFlagsAnywhere: a subcommand's flags parse after its arguments.
func TestParseFlagsAnywhere(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	relay := fs.String("relay", "", "")
	all := fs.Bool("all", false, "")
	if err := parseFlags(fs, []string{"purge", "--relay", "http://r", "x", "--all"}); err != nil {
		t.Fatal(err)
	}
	if *relay != "http://r" || !*all || strings.Join(fs.Args(), " ") != "purge x" {
		t.Errorf("relay %q all %v args %q", *relay, *all, fs.Args())
	}
}

// cmdVerifyObject is the script command
//
//	verify-object [-bare] FILE DIDFILE PURPOSE PAYLOAD
//
// which succeeds when FILE holds an A2A Governed Object part
// (a2a.ReadDataObject), or with -bare the object alone, whose object
// verifies (governed.Parse, VerifySignature), is issued by the DID in
// DIDFILE, has PURPOSE and the JSON payload PAYLOAD.
func cmdVerifyObject(ts *testscript.TestScript, neg bool, args []string) {
	bare := len(args) > 0 && args[0] == "-bare"
	if bare {
		args = args[1:]
	}
	if neg || len(args) != 4 {
		ts.Fatalf("usage: verify-object [-bare] FILE DIDFILE PURPOSE PAYLOAD")
	}
	raw := []byte(ts.ReadFile(args[0]))
	if !bare {
		var p a2a.Part
		ts.Check(json.Unmarshal(raw, &p))
		d, err := a2a.ReadDataObject(p)
		ts.Check(err)
		raw = d.Object
	}
	o, err := governed.Parse(raw)
	ts.Check(err)
	ts.Check(o.VerifySignature())
	if o.Issuer.String() != strings.TrimSpace(ts.ReadFile(args[1])) || o.Governance.Purpose != args[2] || string(o.Payload) != args[3] {
		ts.Fatalf("object issued by %s for %s with payload %s; want %s, %s, %s", o.Issuer, o.Governance.Purpose, o.Payload, ts.ReadFile(args[1]), args[2], args[3])
	}
}
