// Sends one message to an A2A agent with the @a2a-js/sdk client and prints,
// as one JSON line, what the client reported to its caller: the result, or
// the error it threw (name, message, JSON-RPC code and data).
//
// usage: node send.mjs <agent base URL> <DID Bearer token> <1.0|0.3> [data]
//        node send.mjs <agent base URL> <DID Bearer token> from-url
//        node send.mjs <agent base URL> <DID Bearer token> card|card-0.3
//
// The message has one part: the JSON data given (a Governed Object part's
// data, with its mediaType), or without it the text "hello, sleeping agent".
//
// The agent card is fetched from <base>/.well-known/agent-card.json by the
// SDK's resolver. For 0.3 the card's interfaces are narrowed to the 0.3 one
// so that the SDK's v0.3 (legacy) JSON-RPC transport sends message/send.
// from-url instead hands the base URL as given to the SDK's
// ClientFactory.createFromUrl, as an A2A developer would, and reports the
// protocol version of the client it made, or the error it threw. card
// prints the card the SDK's resolver read (its interfaces' protocol versions
// and its security schemes, as the SDK gives them); card-0.3 does the same
// for the card's A2A 0.3 view, which the relay serves to a request without
// A2A-Version, read by the resolver with legacyCompat.
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";
import { Role } from "@a2a-js/sdk";

const [baseArg, token, version, dataArg] = process.argv.slice(2);
// The resolver resolves the card path relative to the base: keep the last
// path segment (the DID) by ending the base with a slash.
const base = baseArg?.endsWith("/") ? baseArg : `${baseArg}/`;
if (!baseArg || !token || !["1.0", "0.3", "from-url", "card", "card-0.3"].includes(version)) {
  console.error("usage: node send.mjs <agent base URL> <token> <1.0|0.3|from-url|card|card-0.3>");
  process.exit(2);
}

// Every request carries the DID Bearer token.
const fetchImpl = (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${token}`);
  return fetch(url, { ...init, headers });
};

const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
  transports: [new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })],
  cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
});
const factory = new ClientFactory(options);

const out = { version };
if (version.startsWith("card")) {
  // card-0.3 drops the A2A-Version header the resolver sends.
  const cardFetch = (url, init = {}) => {
    const headers = new Headers(init.headers);
    if (version === "card-0.3") headers.delete("A2A-Version");
    return fetch(url, { ...init, headers });
  };
  try {
    const resolver = new DefaultAgentCardResolver({ fetchImpl: cardFetch, legacyCompat: { enabled: version === "card-0.3" } });
    const card = await resolver.resolve(base);
    out.ok = true;
    out.cardInterfaces = card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion} ${i.url}`);
    out.securitySchemes = card.securitySchemes;
  } catch (err) {
    out.ok = false;
    out.error = { name: err?.name, message: err?.message };
  }
  console.log(JSON.stringify(out));
  process.exit(0);
}
if (version === "from-url") {
  try {
    const client = await factory.createFromUrl(baseArg);
    out.ok = true;
    out.clientProtocolVersion = client.protocolVersion;
  } catch (err) {
    out.ok = false;
    out.error = { name: err?.name, message: err?.message };
  }
  console.log(JSON.stringify(out));
  process.exit(0);
}
try {
  const resolver = new DefaultAgentCardResolver({ fetchImpl });
  const card = await resolver.resolve(base);
  out.cardInterfaces = card.supportedInterfaces.map((i) => i.protocolVersion);
  if (version === "0.3") {
    card.supportedInterfaces = card.supportedInterfaces.filter((i) => i.protocolVersion === "0.3");
  } else {
    card.supportedInterfaces = card.supportedInterfaces.filter((i) => i.protocolVersion === "1.0");
  }
  const client = await factory.createFromAgentCard(card);
  out.clientProtocolVersion = client.protocolVersion;
  const result = await client.sendMessage({
    message: {
      messageId: `m-${version}-${Date.now()}`,
      role: Role.ROLE_USER,
      parts: [part()],
    },
  });
  out.ok = true;
  out.result = result;
} catch (err) {
  out.ok = false;
  out.error = {
    name: err?.name,
    message: err?.message,
    code: err?.envelopeCode ?? err?.code,
    data: err?.data,
  };
}
console.log(JSON.stringify(out));

function part() {
  if (!dataArg) {
    return { content: { $case: "text", value: "hello, sleeping agent" } };
  }
  const data = JSON.parse(dataArg);
  return { content: { $case: "data", value: data }, mediaType: data.mediaType };
}
