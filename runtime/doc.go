// Package runtime is the life of torpor-agent, the device daemon that
// sleeps: the duty cycle around the validate-on-dequeue pipeline.
//
// # Modes
//
// The agent runs in one of the offline profile's modes (wake.Mode), set by
// configuration and changeable at runtime (SetMode; the change persists in
// bbolt until the configured mode changes):
//
//   - always_on and session: linked to the relay all the time, answering
//     live requests, with a liveness pulse every PulseInterval.
//   - hourly_wake: a window every hour at the wake minute the relay
//     derives from the agent's DID (wake.WakeMinute, FNV-1a), at the
//     second of that minute the relay assigned (the state-ok's
//     wire.Accepted.WakeSecond, kept in bbolt; adoptWakeSecond) or, until
//     it assigns one, the second the agent derives from its DID
//     (wake.WakeSecond); either spreads the devices of a minute. Of
//     Config.Schedule.WindowLength, shifted by Config.Schedule.WindowOffset.
//   - sleep: asleep until an event source (GPIO) fires or the one wake an
//     operator scheduled; each such wake lasts a window's length.
//
// # One wake
//
// In order: open bbolt (once per boot) → bring up the device link →
// publish a signed pulse naming the next wake → refill the KeyPackage pool
// and upload the signed Agent Card with mode and bounds, when the relay
// does not hold it already → drain → stay live
// to the window's end → announce the next wake → arm the wake source →
// sleep. Awake time is what a battery pays for, so the independent phases
// run in parallel: the link is dialled while the pulse is signed and
// committed, the KeyPackages refilled and the outbox of a crashed run
// settled; the state (pulse, card, KeyPackages) is published while the
// queue drains. Nothing waits on a fixed sleep: phases wait on the link,
// the window's end on the clock, or the relay's "queued" notifications.
// Every phase is measured (WakeReport.Phases), logged once per wake and
// kept in bbolt (LastWake).
//
// A device that boots outside its window (powered on by hand, or after a
// power-off that outlasted a window) publishes its state and drains at
// once, without staying live, then sleeps as planned: the relay learns its
// mode and nothing queued waits a further hour.
//
// An agent stopped while awake (Run's context ends: SIGTERM) ends the wake
// early but still announces its next wake: the announce has a context of
// its own, bounded to 5 s, and the link closes once the relay answered, so
// the relay holds the stopped device's last state.
//
// # Time
//
// Everything runs on the injected clock (Config.Clock), so tests move time
// with a fake clock and demonstrations compress it with clock.Scaled
// (--time-scale). Sleeps and windows are wall-clock deadlines, not
// monotonic durations: the monotonic clock may stop while the system is
// suspended. The wake sources (package wake) measure each sleep on the wall
// clock, CLOCK_BOOTTIME (which counts time suspended) and CLOCK_MONOTONIC,
// and the wake report records the span, so a suspend shows as boot time
// beyond monotonic time. A device that powered off resumes its cycle from
// bbolt at the next boot (the planned wake, the mode) and logs how late it
// came back.
//
// # An unreachable relay
//
// Inside a window the link is dialled with exponential backoff and jitter
// (1 s doubling to 1 min, each delay drawn from [d/2, d]) until the window
// ends; then the agent sleeps as planned. Nothing is lost: the relay keeps
// what it queued, and the next window drains it. A link that drops inside
// the window is redialled the same way and the drain resumes from the
// relay's first unacknowledged record.
//
// # The pipeline
//
// Pipeline assembles the receive side on the agent's one bbolt file: the
// idempotency ledger (store/ledger), the action gate (runtime/gate), the
// replay cache (store/replay), the pulse chain (pulse) and the
// drainer (runtime/drain), which commits each batch's MLS state, replay
// entries and ledger entries in one transaction before acknowledging the
// records and notifying the application (runtime/deliver). MLS sessions
// plug in through drain.Sessions and KeyPackages. See docs/agent.md for
// the delivery semantics.
//
// The operator's operations on it (Halt, Resume, Confirm, Deny,
// Reconcile, Holds, Entries, Report) are Pipeline's methods: the MQTT
// commands (runtime/manage's Commands) and torpor-agent's offline
// commands run the same code and record who acted.
package runtime
