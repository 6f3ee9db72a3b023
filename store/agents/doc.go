// Package agents is the relay's durable per-agent state: for each agent
// whose device linked, the last state the device published (reachability
// mode and window, next wake, the bounds in force, the signed Agent Card
// and liveness pulse, served verbatim), its pool of single-use KeyPackages
// and its last-resort KeyPackage (RFC 9420, Section 16.8). Store is the
// interface the relay (transport/relay) uses, next to store/queue.Store for
// the queued records; Bolt is the embedded default, in the relay's
// agents.db.
//
// # Interface
//
// Every method of Store reads or writes one agent's data, named by its
// DID, except Agents, which lists the agents. Nothing spans agents and no
// transaction is exposed, so that a backend shared by many relays can
// implement it: NATS JetStream key-value buckets, say, with one key per
// agent for the state, one per pooled KeyPackage and one for the
// last-resort KeyPackage. The methods state what must be atomic:
//
//   - Put stores the state, adds the KeyPackages and replaces the
//     last-resort KeyPackage as one operation, and stores nothing when the
//     pool would grow past MaxKeyPackages. Its writes for an agent come
//     from that agent's one device link, so a key-value backend can
//     serialize them on the agent's state key: count the pool, write the
//     new pool keys, then update the state key only at the revision it
//     read (compare-and-swap); when another relay wrote first, delete the
//     pool keys it wrote and retry.
//   - TakeKeyPackage hands each pooled KeyPackage out at most once, across
//     concurrent callers, relays and restarts: removing it is the same
//     atomic step as choosing it. A key-value backend makes the removal a
//     compare-and-swap: it deletes the oldest KeyPackage only if its
//     revision is unchanged, or (store/jsstore) keeps the pool's list in
//     the agent's state key and writes the list without the oldest only
//     at the revision it read; a caller that loses the race takes the
//     next one. A KeyPackage that was removed but not answered (a crash in
//     between) is lost, never handed out twice: the device publishes new
//     ones and counts every one the relay no longer holds as used.
//   - Get and KeyPackages read one agent's data. A reader may see a state
//     a moment old; the relay only serves what a device published.
//
// Rate limits of KeyPackage fetches are not stored: each relay keeps its
// own in memory (transport/relay).
package agents
