// The JavaScript snippet of docs/a2a.md ("Building the signed object"):
// signs a Governed Object with a fresh Ed25519 key and prints it as the A2A
// data part a device takes. test/relay (TestJSObjectSnippet) runs it and
// verifies what it prints with package governed.
//
// usage: node object.mjs

// docs/a2a.md: begin Object
import canonicalize from "canonicalize"; // RFC 8785 (JSON Canonicalization Scheme)
import { ed25519 } from "@noble/curves/ed25519"; // RFC 8032
import { base58 } from "@scure/base";

// The sender's did:key: multicodec ed25519-pub (0xed 0x01) and the public
// key, base58btc with the multibase prefix "z".
const secretKey = ed25519.utils.randomPrivateKey();
const publicKey = ed25519.getPublicKey(secretKey);
const issuerDid = "did:key:z" + base58.encode(Uint8Array.of(0xed, 0x01, ...publicKey));

// The signed members (draft-chapman-a2a-mls-03, Section 5.3).
const object = {
  version: 1,
  id: crypto.randomUUID(),
  issuerDid,
  issuedAt: new Date().toISOString(),
  semantic: { schema: "https://atom.qwixl.dev/schema/CommsMessage" },
  payload: { text: "hello" },
  governance: { purpose: "comms:message", ttlSeconds: 3600 },
};
// Ed25519 over the canonical form, standard base64 with padding (Section 5.4).
const signature = ed25519.sign(new TextEncoder().encode(canonicalize(object)), secretKey);
const signed = { ...object, signatureAlgorithm: "ed25519", signature: Buffer.from(signature).toString("base64") };

// The A2A data part that carries it (docs/a2a.md, "What to send").
const mediaType = "application/vnd.atom.data-object+json;version=1";
const part = { data: { mediaType, object: signed }, mediaType };
console.log(JSON.stringify(part));
// docs/a2a.md: end Object
