// bench.mjs measures ts-mls in this process, so that the Go benchmarks can
// report its figures next to Torpor's own in one `make bench` run. The
// JSON-lines round trip is outside every measured interval.
//
// pairSession, per iteration (draft-chapman-a2a-mls-03 Section 6.2):
//   untimed: the joiner's KeyPackage is generated and wire-encoded (it was
//            published to the relay long before);
//   timed:   decode that KeyPackage, generate the initiator's own
//            KeyPackage and create the group, commit the Add (ts-mls
//            defaults: PrivateMessage, no ratchet_tree extension), encode
//            the Welcome and the ratchet tree, decode both, join.
// message, per iteration: encrypt `size` bytes (default 1 KiB) as an
//   application message, encode it, decode it, decrypt it at the other
//   member; both members are set up once, untimed.

import {
  createApplicationMessage,
  createCommit,
  createGroup,
  decodeMlsMessage,
  defaultCapabilities,
  defaultLifetime,
  emptyPskIndex,
  encodeMlsMessage,
  generateKeyPackageWithKey,
  joinGroup,
  makePskIndex,
  processMessage,
  acceptAll,
} from "ts-mls";
import { decodeRatchetTree, encodeRatchetTree } from "ts-mls/ratchetTree.js";
import { didKey, ed25519PublicKey, equalBytes } from "./codec.mjs";

const te = new TextEncoder();

async function member(cs) {
  const seed = cs.rng.randomBytes(32);
  const publicKey = ed25519PublicKey(seed);
  return { seed, publicKey, identity: te.encode(didKey(publicKey)) };
}

function keyPackage(cs, m) {
  return generateKeyPackageWithKey(
    { credentialType: "basic", identity: m.identity },
    defaultCapabilities(),
    defaultLifetime,
    [],
    { signKey: m.seed, publicKey: m.publicKey },
    cs,
  );
}

async function establish(cs, a, b, bKP, bKPBytes) {
  const [decoded] = decodeMlsMessage(bKPBytes, 0);
  const aKP = await keyPackage(cs, a);
  const groupId = cs.rng.randomBytes(16);
  const aState = await createGroup(groupId, aKP.publicPackage, aKP.privatePackage, [], cs);
  const res = await createCommit(
    { state: aState, cipherSuite: cs },
    { extraProposals: [{ proposalType: "add", add: { keyPackage: decoded.keyPackage } }] },
  );
  const welcomeBytes = encodeMlsMessage({ version: "mls10", wireformat: "mls_welcome", welcome: res.welcome });
  const treeBytes = encodeRatchetTree(res.newState.ratchetTree);
  const [welcome] = decodeMlsMessage(welcomeBytes, 0);
  const [tree] = decodeRatchetTree(treeBytes, 0);
  const bState = await joinGroup(welcome.welcome, bKP.publicPackage, bKP.privatePackage, emptyPskIndex, cs, tree);
  return [res.newState, bState];
}

export async function benchPairSession(cs, n) {
  const a = await member(cs);
  const b = await member(cs);
  let total = 0n;
  for (let i = 0; i < n; i++) {
    const bKP = await keyPackage(cs, b);
    const bKPBytes = encodeMlsMessage({ version: "mls10", wireformat: "mls_key_package", keyPackage: bKP.publicPackage });
    const start = process.hrtime.bigint();
    const [aState, bState] = await establish(cs, a, b, bKP, bKPBytes);
    total += process.hrtime.bigint() - start;
    if (!equalBytes(aState.keySchedule.epochAuthenticator, bState.keySchedule.epochAuthenticator)) {
      throw new Error("bench: members disagree on the epoch authenticator");
    }
  }
  return result(n, total);
}

export async function benchMessage(cs, n, size) {
  const a = await member(cs);
  const b = await member(cs);
  const bKP = await keyPackage(cs, b);
  const bKPBytes = encodeMlsMessage({ version: "mls10", wireformat: "mls_key_package", keyPackage: bKP.publicPackage });
  let [aState, bState] = await establish(cs, a, b, bKP, bKPBytes);
  const plaintext = cs.rng.randomBytes(size);
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const enc = await createApplicationMessage(aState, plaintext, cs);
    aState = enc.newState;
    const wire = encodeMlsMessage({ version: "mls10", wireformat: "mls_private_message", privateMessage: enc.privateMessage });
    const [msg] = decodeMlsMessage(wire, 0);
    const dec = await processMessage(msg, bState, makePskIndex(bState, {}), acceptAll, cs);
    bState = dec.newState;
    if (dec.kind !== "applicationMessage" || !equalBytes(dec.message, plaintext)) {
      throw new Error("bench: decrypted message differs");
    }
  }
  return result(n, process.hrtime.bigint() - start);
}

function result(n, totalNs) {
  return { iterations: n, totalNs: Number(totalNs), nsPerOp: Number(totalNs) / n };
}
