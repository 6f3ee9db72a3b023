// Package mqttsession keeps an MQTT 5 client's session state and its
// outbound queue in the agent's bbolt file, with explicit sequence numbers,
// for github.com/eclipse/paho.golang's client, kept connected by
// transport/mqtt/mqttconn.
//
// # Why not paho's file stores
//
// paho ships a session store (paho/store/file) and an outbound queue
// (autopaho/queue/file) that write one file per packet and recover their
// order from each file's modification time. Two packets written within the
// file system's timestamp granularity come back in either order after a
// restart (we measured [t2 t3 t1] and [t2 t1 t3] for t1 < t2 < t3), and a board
// without a real-time clock steps its clock at boot (fake-hwclock, then
// NTP), so modification times are not even monotonic across a reboot. A
// device that sleeps by powering off restarts often, and the MQTT
// specification requires a client that resumes a session to resend its
// unacknowledged PUBLISH and PUBREL packets in their original order
// (MQTT 5.0, Section 4.6). Here the order is a counter that bbolt stores and
// increments in the same transaction as the packet, so it survives any
// restart and never depends on a clock. The files also cost a directory of
// small fsynced files next to a bbolt file that is already fsynced; one
// database is one thing to back up, size and wipe.
//
// # Store (paho session state)
//
// Store implements the interface paho.golang's session/state package takes
// for its two stores (client- and server-originated packets). That
// interface type is unexported, but any type with its six methods
// satisfies it; state.New(client, server) accepts a *Store. NewState builds
// the state from two stores in one database.
//
// Layout, under the top-level bucket named at OpenStore:
//
//	ids/   packet id (uint16 BE) → sequence (uint64 BE) ‖ packet type ‖ packet bytes
//	seq/   sequence (uint64 BE)  → packet id (uint16 BE)
//	bad/   sequence (uint64 BE)  → packet id ‖ packet bytes (quarantined, at most 64 kept)
//
// Put gives the packet the next value of seq/'s bbolt sequence, so List
// returns packet ids in the order they were last put, as paho expects: a
// PUBREL that replaces a PUBLISH under the same id moves to the end.
//
// # Queue (outbound queue)
//
// Queue implements queue.Queue of github.com/eclipse/paho.golang/autopaho/queue
// (an interface, which transport/mqtt/mqttconn consumes): messages to
// publish once a connection is up, kept across restarts. Items are keyed by
// the bucket's sequence, so Peek always returns the oldest. EnqueueTx adds an item inside
// the caller's read-write transaction, so that the agent can commit a
// command's completion and the publication of its reply together: either
// both survive a power cut or neither does. The queue is bounded
// (Options.MaxItems, Options.MaxBytes); Enqueue returns ErrFull beyond.
//
// Every write is one bbolt transaction, fsynced on commit. A QoS 1
// publication through the queue costs four: enqueue, session put (when
// mqttconn hands it to paho), queue removal, and session delete on PUBACK.
// BenchmarkQueueEnqueueRemove measures the queue's part.
package mqttsession
