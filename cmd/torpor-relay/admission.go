package main

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/relay"
)

// admissionArgs are the flags of device admission and the relay's global
// caps.
type admissionArgs struct {
	// mode is --admission: open, owner or operator.
	mode                         string
	owners                       []did.DID
	probation                    relay.Probation
	maxAgents                    int
	maxStateBytes, maxQueueBytes int64
	forgetAfter                  time.Duration
}

func (a *admissionArgs) register(fs *flag.FlagSet) {
	a.mode = "owner"
	fs.StringVar(&a.mode, "admission", "owner", "How devices leave probation: owner (the default: a device enrolled by an --owner is admitted at once, any other when an operator admits it), operator (only an operator's admission; enrolments are ignored) or open (every device is admitted at once: only for a relay no stranger can reach).")
	fs.Func("owner", "An owner DID whose enrolments (torporctl enrol) admit a device at once with --admission owner. Repeat the flag for more.", func(v string) error {
		d, err := did.Parse(v)
		if err != nil {
			return fmt.Errorf("--owner: %w", err)
		}
		a.owners = append(a.owners, d)
		return nil
	})
	a.probation = relay.DefaultProbation()
	p := &a.probation
	fs.IntVar(&p.Bounds.MaxMessages, "probation-max-messages", p.Bounds.MaxMessages, "The most queued messages of a device not yet admitted (without --allow-agent); its other queue bounds are lowered with it: 5 per sender, 64 KiB a message, a handshake reserve of 4 and 64 KiB.")
	fs.Int64Var(&p.Bounds.MaxBytes, "probation-max-bytes", p.Bounds.MaxBytes, "The most queued body bytes of a device not yet admitted.")
	fs.IntVar(&p.KeyPackages, "probation-key-packages", p.KeyPackages, "The most KeyPackages a device not yet admitted may pool.")
	fs.IntVar(&p.StateBytes, "probation-state-bytes", p.StateBytes, "The most bytes of card and pulse a device not yet admitted may publish.")
	fs.IntVar(&p.Pool.Agents, "probation-agents", p.Pool.Agents, "The most devices on probation the relay keeps a state for, all together; a new one beyond it is refused (507 relay_full_probation). They never count against --max-agents.")
	fs.Int64Var(&p.Pool.QueueBytes, "probation-queue-bytes", p.Pool.QueueBytes, "The most body bytes queued for all devices on probation together (507 relay_queue_full). They never count against --max-queue-bytes.")
	fs.IntVar(&p.Pool.Links, "probation-links", p.Pool.Links, "The most devices on probation linked at once (503 probation_links_full, which a device retries); at most a quarter of --max-conns, so that they never hold the connections admitted devices and senders need.")
	fs.IntVar(&a.maxAgents, "max-agents", 10000, "The most admitted agents the relay keeps a state for; a new admitted device beyond it is refused (507 relay_full_agents). Devices on probation have a pool of their own (--probation-agents). 0: no cap.")
	fs.Int64Var(&a.maxStateBytes, "max-state-bytes", 1<<30, "The most bytes of agents.db in use (or of the JetStream agents bucket); beyond it no new agent or KeyPackage is stored. 0: no cap.")
	fs.Int64Var(&a.maxQueueBytes, "max-queue-bytes", 2<<30, "The most body bytes queued for all admitted agents together; beyond it requests are refused (507 relay_queue_full). Devices on probation have a pool of their own (--probation-queue-bytes). 0: no cap.")
	fs.DurationVar(&a.forgetAfter, "forget-after", 30*24*time.Hour, "Forget an agent whose device has published no state for this long and is not linked: its queue, KeyPackages and state (its admission is kept). Set it above the longest sleep of any device. 0: never.")
}

// access sets the admission of access: AdmitAll with open, the owners
// with owner.
func (a *admissionArgs) access(access *relay.Access) {
	access.Probation = a.probation
	switch a.mode {
	case "open":
		access.AdmitAll = true
	case "owner":
		access.Owners = a.owners
	}
}

func (a *admissionArgs) validate() error {
	switch a.mode {
	case "open", "operator":
		if len(a.owners) > 0 {
			return fmt.Errorf("--owner needs --admission owner (not %s)", a.mode)
		}
	case "owner":
	default:
		return fmt.Errorf("--admission %q: want owner, operator or open", a.mode)
	}
	if a.probation.Bounds.MaxPerPeer > a.probation.Bounds.MaxMessages {
		a.probation.Bounds.MaxPerPeer = a.probation.Bounds.MaxMessages
	}
	if a.probation.Bounds.MaxMessageSize > a.probation.Bounds.MaxBytes {
		a.probation.Bounds.MaxMessageSize = a.probation.Bounds.MaxBytes
	}
	if err := a.probation.Validate(); err != nil {
		return fmt.Errorf("--probation-…: %w", err)
	}
	if a.maxAgents < 0 || a.maxStateBytes < 0 || a.maxQueueBytes < 0 || a.forgetAfter < 0 {
		return errors.New("--max-agents, --max-state-bytes, --max-queue-bytes and --forget-after may not be negative")
	}
	return nil
}
