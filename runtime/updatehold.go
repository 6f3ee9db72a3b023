package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/gate"
	"github.com/torpor-dev/torpor/runtime/update"
	"github.com/torpor-dev/torpor/store/ledger"
)

// An update whose target says the owner must confirm it (update.Custom's
// Confirm) is held in the gate like any action waiting for the owner
// (docs/updates.md, "Owner confirmation"): listed in the status, run by
// the owner's confirm (torporctl device confirm DEVICE KEY), dropped by
// deny or when the targets metadata that lists it expires, judged by the
// trusted time. Confirmed, it runs through the drain as every confirmed
// action does, under its ledger key (so never twice), and its hand-off is
// the route below, which gives the verified file to
// PipelineConfig.UpdateInstall.

// PurposeUpdate is the purpose of a held update.
const PurposeUpdate = "torpor:update"

// updateCounterparty is the first part of a held update's ledger key
// ("update TARGET@VERSION#SHA256-PREFIX"); a DID never collides with it.
const updateCounterparty = "update"

// bucketDenied keeps the keys of held updates the owner denied, with the
// expiry of the targets metadata that listed them, so that a check does
// not hold a denied update again.
var bucketDenied = []byte("update-denied")

// ErrNoInstall is returned by Confirm for a held update when this pipeline
// cannot install it (torpor-agent's offline commands, an agent without
// Updates.OnVerified): the hold stays for the running agent.
var ErrNoInstall = errors.New("runtime: a held update is confirmed to the running agent, which installs it")

// heldUpdate is a held update's delivery object: what the install needs
// and the SHA-256 of the verified file when it was held, checked again
// before it is handed on.
type heldUpdate struct {
	Target  string        `json:"target"`
	Version uint64        `json:"version"`
	SHA256  string        `json:"sha256"`
	Path    string        `json:"path"`
	File    string        `json:"fileSha256"`
	Custom  update.Custom `json:"custom"`
	Expires time.Time     `json:"expires"`
}

// UpdateKey returns the ledger key under which the update res is held:
// "update TARGET@VERSION#" and the first 16 hex digits of its SHA-256.
func UpdateKey(res update.Result) string {
	return updateCounterparty + " " + updateIdem(res)
}

func updateIdem(res update.Result) string {
	return fmt.Sprintf("%s@%d#%s", res.Target, res.Custom.Version, res.SHA256[:min(16, len(res.SHA256))])
}

// HoldUpdate holds the verified update res for the owner's confirmation
// (res.AwaitsConfirmation), until res.Expires. It returns the ledger key
// and the gate's decision: Hold when it is held now, Refuse when it was
// already (reason "held"), was denied (ReasonDenied), or was confirmed
// before ("completed", "in-flight", "indeterminate"). The file at
// res.Path is hashed only for a new hold.
func (p *Pipeline) HoldUpdate(res update.Result, now time.Time) (string, gate.Decision, error) {
	key := UpdateKey(res)
	if res.Path == "" || res.SHA256 == "" {
		return key, gate.Decision{}, fmt.Errorf("runtime: holding update %s: no verified file", res.Target)
	}
	if d, known, err := p.knownUpdate(key); err != nil || known {
		return key, d, err
	}
	sum, err := update.FileSHA256(res.Path)
	if err != nil {
		return key, gate.Decision{}, fmt.Errorf("runtime: holding update %s: %w", res.Target, err)
	}
	h := heldUpdate{Target: res.Target, Version: res.Custom.Version, SHA256: res.SHA256, Path: res.Path,
		File: sum, Custom: res.Custom, Expires: res.Expires}
	obj, _ := json.Marshal(h)
	dl, _ := json.Marshal(deliver.Delivery{Object: obj, ObjectID: key, Issuer: updateCounterparty,
		Purpose: PurposeUpdate, DequeuedAt: now.UTC()})
	a := gate.Action{Purpose: PurposeUpdate, Counterparty: updateCounterparty, ObjectID: key,
		Key: updateIdem(res), Expires: res.Expires, Payload: dl, OwnerOnly: true}
	var d gate.Decision
	err = p.db.Update(func(tx *bolt.Tx) error {
		d, err = p.gate.Hold(tx, a, string(update.Confirm))
		return err
	})
	return key, d, err
}

// knownUpdate reports whether key is held or in the ledger already, with
// the Refuse decision that says so.
func (p *Pipeline) knownUpdate(key string) (gate.Decision, bool, error) {
	var d gate.Decision
	var known bool
	err := p.db.View(func(tx *bolt.Tx) error {
		e, err := p.ledger.Get(tx, key)
		switch {
		case err == nil && e.State != ledger.Released: // a released key may be held again
			d, known = gate.Decision{Verdict: gate.Refuse, Reason: e.State.String(), Entry: e}, true
			return nil
		case err != nil && !errors.Is(err, ledger.ErrNotFound):
			return err
		}
		if b := tx.Bucket(bucketDenied); b != nil && b.Get([]byte(key)) != nil {
			d, known = gate.Decision{Verdict: gate.Refuse, Reason: ReasonDenied}, true
			return nil
		}
		_, held, err := p.heldUpdate(tx, key)
		if held {
			d, known = gate.Decision{Verdict: gate.Refuse, Reason: "held"}, true
		}
		return err
	})
	return d, known, err
}

// ReasonDenied is the refusal of an update the owner denied.
const ReasonDenied = "denied"

// denyUpdate records, in tx, that the owner denied the held update h,
// until its expiry, and drops the records of denials that expired by now
// (the targets that listed them can no longer be installed anyway).
func denyUpdate(tx *bolt.Tx, h gate.Held, now time.Time) error {
	b, err := tx.CreateBucketIfNotExists(bucketDenied)
	if err != nil {
		return err
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var t time.Time
		if t.UnmarshalText(v) == nil && !now.Before(t) {
			if err := c.Delete(); err != nil {
				return err
			}
		}
	}
	v, _ := h.Action.Expires.UTC().MarshalText()
	return b.Put([]byte(h.Action.LedgerKey()), v)
}

// heldUpdate returns the hold of key when it is a held update.
func (p *Pipeline) heldUpdate(tx *bolt.Tx, key string) (gate.Held, bool, error) {
	hs, err := p.gate.Holds(tx)
	for _, h := range hs {
		if h.Action.LedgerKey() == key && h.Action.Purpose == PurposeUpdate {
			return h, true, nil
		}
	}
	return gate.Held{}, false, err
}

// DropUpdates drops the held updates of target type typ (update.Custom's
// Type) other than keep (a newer publish superseded them, or the device
// is up to date) and returns them. With none to drop it writes nothing (a
// commit costs fsyncs at every wake).
func (p *Pipeline) DropUpdates(typ, keep string) ([]gate.Held, error) {
	var out []gate.Held
	err := p.db.View(func(tx *bolt.Tx) error {
		hs, err := p.gate.Holds(tx)
		for _, h := range hs {
			if h.Action.Purpose == PurposeUpdate && h.Action.LedgerKey() != keep && holdType(h) == typ {
				out = append(out, h)
			}
		}
		return err
	})
	if err != nil || len(out) == 0 {
		return nil, err
	}
	err = p.db.Update(func(tx *bolt.Tx) error {
		for _, h := range out {
			if _, err := p.gate.Deny(tx, h.Action.LedgerKey()); err != nil && !errors.Is(err, gate.ErrNoHold) {
				return err // one confirmed meanwhile is not a hold any more
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// holdType is the target type of the held update h.
func holdType(h gate.Held) string {
	var dl deliver.Delivery
	var hu heldUpdate
	if json.Unmarshal(h.Action.Payload, &dl) != nil || json.Unmarshal(dl.Object, &hu) != nil {
		return ""
	}
	return hu.Custom.Type
}

// isHeldUpdate reports whether key is a held update.
func (p *Pipeline) isHeldUpdate(key string) (held bool, err error) {
	err = p.db.View(func(tx *bolt.Tx) error {
		_, held, err = p.heldUpdate(tx, key)
		return err
	})
	return held, err
}

// installRoute is the hand-off of a confirmed update: the verified file,
// checked against the hash it had when it was held, goes to install. A
// file that changed or went missing is not handed on (ErrNotStarted: the
// ledger key is released), and the next wake's check fetches it and
// holds it again.
func installRoute(install func(path string, res update.Result) error) deliver.Route {
	return deliver.Route{Pattern: PurposeUpdate, Name: "update", Handler: deliver.HandlerFunc(
		func(_ context.Context, d deliver.Delivery) (deliver.Outcome, error) {
			var h heldUpdate
			if err := json.Unmarshal(d.Object, &h); err != nil {
				return deliver.Outcome{}, fmt.Errorf("%w: held update %s: %w", deliver.ErrNotStarted, d.ObjectID, err)
			}
			sum, err := update.FileSHA256(h.Path)
			if err == nil && sum != h.File {
				err = fmt.Errorf("its SHA-256 is %s, %s when it was held", sum, h.File)
			}
			if err != nil {
				return deliver.Outcome{}, fmt.Errorf("%w: %s changed on flash (%w); the next check fetches it and holds it again",
					deliver.ErrNotStarted, h.Path, err)
			}
			res := update.Result{Target: h.Target, Path: h.Path, Custom: h.Custom, SHA256: h.SHA256, Expires: h.Expires}
			if err := install(h.Path, res); err != nil {
				return deliver.Outcome{}, err
			}
			return deliver.Outcome{OK: true, Detail: fmt.Sprintf("%s version %d handed on to install", h.Target, h.Version)}, nil
		})}
}
