package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/test/worldtest"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
	"github.com/torpor-dev/torpor/transport/relay"
)

// TestQueueCommand: torporctl queue lists a device's queue and purges one
// sender's records, then all, with an operator's key; with a key the
// relay does not list it fails with the relay's reason; bad selections
// are usage errors.
func TestQueueCommand(t *testing.T) {
	op, stranger, agent, alice, mallory := didtest.New(t), didtest.New(t), didtest.New(t), didtest.New(t), didtest.New(t)
	r := worldtest.Start(t, relay.Config{Access: relay.Access{Operators: []did.DID{op.DID()}}})
	for _, from := range []*did.PrivateKey{alice, mallory, mallory} {
		rec := queue.Record{Agent: agent.DID().String(), From: from.DID().String(), Body: []byte(`{"jsonrpc":"2.0","method":"SendMessage","params":{}}`)}
		if _, err := r.Queue.Enqueue(context.Background(), rec, queuebounds.Default(), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	opKey, strangerKey := keyFile(t, op), keyFile(t, stranger)
	base := []string{"--relay", r.URL, "--agent", agent.DID().String()}
	ctl := func(args ...string) (int, string) {
		var out bytes.Buffer
		code := run(context.Background(), append(append([]string{"queue"}, args[:len(args)-1]...), append(base, args[len(args)-1])...), &out, &out)
		return code, out.String()
	}
	steps := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--key", strangerKey, "list"}, 1, "403 Forbidden: not_operator"},
		{[]string{"--key", opKey, "--all", "list"}, 2, "--all is for purge"},
		{[]string{"--key", opKey, "purge"}, 2, "purge needs --sender DID or --all"},
		{[]string{"--key", opKey, "--all", "--sender", alice.DID().String(), "purge"}, 2, "not both"},
		{[]string{"--key", opKey, "drop"}, 2, `unknown subcommand "drop"`},
		{[]string{"--key", opKey, "list"}, 0, "3 records, 156 bytes queued for " + agent.DID().String()},
		{[]string{"--key", opKey, "--sender", mallory.DID().String(), "purge"}, 0, "purged 2 records (104 bytes) of the records of " + mallory.DID().String()},
		{[]string{"--key", opKey, "list"}, 0, alice.DID().String()},
		{[]string{"--key", opKey, "--all", "purge"}, 0, "purged 1 records (52 bytes) of every record"},
		{[]string{"--key", opKey, "--json", "list"}, 0, `"messages":0`},
	}
	for _, s := range steps {
		code, out := ctl(s.args...)
		if code != s.code || !strings.Contains(out, s.want) {
			t.Errorf("queue %v: exit %d\n%s\nwant exit %d and %q", s.args, code, out, s.code, s.want)
		}
	}
	// as docs/operations.md writes it: the subcommand first, flags after
	var out bytes.Buffer
	args := []string{"queue", "list", "--relay", r.URL, "--agent", agent.DID().String(), "--key", opKey, "--json"}
	if code := run(context.Background(), args, &out, &out); code != 0 || !strings.Contains(out.String(), `"messages":0`) {
		t.Errorf("%v: exit %d\n%s", args, code, out.String())
	}
}
