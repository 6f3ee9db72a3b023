// ops.mjs: the operations of the ts-mls peer. Each takes the parsed request
// and returns a JSON-able result, or throws; peer.mjs turns either into one
// response line. docs/interop.md lists every operation with its arguments.

import { readFileSync } from "node:fs";
import {
  acceptAll,
  createApplicationMessage,
  createCommit,
  createGroup,
  createGroupInfoWithExternalPub,
  createGroupInfoWithExternalPubAndRatchetTree,
  createProposal,
  decodeGroupState,
  decodeMlsMessage,
  defaultCapabilities,
  defaultLifetime,
  defaultPaddingConfig,
  emptyPskIndex,
  encodeGroupState,
  encodeMlsMessage,
  generateKeyPackageWithKey,
  getCiphersuiteFromName,
  getCiphersuiteImpl,
  joinGroup,
  joinGroupExternal,
  makePskIndex,
  mlsExporter,
  processMessage,
  zeroOutUint8Array,
} from "ts-mls";
import { defaultClientConfig } from "ts-mls/clientConfig.js";
import { decodeKeyPackage, makeKeyPackageRef } from "ts-mls/keyPackage.js";
import { decodeRatchetTree, encodeRatchetTree } from "ts-mls/ratchetTree.js";
import { treeHashRoot } from "ts-mls/treeHash.js";
import { decryptSenderData } from "ts-mls/privateMessage.js";
import { encodeLeafNodeTBS } from "ts-mls/leafNode.js";
import { signWithLabel } from "ts-mls/crypto/signature.js";
import {
  BadRequest,
  didKey,
  ed25519PublicKey,
  equalBytes,
  fromHex,
  optionalHex,
  requireString,
  requireUint,
  toBigUint,
  toHex,
} from "./codec.mjs";
import { benchMessage, benchPairSession } from "./bench.mjs";

export const cipherSuiteName = "MLS_128_DHKEMX25519_AES128GCM_SHA256_Ed25519";

const utf8 = new TextDecoder("utf-8", { fatal: false });
const te = new TextEncoder();

function tsMlsVersion() {
  const url = new URL("./node_modules/ts-mls/package.json", import.meta.url);
  return JSON.parse(readFileSync(url, "utf8")).version;
}

// Actor is one member: an Ed25519 identity, its unused KeyPackages (private
// halves kept until a Welcome consumes one) and at most one group state.
class Actor {
  constructor(name, seed, publicKey, identity) {
    this.name = name;
    this.seed = seed;
    this.publicKey = publicKey;
    this.identity = identity;
    this.keyPackages = new Map(); // ref hex -> {publicPackage, privatePackage}
    this.state = undefined;
    this.pendingUpdates = []; // {pub, priv} of Update proposals not yet committed
  }

  requireState() {
    if (this.state === undefined) throw new BadRequest(`actor ${this.name} is in no group`);
    return this.state;
  }
}

// readsRfcExternalPub returns cs, or, when groupInfo's external_pub
// extension holds the RFC 9420 form (Section 12.4.3.2: an HPKEPublicKey,
// that is the key with its one-byte length prefix), a copy of cs whose HPKE
// imports exactly those bytes as the key without the prefix. ts-mls 1.6.4
// writes and reads the bare key (docs/interop.md); this is the only place
// it reads external_pub, and nothing else it imports looks like that.
function readsRfcExternalPub(cs, groupInfo) {
  const ext = groupInfo.extensions.find((e) => e.extensionType === "external_pub");
  const data = ext?.extensionData;
  if (data === undefined || data.length !== 33 || data[0] !== 32) return cs;
  const hpke = {
    ...cs.hpke,
    importPublicKey: (k) => cs.hpke.importPublicKey(equalBytes(k, data) ? k.subarray(1) : k),
  };
  return { ...cs, hpke };
}

export class Peer {
  constructor(cs) {
    this.cs = cs;
    this.actors = new Map();
  }

  static async create() {
    const cs = await getCiphersuiteImpl(getCiphersuiteFromName(cipherSuiteName));
    return new Peer(cs);
  }

  async dispatch(req) {
    const op = this.ops[req.op];
    if (op === undefined) throw new BadRequest(`unknown op ${JSON.stringify(req.op)}`);
    return op.call(this, req);
  }

  actor(req) {
    const name = requireString(req.actor, "actor");
    const a = this.actors.get(name);
    if (a === undefined) throw new BadRequest(`no actor ${JSON.stringify(name)}`);
    return a;
  }

  get ops() {
    return {
      hello: this.hello,
      newActor: this.newActor,
      dropActor: this.dropActor,
      keyPackage: this.keyPackage,
      createGroup: this.createGroup,
      commit: this.commit,
      propose: this.propose,
      join: this.join,
      joinExternal: this.joinExternal,
      process: this.process,
      encrypt: this.encrypt,
      exportTree: this.exportTree,
      state: this.summaryOp,
      groupInfo: this.groupInfo,
      save: this.save,
      restore: this.restore,
      bench: this.bench,
    };
  }

  hello() {
    return {
      tsMls: tsMlsVersion(),
      node: process.version,
      cipherSuite: cipherSuiteName,
      paddingConfig: defaultPaddingConfig,
      defaultLifetime: {
        notBefore: defaultLifetime.notBefore.toString(),
        notAfter: defaultLifetime.notAfter.toString(),
      },
    };
  }

  // newActor {actor, seed?, identity?}: seed is the 32-byte Ed25519 seed (a
  // fresh random one when absent); identity is the basic credential's
  // identity as a string, by default the did:key of the seed's public key.
  // A different identity is allowed on purpose, to test credential binding.
  newActor(req) {
    const name = requireString(req.actor, "actor");
    if (this.actors.has(name)) throw new BadRequest(`actor ${JSON.stringify(name)} exists`);
    const seed = optionalHex(req.seed, "seed") ?? this.cs.rng.randomBytes(32);
    if (seed.length !== 32) throw new BadRequest("seed: want 32 bytes");
    const publicKey = ed25519PublicKey(seed);
    const did = didKey(publicKey);
    const identity = req.identity === undefined ? did : requireString(req.identity, "identity");
    this.actors.set(name, new Actor(name, seed, publicKey, identity));
    return { actor: name, signaturePublicKey: toHex(publicKey), identity, did };
  }

  dropActor(req) {
    const a = this.actor(req);
    this.actors.delete(a.name);
    return {};
  }

  async newKeyPackage(a, lifetime) {
    const credential = { credentialType: "basic", identity: te.encode(a.identity) };
    return generateKeyPackageWithKey(
      credential,
      defaultCapabilities(),
      lifetime ?? defaultLifetime,
      [],
      { signKey: a.seed, publicKey: a.publicKey },
      this.cs,
    );
  }

  // keyPackage {actor, lifetime?: {notBefore, notAfter}} generates a
  // KeyPackage with ts-mls defaults and keeps its private half for join.
  async keyPackage(req) {
    const a = this.actor(req);
    let lifetime;
    if (req.lifetime !== undefined) {
      lifetime = {
        notBefore: toBigUint(req.lifetime.notBefore, "lifetime.notBefore"),
        notAfter: toBigUint(req.lifetime.notAfter, "lifetime.notAfter"),
      };
    }
    const kp = await this.newKeyPackage(a, lifetime);
    const ref = await makeKeyPackageRef(kp.publicPackage, this.cs.hash);
    a.keyPackages.set(toHex(ref), kp);
    const bytes = encodeMlsMessage({ version: "mls10", wireformat: "mls_key_package", keyPackage: kp.publicPackage });
    return { keyPackage: toHex(bytes), ref: toHex(ref) };
  }

  async createGroup(req) {
    const a = this.actor(req);
    if (a.state !== undefined) throw new BadRequest(`actor ${a.name} is already in a group`);
    const groupId = fromHex(req.groupId, "groupId");
    const kp = await this.newKeyPackage(a);
    a.state = await createGroup(groupId, kp.publicPackage, kp.privatePackage, [], this.cs);
    return this.summary(a.state, req.exporter);
  }

  // commit {actor, add?: [KeyPackage], remove?: [leaf], update?,
  // wireAsPublicMessage?, ratchetTreeExtension?} commits the given proposals
  // by value together with every proposal received in this epoch (by
  // reference). A commit always carries a path when it must (RFC 9420
  // Section 12.4); update: true asks for a path and is refused when ts-mls
  // would send none (a commit of Adds only).
  async commit(req) {
    const a = this.actor(req);
    const state = a.requireState();
    const extraProposals = [];
    for (const [i, kp] of (req.add ?? []).entries()) {
      extraProposals.push({ proposalType: "add", add: { keyPackage: decodeKeyPackageArg(kp, `add[${i}]`) } });
    }
    for (const [i, leaf] of (req.remove ?? []).entries()) {
      extraProposals.push({ proposalType: "remove", remove: { removed: requireUint(leaf, `remove[${i}]`) } });
    }
    if (req.update === true && !commitHasPath(state, extraProposals)) {
      throw new BadRequest("update: ts-mls 1.6.4 sends no path with a commit of Adds only; commit without add for a self-update");
    }
    const res = await createCommit(
      { state, cipherSuite: this.cs },
      {
        extraProposals,
        wireAsPublicMessage: req.wireAsPublicMessage === true,
        ratchetTreeExtension: req.ratchetTreeExtension === true,
      },
    );
    a.state = res.newState;
    a.pendingUpdates = [];
    zeroAll(res.consumed);
    const welcome = res.welcome === undefined
      ? null
      : toHex(encodeMlsMessage({ version: "mls10", wireformat: "mls_welcome", welcome: res.welcome }));
    return {
      commit: toHex(encodeMlsMessage(res.commit)),
      welcome,
      ratchetTree: toHex(encodeRatchetTree(a.state.ratchetTree)),
      summary: await this.summary(a.state, req.exporter),
    };
  }

  // propose {actor, proposal: {type: "add", keyPackage} | {type: "remove",
  // leaf} | {type: "update"}, wireAsPublicMessage?} sends a proposal for a
  // later commit by reference (RFC 9420 Section 12.1). ts-mls 1.6.4 has no
  // call that makes an Update proposal, so the peer builds the LeafNode
  // itself: a fresh HPKE key, leaf_node_source update, signed over
  // LeafNodeTBS with group_id and leaf_index (Section 7.2).
  async propose(req) {
    const a = this.actor(req);
    const state = a.requireState();
    const p = req.proposal ?? {};
    let proposal;
    let pendingUpdate;
    switch (p.type) {
      case "add":
        proposal = { proposalType: "add", add: { keyPackage: decodeKeyPackageArg(p.keyPackage, "proposal.keyPackage") } };
        break;
      case "remove":
        proposal = { proposalType: "remove", remove: { removed: requireUint(p.leaf, "proposal.leaf") } };
        break;
      case "update": {
        const built = await this.updateProposal(state);
        proposal = built.proposal;
        pendingUpdate = built.pending;
        break;
      }
      default:
        throw new BadRequest(`proposal.type: want add, remove or update, got ${JSON.stringify(p.type)}`);
    }
    const before = new Set(Object.keys(state.unappliedProposals));
    const res = await createProposal(state, req.wireAsPublicMessage === true, proposal, this.cs);
    a.state = res.newState;
    zeroAll(res.consumed);
    if (pendingUpdate !== undefined) a.pendingUpdates.push(pendingUpdate);
    const added = Object.keys(a.state.unappliedProposals).filter((k) => !before.has(k));
    return {
      message: toHex(encodeMlsMessage(res.message)),
      ref: added.length === 1 ? toHex(Buffer.from(added[0], "base64")) : null,
    };
  }

  async updateProposal(state) {
    const leafIndex = state.privatePath.leafIndex;
    const own = state.ratchetTree[2 * leafIndex].leaf;
    const kp = await this.cs.hpke.generateKeyPair();
    const pub = await this.cs.hpke.exportPublicKey(kp.publicKey);
    const priv = await this.cs.hpke.exportPrivateKey(kp.privateKey);
    const data = {
      hpkePublicKey: pub,
      signaturePublicKey: own.signaturePublicKey,
      credential: own.credential,
      capabilities: own.capabilities,
      leafNodeSource: "update",
      extensions: own.extensions,
    };
    const tbs = { ...data, groupId: state.groupContext.groupId, leafIndex };
    const signature = await signWithLabel(state.signaturePrivateKey, "LeafNodeTBS", encodeLeafNodeTBS(tbs), this.cs.signature);
    return {
      proposal: { proposalType: "update", update: { leafNode: { ...data, signature } } },
      pending: { pub, priv },
    };
  }

  // join {actor, welcome, ratchetTree?} joins with whichever of the actor's
  // KeyPackages the Welcome names, then deletes that KeyPackage.
  async join(req) {
    const a = this.actor(req);
    if (a.state !== undefined) throw new BadRequest(`actor ${a.name} is already in a group`);
    const msg = decodeMessageArg(req.welcome, "welcome");
    if (msg.wireformat !== "mls_welcome") throw new BadRequest(`welcome: wire format is ${msg.wireformat}`);
    const tree = req.ratchetTree ? decodeTreeArg(req.ratchetTree) : undefined;
    const newMembers = new Set(msg.welcome.secrets.map((s) => toHex(s.newMember)));
    const ref = [...a.keyPackages.keys()].find((r) => newMembers.has(r));
    if (ref === undefined) throw new BadRequest(`welcome: addresses none of ${a.name}'s KeyPackages`);
    const kp = a.keyPackages.get(ref);
    a.state = await joinGroup(msg.welcome, kp.publicPackage, kp.privatePackage, emptyPskIndex, this.cs, tree);
    a.keyPackages.delete(ref);
    return this.summary(a.state, req.exporter);
  }

  // joinExternal {actor, groupInfo, ratchetTree?} joins by external commit
  // (RFC 9420 Section 12.4.3.2) and returns the commit for the members.
  // ts-mls 1.6.4 reads external_pub as the bare key; readsRfcExternalPub
  // lets it read the RFC form (docs/interop.md).
  async joinExternal(req) {
    const a = this.actor(req);
    if (a.state !== undefined) throw new BadRequest(`actor ${a.name} is already in a group`);
    const msg = decodeMessageArg(req.groupInfo, "groupInfo");
    if (msg.wireformat !== "mls_group_info") throw new BadRequest(`groupInfo: wire format is ${msg.wireformat}`);
    const tree = req.ratchetTree ? decodeTreeArg(req.ratchetTree) : undefined;
    const kp = await this.newKeyPackage(a);
    const cs = readsRfcExternalPub(this.cs, msg.groupInfo);
    const res = await joinGroupExternal(msg.groupInfo, kp.publicPackage, kp.privatePackage, false, cs, tree);
    a.state = res.newState;
    return {
      commit: toHex(encodeMlsMessage({ version: "mls10", wireformat: "mls_public_message", publicMessage: res.publicMessage })),
      summary: await this.summary(a.state, req.exporter),
    };
  }

  // process {actor, message} handles any MLSMessage for the group: commit,
  // proposal or application message. The result names the MLS-authenticated
  // sender (leaf index and credential identity) as the tree of the
  // message's epoch had it.
  async process(req) {
    const a = this.actor(req);
    const state = a.requireState();
    const msg = decodeMessageArg(req.message, "message");
    if (msg.wireformat !== "mls_private_message" && msg.wireformat !== "mls_public_message") {
      throw new BadRequest(`message: wire format ${msg.wireformat} is not a group message`);
    }
    const seen = {};
    const callback = (incoming) => {
      seen.kind = incoming.kind;
      if (incoming.kind === "commit") {
        seen.senderLeafIndex = incoming.senderLeafIndex;
        seen.proposals = incoming.proposals.map((p) => proposalTypeName(p.proposal));
      } else {
        seen.senderLeafIndex = incoming.proposal.senderLeafIndex;
        seen.proposals = [proposalTypeName(incoming.proposal.proposal)];
      }
      return acceptAll();
    };
    const appSender = await this.applicationSender(state, msg);
    const res = await this.processWithUpdates(a, msg, callback);
    a.state = res.newState;
    zeroAll(res.consumed);
    if (res.kind === "applicationMessage") {
      return {
        kind: "application",
        sender: appSender,
        applicationData: toHex(res.message),
        summary: await this.summary(a.state, req.exporter),
      };
    }
    if (seen.kind === "commit") a.pendingUpdates = [];
    return {
      kind: seen.kind,
      sender: seen.senderLeafIndex === undefined ? null : memberAt(state.ratchetTree, seen.senderLeafIndex),
      proposals: seen.proposals,
      summary: await this.summary(a.state, req.exporter),
    };
  }

  // processWithUpdates processes msg; when the actor has Update proposals
  // outstanding and the message commits one of them, the actor's leaf HPKE
  // private key must be the Update's before the UpdatePath can be decrypted.
  // ts-mls 1.6.4 does not track this, so the peer retries with the new key.
  async processWithUpdates(a, msg, callback) {
    const state = a.state;
    const leafNode = 2 * state.privatePath.leafIndex;
    let firstErr;
    try {
      const res = await processMessage(msg, state, makePskIndex(state, {}), callback, this.cs);
      const leaf = res.newState.ratchetTree[leafNode]?.leaf;
      if (!a.pendingUpdates.some((u) => equalBytes(u.pub, leaf?.hpkePublicKey))) return res;
    } catch (e) {
      firstErr = e;
    }
    for (const u of a.pendingUpdates) {
      const swapped = {
        ...state,
        privatePath: { ...state.privatePath, privateKeys: { ...state.privatePath.privateKeys, [leafNode]: u.priv } },
      };
      try {
        const res = await processMessage(msg, swapped, makePskIndex(swapped, {}), callback, this.cs);
        if (equalBytes(res.newState.ratchetTree[leafNode]?.leaf?.hpkePublicKey, u.pub)) return res;
      } catch {
        // Not this update; try the next, then report the first error.
      }
    }
    throw firstErr ?? new Error("commit applied an Update of ours whose private key is unknown");
  }

  async applicationSender(state, msg) {
    if (msg.wireformat !== "mls_private_message" || msg.privateMessage.contentType !== "application") return null;
    const pm = msg.privateMessage;
    let secret = state.keySchedule.senderDataSecret;
    let tree = state.ratchetTree;
    if (pm.epoch < state.groupContext.epoch) {
      const old = state.historicalReceiverData.get(pm.epoch);
      if (old === undefined) return null;
      secret = old.senderDataSecret;
      tree = old.ratchetTree;
    }
    const sd = await decryptSenderData(pm, secret, this.cs).catch(() => undefined);
    return sd === undefined ? null : memberAt(tree, sd.leafIndex);
  }

  async encrypt(req) {
    const a = this.actor(req);
    const state = a.requireState();
    const plaintext = fromHex(req.plaintext, "plaintext");
    const aad = optionalHex(req.authenticatedData, "authenticatedData");
    const res = await createApplicationMessage(state, plaintext, this.cs, aad);
    a.state = res.newState;
    zeroAll(res.consumed);
    return {
      message: toHex(encodeMlsMessage({ version: "mls10", wireformat: "mls_private_message", privateMessage: res.privateMessage })),
    };
  }

  exportTree(req) {
    const a = this.actor(req);
    return { ratchetTree: toHex(encodeRatchetTree(a.requireState().ratchetTree)) };
  }

  summaryOp(req) {
    return this.summary(this.actor(req).requireState(), req.exporter);
  }

  // groupInfo {actor, ratchetTree?} signs a GroupInfo with the external_pub
  // extension (RFC 9420 Section 12.4.3.2), and the ratchet_tree extension
  // when asked.
  async groupInfo(req) {
    const a = this.actor(req);
    const state = a.requireState();
    const gi = req.ratchetTree === true
      ? await createGroupInfoWithExternalPubAndRatchetTree(state, [], this.cs)
      : await createGroupInfoWithExternalPub(state, [], this.cs);
    return { groupInfo: toHex(encodeMlsMessage({ version: "mls10", wireformat: "mls_group_info", groupInfo: gi })) };
  }

  // save returns encodeGroupState of the actor's state: ts-mls's own format,
  // holding every secret, never an interop format.
  save(req) {
    const a = this.actor(req);
    return { state: toHex(encodeGroupState(a.requireState())) };
  }

  // restore {actor, state} replaces the actor's group state by a saved one.
  // clientConfig is not part of the encoding; the defaults are put back.
  async restore(req) {
    const a = this.actor(req);
    const bytes = fromHex(req.state, "state");
    const decoded = decodeGroupState(bytes, 0);
    if (decoded === undefined || decoded[1] !== bytes.length) throw new BadRequest("state: not a ts-mls group state");
    a.state = { ...decoded[0], clientConfig: defaultClientConfig };
    a.pendingUpdates = [];
    return this.summary(a.state, req.exporter);
  }

  // bench {kind: "pairSession" | "message", iterations, size?} measures in
  // this process; see bench.mjs for what each iteration includes.
  async bench(req) {
    const n = requireUint(req.iterations, "iterations");
    if (n === 0) throw new BadRequest("iterations: want at least 1");
    switch (req.kind) {
      case "pairSession":
        return benchPairSession(this.cs, n);
      case "message":
        return benchMessage(this.cs, n, req.size === undefined ? 1024 : requireUint(req.size, "size"));
      default:
        throw new BadRequest(`kind: want pairSession or message, got ${JSON.stringify(req.kind)}`);
    }
  }

  // summary is what the Go tests compare across members after every step.
  // treeHash is ts-mls's own tree hash of the root (RFC 9420 Section 7.8,
  // treeHashRoot), checked against the GroupContext's tree_hash.
  // A member removed by a commit keeps its last epoch's GroupContext (ts-mls
  // cannot derive the next epoch for it) with the tree after the removal, so
  // the check is skipped for it and treeHash is the GroupContext's.
  async summary(state, exporter) {
    const treeHash = state.groupContext.treeHash;
    if (state.groupActiveState.kind === "active" && !equalBytes(await treeHashRoot(state.ratchetTree, this.cs.hash), treeHash)) {
      throw new Error("ts-mls state inconsistent: tree hash differs from the GroupContext's");
    }
    const members = [];
    for (let i = 0; 2 * i < state.ratchetTree.length; i++) {
      if (state.ratchetTree[2 * i] !== undefined) members.push(memberAt(state.ratchetTree, i));
    }
    const out = {
      groupId: toHex(state.groupContext.groupId),
      epoch: Number(state.groupContext.epoch),
      epochAuthenticator: toHex(state.keySchedule.epochAuthenticator),
      treeHash: toHex(treeHash),
      confirmedTranscriptHash: toHex(state.groupContext.confirmedTranscriptHash),
      ownLeafIndex: state.privatePath.leafIndex,
      active: state.groupActiveState.kind,
      members,
    };
    if (exporter !== undefined && exporter !== null) {
      const label = typeof exporter.label === "string" ? exporter.label : "";
      const ctx = optionalHex(exporter.context, "exporter.context") ?? new Uint8Array();
      const len = requireUint(exporter.length, "exporter.length");
      out.exporter = toHex(await mlsExporter(state.keySchedule.exporterSecret, label, ctx, len, this.cs));
    }
    return out;
  }
}

function memberAt(tree, leafIndex) {
  const leaf = tree[2 * leafIndex]?.leaf;
  if (leaf === undefined) return { leafIndex, signatureKey: null, identity: null };
  const cred = leaf.credential;
  const identity = cred.credentialType === "basic" ? utf8.decode(cred.identity) : null;
  return {
    leafIndex,
    signatureKey: toHex(leaf.signaturePublicKey),
    encryptionKey: toHex(leaf.hpkePublicKey),
    credentialType: cred.credentialType,
    identity,
  };
}

function proposalTypeName(p) {
  return typeof p.proposalType === "string" ? p.proposalType : `custom(${p.proposalType})`;
}

// commitHasPath mirrors ts-mls 1.6.4 applyProposals: a path is sent when
// there are no proposals at all or any Update or Remove among them.
function commitHasPath(state, extra) {
  const all = [...extra, ...Object.values(state.unappliedProposals).map((p) => p.proposal)];
  return all.length === 0 || all.some((p) => p.proposalType === "update" || p.proposalType === "remove");
}

function decodeMessageArg(hex, name) {
  const bytes = fromHex(hex, name);
  const res = decodeMlsMessage(bytes, 0);
  if (res === undefined) throw new BadRequest(`${name}: not an MLSMessage`);
  if (res[1] !== bytes.length) throw new BadRequest(`${name}: ${bytes.length - res[1]} trailing bytes after the MLSMessage`);
  return res[0];
}

// decodeKeyPackageArg accepts an MLSMessage-wrapped KeyPackage (what a
// relay serves) or a bare KeyPackage.
function decodeKeyPackageArg(hex, name) {
  const bytes = fromHex(hex, name);
  const msg = decodeMlsMessage(bytes, 0);
  if (msg !== undefined && msg[1] === bytes.length && msg[0].wireformat === "mls_key_package") return msg[0].keyPackage;
  const kp = decodeKeyPackage(bytes, 0);
  if (kp !== undefined && kp[1] === bytes.length) return kp[0];
  throw new BadRequest(`${name}: neither an MLSMessage KeyPackage nor a KeyPackage`);
}

function decodeTreeArg(hex) {
  const bytes = fromHex(hex, "ratchetTree");
  const res = decodeRatchetTree(bytes, 0);
  if (res === undefined || res[1] !== bytes.length) throw new BadRequest("ratchetTree: not a ratchet tree");
  return res[0];
}

// zeroAll overwrites the secrets a ts-mls call reports as consumed, as the
// library expects its caller to do (it does not do it itself).
function zeroAll(consumed) {
  for (const s of consumed ?? []) zeroOutUint8Array(s);
}
