// Package console is the relay's fleet console for operators: one row per
// device with what the relay knows (its published state, queue,
// KeyPackage pool and link) and what the device said in its signed status
// (link wire.Status: build, board, halt, held actions, last wake), served
// as HTML at /fleet and as JSON at /fleet/api/devices to the operator DIDs
// the relay is given, and read by torporctl fleet. The view's types, which
// are the JSON API's document, are transport/operatorapi's, so that torporctl
// reads them without linking the relay. docs/operations.md describes it for
// operators.
//
// On a hosted relay (docs/tenants.md) Source.Visible scopes every page
// and answer to the devices the operator may see, and the relay's own
// operators also get the page of tenants, /fleet/tenants and
// /fleet/api/tenants (Config.Tenants: quotas and totals, never a device).
//
// A device's page also draws its history (store/agents.Wake: the last
// agents.MaxWakes wakes the relay recorded) as inline SVG sparklines built here
// (history.go), styled by console.css, so the strict CSP holds.
//
// # States
//
// A device is, most urgent first: overdue when the wake or pulse its own
// published schedule promised (hourly_wake, sleep: the next wake it
// announced; always_on, session: a pulse PulseInterval after the last) is
// more than the operator's grace late and it is not linked, which is what
// a dead battery or a stolen device looks like; halted while the owner's
// halt is in force; awake while linked; asleep when its mode sleeps and a
// wake is promised; offline otherwise. Everything is computed on the
// relay's injected clock.
//
// A status or pulse is believed only when its signature by the device's
// DID verifies, at every read for bytes not judged before (another relay
// sharing the store may have written them); Verified remembers the
// verdicts on bytes already judged.
//
// # Search and pages
//
// /fleet and /fleet/api/devices take the parameters of operatorapi.Query
// (q, state, version, tag, sort, page, per). Source.Query computes every
// device's state, which the whole fleet's summary and the filters need,
// and reads the rest of a row (KeyPackage pool, oldest queued record) only
// for the page's devices. The page shows times as <time> elements in UTC,
// which static/console.js rewrites in the browser's time zone.
// BenchmarkFleet10k measures both with 10,000 devices
// (docs/performance.md).
package console
