package main

import "github.com/torpor-dev/torpor/store/relaystore"

// exitStore is the exit status of a store refusal (relaystore.ErrRefused):
// EX_DATAERR of sysexits.h, listed in
// packaging/systemd/torpor-relay.service's RestartPreventExitStatus:
// restarting cannot fix it, an operator must.
const exitStore = 65

// reinitialiseHelp is the --reinitialise flag's text.
const reinitialiseHelp = "Start with empty stores where the store marker in --data-dir (" + relaystore.MarkerName + ") says the relay ran before and queue.db or queue.log/, agents.db or mqtt.db is missing or empty (the relay refuses otherwise): their queued messages, device states and MQTT sessions are gone. A damaged file must be moved aside first."
