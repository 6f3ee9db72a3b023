// Package slots installs a new build of torpor-agent A/B, gives it a trial
// boot and brings the previous build back by itself when the new one does
// not prove itself.
//
// The agent's state directory holds two slots, a/torpor-agent and
// b/torpor-agent, and one small state file, slots.json, which alone says
// which binary runs: the packaged /usr/bin/torpor-agent (no slot), slot a
// or slot b, and whether a slot is on trial. Every change of it is written
// with internal/atomicfile (a synced temporary file, a rename, a synced
// directory), so a power cut at any moment leaves either the old state or
// the new one, and every binary a state names was completely written and
// synced before the state that names it. The switch is therefore one
// rename: before it the old build runs, after it the new one.
//
// The launcher is the packaged binary itself (torpor-agent --slot-launch,
// the systemd unit's ExecStart): apt alone replaces it, never an update,
// so a broken update cannot break the launcher. On every start it reads
// the state. A slot on trial gets its start counted (written before the
// slot runs, so a crash at start, a power cut or a hang all count) and
// runs as a child the launcher watches: the child must confirm (Confirm)
// within the trial's deadline, or the launcher kills it and records why.
// Once the starts are used up, the launcher writes the previous build back
// as the active one and records the rollback. Outside a trial the launcher
// replaces itself with the active slot's binary (exec), costing nothing.
//
// docs/updates.md ("Install on the device: slots, trial boot, rollback")
// describes the whole sequence and its power-cut argument.
package slots
