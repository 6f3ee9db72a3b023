// Package trusted establishes the time the agent judges Governed Object
// expiry by (draft-chapman-a2a-mls-03 Section 8.1, the expiry check) when
// it wakes, and says how it knows it.
//
// A Raspberry Pi 1–4 has no RTC. After a power-off sleep it boots with
// the time fake-hwclock saved at shutdown, hours behind, until NTP
// synchronises; judged by that clock, an object that expired during the
// sleep would be accepted. So the drain does not take the system clock on
// trust. Before it judges a batch it asks Clock.Trusted, which trusts the
// time when one of these holds:
//
//   - ntp: the kernel's clock is synchronised (adjtimex(2): the clock
//     state is not TIME_ERROR, STA_UNSYNC is clear) with a maximum error
//     within Config.MaxError;
//   - rtc: the board has an RTC that keeps time through the sleep
//     (Config.RTC, from the board profile or the wake configuration),
//     it reads within RTCTolerance of the system clock, and not before
//     the floor (an RTC that lost power reads 1970 or 2000);
//   - relay: the relay stated its time in the link handshake
//     (transport/link's Client.RelayExchange; docs/security.md says what
//     authenticates it), not before the floor by more than the
//     handshake's round trip, RelayResolution and FloorTolerance. Its
//     time now is estimated at the round trip's midpoint, the on-wire
//     offset of RFC 5905, Section 8, with one stamp (T2 = T3).
//
// The time is then the latest of the system clock, the floor and the
// relay's time: the relay's time only ever moves the clock forward. A
// lying relay can make objects expire early, never make an expired one
// valid. With none of the three the drain holds its records: nothing is
// judged or acknowledged, and the wake report says why.
//
// # The floor
//
// At every batch commit the drain writes what the reading it judged by
// proved (Reading.Proven) into agent.db, in the batch's transaction
// (Commit), with the reading of CLOCK_BOOTTIME and the kernel's boot id.
// Proven is not the time judged by: the system clock is never a source on
// its own, so its lead over the relay is not kept, and one source moves
// the floor no further than Reading.Ceiling, the time of the last reading
// two sources agreed on (or the first) plus CLOCK_BOOTTIME elapsed since
// in the same boot, allowed MaxDriftPPM, or a trusted RTC's time (the
// RTC measured the sleep). Beyond it the reading is still
// judged by (expiry early, never late) but the floor stays, and
// Reading.Held says so; a second trusted source in the same reading
// stating at least as much proves the jump. A fresh device keeps its
// first reading from one source. The floor at a later moment is
// that time plus the time the device knows has passed since: CLOCK_BOOTTIME
// elapsed within the same boot (it counts a suspend), or the time since
// boot after a power-off (the sleep itself is not counted: the device does
// not know how long it was off). The floor is a lower bound, never a
// source of trust on its own: judged by the floor alone, an object that
// expired while the device was off would still be accepted.
//
// Clock is a clock.Clock for the drain; it never sets the system clock.
package trusted
