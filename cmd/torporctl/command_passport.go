package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed/envelope"
)

func init() {
	register(&subcommand{
		name: "passport",
		args: "issue --key FILE --sub DID --aud DID --envelope FILE [--parent FILE] | verify --aud DID FILE...",
		short: "Issue an Autonomy Envelope passport, or attenuate one for a delegate; verify a delegation chain " +
			"(docs/envelope.md).",
		run: runPassport,
	})
}

// maxPassportTTL bounds --ttl: a passport's exp is meant to be short
// (docs/envelope.md).
const maxPassportTTL = 24 * time.Hour

func runPassport(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	if len(args) == 0 {
		return usageError{"want issue or verify"}
	}
	switch args[0] {
	case "issue":
		return runPassportIssue(e, fs, args[1:])
	case "verify":
		return runPassportVerify(e, fs, args[1:])
	}
	return usageError{fmt.Sprintf("unknown passport command %q; want issue or verify", args[0])}
}

// runPassportIssue prints a passport signed by --key for --sub at --aud,
// granting the scopes of --envelope (a JSON array of lap-scope-v0 scopes).
// With --parent (the passport --key holds), the envelope must be covered by
// the parent's and --key must be the parent's sub: the new passport is the
// next link of the chain.
func runPassportIssue(e *env, fs *flag.FlagSet, args []string) error {
	keyFile := fs.String("key", "", "The issuer's key file (written by keygen): the principal, or the agent delegating.")
	sub := fs.String("sub", "", "The DID of the agent the envelope is granted to.")
	aud := fs.String("aud", "", "The DID of the receiving agent.")
	envFile := fs.String("envelope", "", "A file holding the envelope: a JSON array of lap-scope-v0 scopes.")
	parentFile := fs.String("parent", "", "A file holding the passport the issuer holds; the new one attenuates it.")
	ttl := fs.Duration("ttl", 15*time.Minute, "How long the passport is valid (at most 24h; keep it short).")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 || *keyFile == "" || *sub == "" || *aud == "" || *envFile == "" {
		return errUsage
	}
	if *ttl < time.Second || *ttl > maxPassportTTL {
		return fmt.Errorf("--ttl %v: want between 1s and %v", *ttl, maxPassportTTL)
	}
	k, err := loadKey(*keyFile)
	if err != nil {
		return err
	}
	subDID, err := did.Parse(*sub)
	if err != nil {
		return fmt.Errorf("--sub: %w", err)
	}
	b, err := os.ReadFile(*envFile)
	if err != nil {
		return err
	}
	scopes, err := envelope.ParseEnvelope(b)
	if err != nil {
		return fmt.Errorf("%s: %w", *envFile, err)
	}
	if *parentFile != "" {
		if err := checkParent(k.DID().String(), *parentFile, *aud, scopes); err != nil {
			return err
		}
	}
	now := clock.Real.Now()
	tok, err := envelope.Issue(k, envelope.Claims{Iss: k.DID().String(), Sub: subDID.String(), Aud: *aud,
		Iat: now.Unix(), Exp: now.Add(*ttl).Unix(), Envelope: scopes})
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, tok)
	return nil
}

// checkParent verifies the parent passport and that the issuer holds it and
// the new envelope attenuates it.
func checkParent(issuer, path, aud string, scopes []envelope.Scope) error {
	tok, err := readToken(path)
	if err != nil {
		return err
	}
	p, err := envelope.Verify(tok, aud, clock.Real)
	if err != nil {
		return fmt.Errorf("--parent %s: %w", path, err)
	}
	if p.Sub != issuer {
		return fmt.Errorf("--parent %s: granted to %s, not to the issuer %s", path, p.Sub, issuer)
	}
	if err := envelope.RegistryV0().CoversEnvelope(p.Envelope, scopes); err != nil {
		return fmt.Errorf("--envelope is not covered by --parent: %w", err)
	}
	return nil
}

func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// runPassportVerify verifies the chain of passports in the files, root
// first, for --aud now, and prints the principal, the holder and the
// holder's envelope.
func runPassportVerify(e *env, fs *flag.FlagSet, args []string) error {
	aud := fs.String("aud", "", "The DID of the receiving agent the chain must be for.")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 || *aud == "" {
		return errUsage
	}
	chain := make([]string, 0, fs.NArg())
	for _, p := range fs.Args() {
		tok, err := readToken(p)
		if err != nil {
			return err
		}
		chain = append(chain, tok)
	}
	claims, err := envelope.RegistryV0().VerifyChain(chain, *aud, clock.Real)
	if err != nil {
		return err
	}
	last := claims[len(claims)-1]
	env, err := json.Marshal(last.Envelope)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "principal %s\nholder %s\nexpires %s\nenvelope %s\n", claims[0].Iss, last.Sub,
		time.Unix(last.Exp, 0).UTC().Format(time.RFC3339), env)
	return nil
}
