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
// Every request carries the DID Bearer token (torporctl token).
const fetchImpl = (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${token}`);
  return fetch(url, { ...init, headers });
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
  // The device sleeps: its relay stored the message. The SDK names the
  // error after A2A's -32003, PushNotificationNotSupportedError.
  if (err.data?.error === "agent_asleep" && err.data.queued) {
    console.log(`queued: the device is back in about ${err.data.retryAfterSec ?? "?"} s`);
  } else {
    console.log(`refused: ${err.name}: ${err.message}`);
    process.exitCode = 1;
  }
}
// docs/a2a.md: end JavaScript
