package deptest

import (
	"slices"
	"strings"
	"testing"
)

// ruleCases add one forbidden import to the clean graph (and
// torpor-conformance to it), directly or through another package; each
// must break the rule named, along wantPath.
var ruleCases = []struct {
	add      []string
	rule     string
	wantPath string
}{
	{[]string{"pulse: did internal/x", "internal/x: runtime/gate"}, "the lower layers do not depend on the agent's runtime",
		"pulse internal/x runtime/gate"},
	{[]string{"transport/link/server: transport/link/wire store/queue runtime/drain"}, "the lower layers do not depend on the agent's runtime",
		"transport/link/server runtime/drain"},
	{[]string{"store/agents: store/queue wake session"}, "the relay links neither the agent's runtime nor its MLS sessions",
		"store/agents session"},
	{[]string{"transport/broker: github.com/mochi-mqtt/server/v2 runtime/drain"}, "the relay links neither the agent's runtime nor its MLS sessions",
		"transport/broker runtime/drain"},
	{[]string{"runtime/deliver: transport/mqtt/mqttconn store/queue"}, "the agent's runtime links nothing of the relay",
		"runtime/deliver store/queue"},
	{[]string{"runtime/manage: runtime transport/mqtt/command transport/relay"}, "the agent's runtime links nothing of the relay",
		"runtime/manage transport/relay"},
	{[]string{"runtime: session transport/link store transport/mqtt runtime/deliver runtime/update",
		"runtime/update: github.com/theupdateframework/go-tuf/v2/metadata",
		"github.com/theupdateframework/go-tuf/v2/metadata: github.com/sigstore/sigstore/pkg/signature"},
		"torpor-agent links neither go-tuf nor sigstore nor protobuf", "cmd/torpor-agent runtime runtime/update github.com/theupdateframework/go-tuf/v2/metadata"},
	{[]string{"transport/link: transport/link/wire github.com/mochi-mqtt/server/v2"}, "torpor-agent links nothing of the relay",
		"cmd/torpor-agent transport/link github.com/mochi-mqtt/server/v2"},
	{[]string{"did: github.com/gowebpki/jcs"}, "torpor-agent links not the upstream JCS module",
		"cmd/torpor-agent runtime/manage transport/mqtt/command did github.com/gowebpki/jcs"},
	{[]string{"transport/mqtt: github.com/eclipse/paho.golang/autopaho/queue transport/mqtt/mqttconn github.com/eclipse/paho.golang/autopaho"},
		"torpor-agent links neither autopaho nor its WebSocket and proxy dialers", "cmd/torpor-agent runtime transport/mqtt github.com/eclipse/paho.golang/autopaho"},
	{[]string{"transport/link: transport/link/wire golang.org/x/net/proxy"}, "torpor-agent links neither autopaho nor its WebSocket and proxy dialers",
		"cmd/torpor-agent transport/link golang.org/x/net/proxy"},
	{[]string{"transport/link: transport/link/wire std:net/http"}, "torpor-agent links neither net/http nor a WebSocket module",
		"cmd/torpor-agent transport/link net/http"},
	{[]string{"transport/link: transport/link/wire github.com/coder/websocket"}, "torpor-agent links neither net/http nor a WebSocket module",
		"cmd/torpor-agent transport/link github.com/coder/websocket"},
	{[]string{"session/kpcheck: session github.com/eclipse/paho.golang/paho"}, "torpor-relay links nothing of the device",
		"cmd/torpor-relay session/kpcheck github.com/eclipse/paho.golang/paho"},
	{[]string{"store/agents: store/queue wake wake/rtc"}, "torpor-relay links nothing of the device",
		"cmd/torpor-relay store/agents wake/rtc"},
	{[]string{"cmd/torporctl: transport/mqtt/command session/sender transport/bearer transport/relay/console"},
		"torporctl links no relay, broker, queue or agents store, NATS server, agent runtime or conformance runner", "cmd/torporctl transport/relay/console"},
	{[]string{"transport/mqtt/command: transport/mqtt/envelope did runtime"},
		"torporctl links no relay, broker, queue or agents store, NATS server, agent runtime or conformance runner", "cmd/torporctl transport/mqtt/command runtime"},
	{[]string{"session/sender: session transport/bearer store/queue"},
		"torporctl links no relay, broker, queue or agents store, NATS server, agent runtime or conformance runner", "cmd/torporctl session/sender store/queue"},
	{[]string{"transport/bearer: did github.com/nats-io/nats-server/v2/server"},
		"torporctl links no relay, broker, queue or agents store, NATS server, agent runtime or conformance runner",
		"cmd/torporctl transport/bearer github.com/nats-io/nats-server/v2/server"},
	{[]string{"cmd/torporctl: transport/mqtt/command session/sender transport/bearer conformance", "conformance: clock"},
		"torporctl links no relay, broker, queue or agents store, NATS server, agent runtime or conformance runner", "cmd/torporctl conformance"},
	{append(slices.Clone(conformanceCommand), "conformance: runtime transport/relay runtime/manage"),
		"torpor-conformance links neither the operator's side nor the MQTT broker nor a board's wake hardware", "cmd/torpor-conformance conformance runtime/manage"},
	{append(slices.Clone(conformanceCommand), "conformance: runtime transport/relay transport/broker"),
		"torpor-conformance links neither the operator's side nor the MQTT broker nor a board's wake hardware",
		"cmd/torpor-conformance conformance transport/broker"},
	{[]string{"test/procs: runtime/deliver runtime/drain"}, "torpor-demo links neither the agent's runtime nor the relay",
		"cmd/torpor-demo test/procs runtime/drain"},
	{[]string{"cmd/torpor-demo: test/procs session/sender store/jsstore/jsserver store/jsstore"},
		"torpor-demo links neither the agent's runtime nor the relay", "cmd/torpor-demo store/jsstore"},
	{[]string{"transport/link: transport/link/wire clock/clocktest"}, "the shipped binaries link no test code",
		"cmd/torpor-agent transport/link clock/clocktest"},
	{[]string{"transport/broker: github.com/mochi-mqtt/server/v2 std:testing"}, "the shipped binaries link no test code",
		"cmd/torpor-relay transport/broker testing"},
	{[]string{"cmd/torporctl: transport/mqtt/command session/sender transport/bearer test/procs"}, "the shipped binaries link no test code",
		"cmd/torporctl test/procs"},
}

// TestEachRuleCanFail: the clean graph passes, with or without
// torpor-conformance; one forbidden import added to it breaks the rule
// that forbids it, with the import path that does it. Every rule has a
// case.
func TestEachRuleCanFail(t *testing.T) {
	for _, g := range [][]string{clean, slices.Concat(clean, conformanceCommand)} {
		if vs := Check(fake(g...), Rules); len(vs) != 0 {
			t.Fatalf("the clean fake graph: %v", vs)
		}
	}
	covered := map[string]bool{}
	for _, tt := range ruleCases {
		covered[tt.rule] = true
		g := fake(slices.Concat(clean, tt.add)...)
		var got []Violation
		for _, v := range Check(g, Rules) {
			if v.Rule == tt.rule && strings.Join(rel(v.Path), " ") == tt.wantPath {
				got = append(got, v)
			}
		}
		if len(got) != 1 {
			t.Errorf("adding %q: violations %v, want one of rule %q along %s", tt.add, Check(g, Rules), tt.rule, tt.wantPath)
		}
	}
	for _, r := range Rules {
		if !covered[r.Name] {
			t.Errorf("no fake violation of rule %q", r.Name)
		}
	}
}

// TestPendingRuleWaits: a pending rule (Rules' own, and one made up)
// whose command is absent is no violation; the same rule not pending is a
// stale one.
func TestPendingRuleWaits(t *testing.T) {
	pending := []Rule{{Name: "arriving", From: []string{"cmd/torpor-arriving"}, Forbid: []string{"runtime/..."}, Pending: true}}
	for _, r := range Rules {
		if r.Pending {
			pending = append(pending, r)
		}
	}
	for _, r := range pending {
		if vs := Check(fake(clean...), []Rule{r}); len(vs) != 0 {
			t.Errorf("pending rule %q over a graph without its package: %v", r.Name, vs)
		}
		r.Pending = false
		if vs := Check(fake(clean...), []Rule{r}); len(vs) != 1 || vs[0].Path != nil {
			t.Errorf("rule %q, not pending, over a graph without its package: %v, want one stale violation", r.Name, vs)
		}
	}
}

// TestEveryCommandNeedsItsRule: a command no rule names alone is reported,
// one named with others only too; torpor-conformance has its rule.
func TestEveryCommandNeedsItsRule(t *testing.T) {
	if vs := CheckCommandRules(fake(slices.Concat(clean, conformanceCommand)...), Rules); len(vs) != 0 {
		t.Fatalf("the clean fake graph: %v", vs)
	}
	g := fake(append(slices.Clone(clean), "cmd/torpor-new: did", "cmd/torpor-new/internal/x: did")...)
	rules := append(slices.Clone(Rules), Rule{Name: "shared", From: []string{"cmd/torpor-agent", "cmd/torpor-new"}})
	vs := CheckCommandRules(g, rules)
	if len(vs) != 1 || vs[0].Rule != RuleCommandHasRule || !strings.Contains(vs[0].String(), "cmd/torpor-new has no rule") {
		t.Errorf("CheckCommandRules with a new command = %v, want one violation naming cmd/torpor-new", vs)
	}
}

// TestCheckReportsTheFirstForbidden: a forbidden package reached only
// through another forbidden one is left out; one reached along a clean
// path of its own is reported too.
func TestCheckReportsTheFirstForbidden(t *testing.T) {
	r := Rule{Name: "r", From: []string{"a"}, Forbid: []string{"github.com/x/...", "bad"}}
	var got []string
	for _, v := range Check(fake("a: github.com/x/server b", "github.com/x/server: github.com/x/server/conf", "b: bad"), []Rule{r}) {
		got = append(got, strings.Join(rel(v.Path), " "))
	}
	if want := []string{"a github.com/x/server", "a b bad"}; !slices.Equal(got, want) {
		t.Errorf("Check = %q, want %q", got, want)
	}
}
