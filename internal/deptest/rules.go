package deptest

import (
	"fmt"
	"slices"
	"strings"
)

// Rules are what the layer table cannot say: the layering rules between
// packages of one row, and what each command may not link. The rows
// already keep every package below the runtime's row from importing it,
// and MLS sessions and the device's link client (rows below the relay's)
// from importing the relay; those are no rules of their own.
var Rules = slices.Concat(layeringRules, agentRules, commandRules)

// The relay's packages: its HTTP side and fleet console, its side of the
// device link, the embedded broker, its stores.
var relayPackages = []string{"transport/relay/...", "transport/link/server/...", "transport/broker/...",
	"store/queue/...", "store/agents/...", "store/audit/...", "store/jsstore/...", "store/relaystore", "store/updaterepo", "store/tenants"}

// testCode is what a shipped binary never links: package testing, the
// module's integration tests and their tools, and the *test helpers.
var testCode = []string{"std:testing/...", "test/...", "boards/boardtest", "clock/clocktest", "did/didtest",
	"governed/governedtest", "runtime/runtimetest", "runtime/manage/managetest", "store/storetest",
	"store/queue/queuetest", "store/agents/agentstest", "store/audit/audittest", "transport/mqtt/mqtttest", "wake/waketest", "internal/nettest"}

var layeringRules = []Rule{
	{
		// The rows say it for every package below the runtime's row; this
		// covers the relay's packages in the runtime's row and
		// transport/mqtt/mqtttest.
		Name: "the lower layers do not depend on the agent's runtime",
		From: []string{"transport/...", "session/...", "store/...", "mls/...", "governed/...", "did/...",
			"clock/...", "wake/...", "boards/...", "pulse/..."},
		Forbid: []string{"runtime/..."},
	},
	{
		Name:   "the relay links neither the agent's runtime nor its MLS sessions",
		From:   relayPackages,
		Forbid: []string{"runtime/...", "session/...", "mls/..."},
	},
	{
		// The other half of "side by side": the agent's runtime and the
		// relay share a row and never link each other.
		Name:   "the agent's runtime links nothing of the relay",
		From:   []string{"runtime/..."},
		Forbid: relayPackages,
	},
}

var agentRules = []Rule{
	{
		Name: "torpor-agent links nothing of the relay",
		From: []string{"cmd/torpor-agent"},
		Forbid: append(slices.Clone(relayPackages), "github.com/mochi-mqtt/...", "github.com/prometheus/...",
			"github.com/nats-io/..."),
	},
	{
		// docs/footprint.md: what the agent stopped linking to get smaller.
		// internal/jcs, written from RFC 8785, does without the upstream
		// module.
		Name:   "torpor-agent links not the upstream JCS module",
		From:   []string{"cmd/torpor-agent"},
		Forbid: []string{"github.com/gowebpki/jcs/..."},
	},
	{
		// docs/footprint.md, "What the update client costs": the device
		// verifies TUF metadata with runtime/update/tuf. go-tuf/v2's
		// metadata package links sigstore's signature package, and with
		// it protobuf, go-containerregistry's name and go-digest: about
		// 3 MiB of the armv6 binary. store/updaterepo and torporctl,
		// which sign, keep go-tuf.
		Name: "torpor-agent links neither go-tuf nor sigstore nor protobuf",
		From: []string{"cmd/torpor-agent"},
		Forbid: []string{"github.com/theupdateframework/go-tuf/...", "github.com/sigstore/...",
			"google.golang.org/protobuf/..."},
	},
	{
		// docs/footprint.md: autopaho's connection path links a WebSocket
		// client and an all_proxy dialer the agent never uses; it keeps its
		// MQTT connection with transport/mqtt/mqttconn. autopaho/queue, the
		// interface store/mqttsession implements, imports neither.
		Name: "torpor-agent links neither autopaho nor its WebSocket and proxy dialers",
		From: []string{"cmd/torpor-agent"},
		Forbid: []string{"github.com/eclipse/paho.golang/autopaho", "github.com/eclipse/paho.golang/autopaho/extensions/...",
			"github.com/gorilla/websocket/...", "golang.org/x/net/proxy/..."},
	},
	agentWithoutNetHTTP, // on since autopaho left the agent (the rule above)
}

// agentWithoutNetHTTP keeps net/http out of torpor-agent (docs/footprint.md:
// with its textproto, MIME and idna code it was the agent's largest
// dependency after the runtime and crypto). The link dials with
// transport/link/internal/wsclient, the Unix-socket delivery posts with
// internal/http1, and bearer's HTTP middleware is package bearerhttp. It
// holds only without autopaho, which imports net/http: drop its line from
// Rules to turn it off.
var agentWithoutNetHTTP = Rule{
	Name:   "torpor-agent links neither net/http nor a WebSocket module",
	From:   []string{"cmd/torpor-agent"},
	Forbid: []string{"std:net/http/...", "github.com/coder/websocket/...", "github.com/gorilla/websocket/..."},
}

// commandRules are the other commands' rules (torpor-agent's are above).
var commandRules = []Rule{
	{
		// The relay holds no device key and runs no duty cycle: of the
		// device's code it links only what checks a KeyPackage
		// (session/kpcheck, docs/architecture.md).
		Name: "torpor-relay links nothing of the device",
		From: []string{"cmd/torpor-relay"},
		Forbid: []string{"runtime/...", "session/sender/...", "transport/link", "transport/link/internal/wsclient/...",
			"transport/mqtt", "transport/mqtt/mqttconn/...", "store/replay/...", "store/ledger/...", "store/mqttsession/...",
			"wake/timer/...", "wake/rtc/...", "wake/gpio/...", "wake/suspend/...", "wake/board/...", "boards/...",
			"periph.io/...", "github.com/eclipse/paho.golang/..."},
	},
	{
		// Issue 30: the operator's tool speaks to the relay over HTTP and to
		// devices over MQTT; it is no relay, broker or agent.
		Name: "torporctl links no relay, broker, queue or agents store, NATS server, agent runtime or conformance runner",
		From: []string{"cmd/torporctl"},
		Forbid: append(slices.Clone(relayPackages), "github.com/mochi-mqtt/...", "github.com/nats-io/nats-server/...",
			"runtime/...", "conformance/..."),
	},
	{
		// It runs the reference vectors through the relay's and the
		// agent's real code, in process (conformance/); it sends no
		// command and runs on no board.
		Name: "torpor-conformance links neither the operator's side nor the MQTT broker nor a board's wake hardware",
		From: []string{"cmd/torpor-conformance"},
		Forbid: []string{"runtime/manage/...", "transport/mqtt/command/...", "session/sender/...", "transport/broker/...",
			"github.com/mochi-mqtt/...", "wake/rtc/...", "wake/gpio/...", "wake/suspend/...", "wake/board/...",
			"boards/...", "periph.io/..."},
	},
	{
		// The demo learns what happens only from what an operator could see
		// (cmd/torpor-demo/doc.go): it runs the relay and the agents as
		// processes. It reads the deliveries runtime/deliver posts, and its
		// fleet's NATS cluster runs in its process (store/jsstore/jsserver).
		Name: "torpor-demo links neither the agent's runtime nor the relay",
		From: []string{"cmd/torpor-demo"},
		Forbid: []string{"transport/relay/...", "transport/link/server/...", "transport/broker/...", "store/queue/...",
			"store/agents/...", "store/jsstore", "runtime", "runtime/drain/...", "runtime/gate/...", "runtime/manage/...",
			"runtime/sessions/...", "runtime/conffile/...", "runtime/trusted/...", "github.com/mochi-mqtt/..."},
	},
	{
		Name:   "the shipped binaries link no test code",
		From:   []string{"cmd/torpor-agent", "cmd/torpor-relay", "cmd/torporctl"},
		Forbid: testCode,
	},
}

// CheckCommandRules returns a violation for every command of g (a package
// cmd/<name>) that no rule constrains alone (a rule whose From names only
// it): a new command gets its rule when it is added.
func CheckCommandRules(g Graph, rules []Rule) []Violation {
	var out []Violation
	for _, p := range g.sorted() {
		name, ok := strings.CutPrefix(p, Module+"/cmd/")
		if !ok || strings.Contains(name, "/") {
			continue
		}
		if !slices.ContainsFunc(rules, func(r Rule) bool { return len(r.From) == 1 && match(r.From[0], p) }) {
			out = append(out, Violation{Rule: RuleCommandHasRule, Path: []string{p},
				Msg: fmt.Sprintf("cmd/%s has no rule of its own: add one to internal/deptest's commandRules (what it must not link)", name)})
		}
	}
	return out
}

// RuleCommandHasRule is the name of CheckCommandRules's violations.
const RuleCommandHasRule = "every command has a rule of its own"
