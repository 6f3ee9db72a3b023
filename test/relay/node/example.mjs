// The JavaScript client example of docs/a2a.md, with @a2a-js/sdk: sends one
// data part (a Governed Object part's data) to a Torpor agent and says what
// became of it. test/relay (TestA2AJSExample) runs it.
//
// usage: node example.mjs <agent base URL> <DID Bearer token> <part data JSON>
// docs/a2a.md: begin JavaScript
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";
import { Role } from "@a2a-js/sdk";

const [base, token, data] = process.argv.slice(2);

// What the relay answered instead of delivering (docs/a2a.md, "The
// answers"): kind is queued (stored: do not send again), asleep (not
// stored), refused (reason says why) or unanswered.
class RelayAnswer extends Error {
  constructor(status, retryAfter, body) {
    const rpc = typeof body.error === "object" && body.error !== null ? body.error : {};
    const reason = rpc.data?.error ?? (typeof body.error === "string" ? body.error : undefined);
    const queued = Boolean(body.queued || rpc.data?.queued);
    super(body.message ?? rpc.message ?? `HTTP ${status}`);
    this.name = "RelayAnswer";
    this.status = status;
    this.reason = reason;
    this.retryAfterSec = retryAfter ?? body.retryAfterSec ?? rpc.data?.retryAfterSec;
    this.kind =
      status === 503 && queued ? "queued"
      : status === 503 && reason === "agent_asleep" ? "asleep"
      : status === 504 ? "unanswered"
      : "refused";
  }
}

// Every request carries the DID Bearer token (torporctl token). An answer
// to a POST other than 200 is thrown as a RelayAnswer; the SDK passes it on.
const fetchImpl = async (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${token}`);
  const res = await fetch(url, { ...init, headers });
  if (res.ok || init.method !== "POST") return res;
  const retryAfter = Number.parseInt(res.headers.get("Retry-After") ?? "", 10);
  const body = await res.json().catch(() => ({}));
  throw new RelayAnswer(res.status, Number.isNaN(retryAfter) ? undefined : retryAfter, body);
};
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
  }),
);
// The base URL must end in "/", or the SDK drops the DID from it.
const client = await factory.createFromUrl(base.endsWith("/") ? base : `${base}/`);
const part = JSON.parse(data);
try {
  const result = await client.sendMessage({
    message: {
      messageId: crypto.randomUUID(),
      role: Role.ROLE_USER,
      parts: [{ content: { $case: "data", value: part }, mediaType: part.mediaType }],
    },
  });
  console.log(`delivered: ${JSON.stringify(result)}`);
} catch (err) {
  if (err instanceof RelayAnswer && err.kind === "queued") {
    // The device sleeps: its relay stored the message.
    console.log(`queued: the device is back in about ${err.retryAfterSec ?? "?"} s`);
  } else if (err instanceof RelayAnswer) {
    console.log(`${err.kind}: ${err.reason} (${err.status}): ${err.message}`);
    process.exitCode = 1;
  } else {
    // The agent's JSON-RPC error, such as -32602 "object rejected".
    console.log(`refused: ${err.name}: ${err.message}`);
    process.exitCode = 1;
  }
}
// docs/a2a.md: end JavaScript
