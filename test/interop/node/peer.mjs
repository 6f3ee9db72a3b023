// peer.mjs drives ts-mls 1.6.4 over JSON lines on stdin/stdout so that Go
// tests can put members of one MLS group on two independent stacks.
//
// One request per line:   {"id": 1, "op": "keyPackage", "actor": "alice", ...}
// One response per line:  {"id": 1, "ok": true, "result": {...}}
//                     or  {"id": 1, "ok": false, "error": {"name": "...", "message": "..."}}
//
// All bytes are lowercase hex strings. Requests are handled one at a time in
// arrival order, so an actor's state is never used by two operations at once.
// An error in one request is returned to the caller; it never ends the
// process. The process ends when stdin closes. The operations are in ops.mjs;
// docs/interop.md describes them.

import { createInterface } from "node:readline";
import { Peer } from "./ops.mjs";

const peer = await Peer.create();

function write(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

function errorOf(e) {
  if (e instanceof Error) {
    return { name: e.name || e.constructor?.name || "Error", message: e.message };
  }
  return { name: "Error", message: String(e) };
}

async function handle(line) {
  let req;
  try {
    req = JSON.parse(line);
  } catch (e) {
    write({ id: null, ok: false, error: { name: "BadRequest", message: "request is not JSON: " + e.message } });
    return;
  }
  if (req === null || typeof req !== "object" || Array.isArray(req)) {
    write({ id: null, ok: false, error: { name: "BadRequest", message: "request is not a JSON object" } });
    return;
  }
  const id = req.id ?? null;
  try {
    const result = await peer.dispatch(req);
    write({ id, ok: true, result });
  } catch (e) {
    if (process.env.TSMLS_PEER_DEBUG) process.stderr.write(String(e?.stack ?? e) + "\n");
    write({ id, ok: false, error: errorOf(e) });
  }
}

// A promise chain serialises the requests: readline emits lines as they come,
// but each one waits for the previous to finish.
let queue = Promise.resolve();
const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  if (line.trim() === "") return;
  queue = queue.then(() => handle(line));
});
rl.on("close", () => {
  queue.then(() => process.exit(0));
});

// Nothing asynchronous may take the process down: report and go on.
process.on("unhandledRejection", (e) => {
  process.stderr.write("peer: unhandled rejection: " + (e?.stack ?? String(e)) + "\n");
});
process.on("uncaughtException", (e) => {
  process.stderr.write("peer: uncaught exception: " + (e?.stack ?? String(e)) + "\n");
});
