// Package rollout is the relay's staged offer of one update target to a
// set of devices, in waves built from wake cohorts, judged by the devices
// that woke and reported, and paused on its own when too many failed.
//
// Use:
//
//	m := &rollout.Manager{Store: s, Clock: c}       // s: store/rollouts
//	r, err := m.Start(ctx, spec, devices)           // devices: id and wake minute/second
//	t, ok, err := m.Offer(ctx, device)              // at the device's wake: install t?
//	err = m.Report(ctx, device, rollout.Installed, "") // from its signed status
//	err = m.Pause(ctx, id, why); m.Resume(ctx, id); m.Abort(ctx, id, why)
//
// A tenant's rollout (Spec.Tenant, on a hosted relay) is stored under its
// tenant's key (Rollout.Key, store/rollouts.Key), which Get, Pause,
// Resume and Abort then take as id; the relay keeps each tenant's
// operators to their tenant's rollouts and devices. A device that leaves
// the tenant before it reported is Left (found out of the tenant at its
// wake by OfferIDOf, or by the relay's pass over the tenants' rollouts,
// Manager.LeaveTenants): offered nothing more, and the rollout ends
// without it. A device the relay forgets for its silence is Left in every
// rollout, the relay's own and its tenants' (Manager.Forget). A device
// whose agent retires its key for a successor is the same device under a
// new DID: the successor takes its place, and its result, in every
// rollout (Manager.Carry).
//
// # Waves and cohorts
//
// A wake cohort is the devices whose hourly window opens in the same
// minute of the hour (wake.Window's Minute; the relay's agents state).
// Spec.Percents (for example 1, 10, 50, 100) are cumulative shares of the
// devices; wave i holds whole cohorts, taken in the order they next wake
// after the rollout starts, until the devices of waves 0..i reach
// Percents[i] of all (rounded up, so that 1 % of 40 devices is one
// cohort, not none). A cohort is never split: its devices wake within the
// same minute, so a wave's devices have all had a wake within an hour of
// the wave's start, and a wave finishes within an hour unless devices
// miss their window.
//
// A device of a started wave is offered the target at each wake until it
// reports an outcome. Until then it is pending: a device that has not yet
// woken is never a failure (unlike a job timeout). The next wave starts
// when every device of the current one reported, or when Spec.WaveTime
// (an hour by default) has passed since it started; pending devices of
// earlier waves stay offered.
//
// # Abort criteria
//
// Spec.Criteria follows the abort configuration of AWS IoT Jobs
// (https://docs.aws.amazon.com/iot/latest/developerguide/jobs-configurations-details.html):
// the failure types that count (RolledBack, the device's install failed
// its trial and went back, like FAILED; Refused, the device would not
// install it, like REJECTED; or All), a minimum number of executed
// devices before the rate is judged (minNumberOfExecutedThings), and a
// threshold percentage. Executed devices are those that reported; AWS's
// TIMED_OUT has no counterpart, since a device asleep is pending. Where
// AWS cancels the job, a breach here pauses the rollout (State Paused,
// with the breach as Reason), so that an operator can look, then resume
// or abort. After a resume the criteria judge only the outcomes reported
// after it (Rollout.Epoch), else the old failures would pause it again at
// the next report.
//
// # Sharing
//
// A rollout is one record of store/rollouts, changed by read, modify and
// compare-and-swap (Manager.update), so relays sharing a JetStream
// cluster may all offer it and record outcomes; a relay restarted finds
// it as it was.
package rollout
