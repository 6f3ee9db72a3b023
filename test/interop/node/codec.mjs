// codec.mjs: hex, did:key and argument checking shared by the operations.

import { createPrivateKey, createPublicKey } from "node:crypto";

// BadRequest is thrown for a malformed argument, so that the caller can tell
// its own mistake from an error ts-mls raised.
export class BadRequest extends Error {
  constructor(message) {
    super(message);
    this.name = "BadRequest";
  }
}

export function toHex(bytes) {
  if (bytes === undefined || bytes === null) return null;
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

const hexRe = /^(?:[0-9a-f]{2})*$/;

// fromHex decodes a lowercase or uppercase even-length hex string; anything
// else is a BadRequest naming the argument.
export function fromHex(s, name) {
  if (typeof s !== "string" || !hexRe.test(s.toLowerCase())) {
    throw new BadRequest(`${name}: want a hex string`);
  }
  return new Uint8Array(Buffer.from(s, "hex"));
}

export function optionalHex(s, name) {
  return s === undefined || s === null || s === "" ? undefined : fromHex(s, name);
}

export function requireString(s, name) {
  if (typeof s !== "string" || s === "") throw new BadRequest(`${name}: want a non-empty string`);
  return s;
}

export function requireUint(n, name) {
  if (!Number.isSafeInteger(n) || n < 0) throw new BadRequest(`${name}: want a non-negative integer`);
  return n;
}

// toBigUint accepts a JSON number or a decimal string (for uint64 values
// beyond 2^53, such as the default KeyPackage not_after).
export function toBigUint(v, name) {
  if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  if (typeof v === "string" && /^[0-9]+$/.test(v)) {
    const b = BigInt(v);
    if (b < 2n ** 64n) return b;
  }
  throw new BadRequest(`${name}: want a uint64 as a number or a decimal string`);
}

// RFC 8410 PKCS#8 prefix for an Ed25519 private key; the 32-byte seed follows.
const pkcs8Ed25519Prefix = Buffer.from("302e020100300506032b657004220420", "hex");

// ed25519PublicKey derives the raw 32-byte public key from a 32-byte seed.
export function ed25519PublicKey(seed) {
  const priv = createPrivateKey({ key: Buffer.concat([pkcs8Ed25519Prefix, seed]), format: "der", type: "pkcs8" });
  const spki = createPublicKey(priv).export({ format: "der", type: "spki" });
  return new Uint8Array(spki.subarray(spki.length - 32));
}

const base58Alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

function base58btc(bytes) {
  let n = 0n;
  for (const b of bytes) n = n * 256n + BigInt(b);
  let out = "";
  while (n > 0n) {
    out = base58Alphabet[Number(n % 58n)] + out;
    n /= 58n;
  }
  for (const b of bytes) {
    if (b !== 0) break;
    out = "1" + out;
  }
  return out;
}

// didKey encodes an Ed25519 public key as did:key (multicodec ed25519-pub
// 0xed 0x01, multibase base58btc "z"), the identity of draft-chapman-a2a-mls-03
// Section 4.1. The Go tests compare it with the did package's encoding.
export function didKey(publicKey) {
  return "did:key:z" + base58btc(new Uint8Array([0xed, 0x01, ...publicKey]));
}

export function equalBytes(a, b) {
  if (a === undefined || b === undefined || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
