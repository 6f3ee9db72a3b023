// Package tsmls drives ts-mls 1.6.4, the TypeScript MLS library the
// draft-chapman-a2a-mls reference implementation uses, as an independent
// peer for Torpor's interop tests.
//
// A Peer is one Node.js process running test/interop/node/peer.mjs. It
// speaks JSON lines on stdin/stdout: one request {id, op, ...} per line,
// one response {id, ok, result|error} per line, bytes as hex. Many Actors
// (group members, each with its own ts-mls client state) live in one Peer,
// named by the caller. Every typed method takes a context; a call with no
// deadline gets Config.CallTimeout.
//
// # Why a subprocess and not a port
//
// ts-mls is the implementation we must interoperate with, so the tests run
// its own code, unchanged, from the npm registry (pinned by
// test/interop/node/package-lock.json and installed by scripts/setup.sh).
// JSON lines keep the protocol readable in a failing test's log, and hex
// keeps every byte the two stacks exchange visible and comparable.
//
// # Finding Node and the modules
//
// Locate finds node on PATH and the installed node_modules next to
// peer.mjs (TORPOR_TSMLS_DIR overrides the folder). StartT is the helper
// for tests: a missing node or missing modules skip the test, or fail it
// when TORPOR_REQUIRE_TOOLS=1 or CI=true (test/internal/testenv).
//
// docs/interop.md describes the protocol and the ts-mls facts the tests
// verify.
package tsmls
