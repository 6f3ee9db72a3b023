package jsstore

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fxamacker/cbor/v2"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/wake"
)

// Agents is store/agents.Store in the TORPOR_AGENTS key-value bucket:
//
//	s.<agent>          agent record: version byte (1) and CBOR agentRecord:
//	                   the state, the ids of the pooled KeyPackages oldest
//	                   first, the last-resort KeyPackage
//	kp.<agent>.<id>    one pooled KeyPackage (MLSMessage bytes)
//	w.<agent>          history of wakes (agents.EncodeWakes; wakes.go)
//
// The agent record says what the pool holds; it changes only by
// compare-and-swap on its revision (Update), so a KeyPackage is handed
// out by the one take whose write removed its id. A KeyPackage key that
// no record names (a Put that failed between its writes) is never served.
type Agents struct{ c *Conn }

var _ agents.Store = (*Agents)(nil)

// Agents returns the agent store over c's bucket. Closing it does not
// close c.
func (c *Conn) Agents() *Agents { return &Agents{c: c} }

// Close implements agents.Store.
func (a *Agents) Close() error { return nil }

type agentRecord struct {
	Mode       string             `cbor:"1,keyasint"`
	Window     [3]int64           `cbor:"2,keyasint"` // minute, length ns, offset ns
	NextWake   int64              `cbor:"3,keyasint,omitempty"`
	Card       []byte             `cbor:"4,keyasint,omitempty"`
	Pulse      []byte             `cbor:"5,keyasint,omitempty"`
	Bounds     agents.BoundsField `cbor:"6,keyasint"`
	PeerBytes  int64              `cbor:"13,keyasint,omitempty"` // Bounds.MaxPeerBytes; zero in older records
	UpdatedAt  int64              `cbor:"7,keyasint"`
	Pool       []string           `cbor:"8,keyasint,omitempty"`
	LastResort []byte             `cbor:"9,keyasint,omitempty"`
	Successor  string             `cbor:"10,keyasint,omitempty"`
	Retirement []byte             `cbor:"11,keyasint,omitempty"`
	Status     []byte             `cbor:"12,keyasint,omitempty"`
	WakeSecond int                `cbor:"14,keyasint,omitempty"` // State's plus one (agents.WakeSecondField)
}

const agentVersion = 1

func (r *agentRecord) setState(s agents.State) {
	r.Mode, r.Card, r.Pulse, r.UpdatedAt = string(s.Mode), s.Card, s.Pulse, s.UpdatedAt.UnixNano()
	r.Successor, r.Retirement, r.Status = s.Successor, s.Retirement, s.Status
	r.Window = [3]int64{int64(s.Window.Minute), int64(s.Window.Length), int64(s.Window.Offset)}
	r.Bounds, r.PeerBytes = agents.NewBoundsField(s.Bounds)
	r.WakeSecond = agents.WakeSecondField(s)
	r.NextWake = 0
	if !s.NextWake.IsZero() {
		r.NextWake = s.NextWake.UnixNano()
	}
}

func (r *agentRecord) state() agents.State {
	s := agents.State{
		Mode: wake.Mode(r.Mode), Card: r.Card, Pulse: r.Pulse, UpdatedAt: time.Unix(0, r.UpdatedAt).UTC(),
		Successor: r.Successor, Retirement: r.Retirement, Status: r.Status,
		Window: wake.Window{Minute: int(r.Window[0]), Length: time.Duration(r.Window[1]), Offset: time.Duration(r.Window[2])},
		Bounds: r.Bounds.Bounds(r.PeerBytes),
	}
	if r.NextWake != 0 {
		s.NextWake = time.Unix(0, r.NextWake).UTC()
	}
	agents.SetWakeSecond(&s, r.WakeSecond)
	return s
}

func stateKey(agent string) string  { return "s." + token(agent) }
func kpKey(agent, id string) string { return "kp." + token(agent) + "." + id }
func newID() string                 { return rand.Text() }
func isMissing(err error) bool      { return errors.Is(err, jetstream.ErrKeyNotFound) }
func isRevisionMismatch(err error) bool {
	return errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists)
}

// get reads agent's record and its revision (0 and found false when none).
func (a *Agents) get(ctx context.Context, agent string) (r agentRecord, rev uint64, found bool, err error) {
	e, err := a.c.kv.Get(ctx, stateKey(agent))
	if isMissing(err) {
		return agentRecord{}, 0, false, nil
	}
	if err != nil {
		return agentRecord{}, 0, false, err
	}
	r, err = decodeRecord(agent, e.Value())
	if err != nil {
		return agentRecord{}, 0, false, err
	}
	return r, e.Revision(), true, nil
}

// decodeRecord decodes agent's stored record v.
func decodeRecord(agent string, v []byte) (r agentRecord, err error) {
	if len(v) == 0 || v[0] != agentVersion {
		return agentRecord{}, fmt.Errorf("agents: record of %s: unknown version", agent)
	}
	if err := cbor.Unmarshal(v[1:], &r); err != nil {
		return agentRecord{}, fmt.Errorf("agents: record of %s: %v", agent, err)
	}
	return r, nil
}

// stateBatch is how many agent records EachState asks for at a time.
const stateBatch = 1000

// EachState implements agents.Walker: it reads every agent record in bulk,
// through an ephemeral pull consumer on the bucket's stream that delivers
// the last message of each s.<agent> subject, stateBatch at a time: a
// request to create the consumer, one per batch and one to delete it,
// instead of one per agent. The consumer (R1, in memory; the server
// removes it after a minute idle should the delete fail) may sit on a
// replica that lags the stream leader by the writes still in flight.
func (a *Agents) EachState(ctx context.Context, fn func(agent string, st agents.State) error) error {
	prefix := "$KV." + a.c.n.bucket + ".s."
	stream := "KV_" + a.c.n.bucket
	cons, err := a.c.js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{
		FilterSubject: prefix + ">", DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy, AckPolicy: jetstream.AckNonePolicy,
		Replicas: 1, MemoryStorage: true, InactiveThreshold: time.Minute})
	if err != nil {
		return fmt.Errorf("agents: reading every state: %w", err)
	}
	defer a.c.js.DeleteConsumer(context.WithoutCancel(ctx), stream, cons.CachedInfo().Name)
	for {
		batch, err := cons.FetchNoWait(stateBatch)
		if err != nil {
			return fmt.Errorf("agents: reading every state: %w", err)
		}
		n, pending := 0, uint64(0)
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				return fmt.Errorf("agents: reading every state: %w", err)
			}
			pending = md.NumPending
			if op := m.Headers().Get("KV-Operation"); op != "" {
				continue // a deleted or purged record
			}
			if err := eachRecord(strings.TrimPrefix(m.Subject(), prefix), m.Data(), fn); err != nil {
				return err
			}
		}
		if err := batch.Error(); err != nil {
			return fmt.Errorf("agents: reading every state: %w", err)
		}
		if n == 0 || pending == 0 {
			return nil
		}
	}
}

// eachRecord decodes the record of the agent whose key token is tok and
// hands its state to fn.
func eachRecord(tok string, v []byte, fn func(agent string, st agents.State) error) error {
	id, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return fmt.Errorf("agents: key s.%s: %v", tok, err)
	}
	r, err := decodeRecord(string(id), v)
	if err != nil {
		return err
	}
	return fn(string(id), r.state())
}

// put writes r as agent's record if its revision is still rev (0: if
// there is none).
func (a *Agents) put(ctx context.Context, agent string, r *agentRecord, rev uint64) error {
	b, err := cbor.Marshal(r)
	if err != nil {
		return err
	}
	v := append([]byte{agentVersion}, b...)
	defer a.c.dropCached(agent) // written or not, read it again
	if rev == 0 {
		_, err = a.c.kv.Create(ctx, stateKey(agent), v)
	} else {
		_, err = a.c.kv.Update(ctx, stateKey(agent), v, rev)
	}
	if isRevisionMismatch(err) {
		return errConflict
	}
	return err
}

// Get implements agents.Store.
func (a *Agents) Get(ctx context.Context, agent string) (agents.State, error) {
	r, _, found, err := a.get(ctx, agent)
	if err != nil {
		return agents.State{}, err
	}
	if !found {
		return agents.State{}, agents.ErrUnknownAgent
	}
	return r.state(), nil
}

// Agents implements agents.Store.
func (a *Agents) Agents(ctx context.Context) ([]string, error) {
	// The stream's leader answers stream info with the subjects that
	// hold messages, every acknowledged write included; listing the keys
	// through a consumer may be served by a follower that lags behind
	// (an R1 ephemeral consumer on any of the stream's servers).
	st, err := a.c.js.Stream(ctx, "KV_"+a.c.n.bucket)
	if err != nil {
		return nil, err
	}
	prefix := "$KV." + a.c.n.bucket + ".s."
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(info.State.Subjects))
	for subj := range info.State.Subjects {
		id, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(subj, prefix))
		if err != nil {
			return nil, fmt.Errorf("agents: subject %q: %v", subj, err)
		}
		out = append(out, string(id))
	}
	return out, nil
}

func admittedKey(agent string) string { return "adm." + token(agent) }

// Admit implements agents.Store: the key adm.<agent>, empty.
func (a *Agents) Admit(ctx context.Context, agent string) error {
	_, err := a.c.kv.Put(ctx, admittedKey(agent), []byte{})
	return err
}

// Admitted implements agents.Store.
func (a *Agents) Admitted(ctx context.Context, agent string) (bool, error) {
	_, err := a.c.kv.Get(ctx, admittedKey(agent))
	if isMissing(err) {
		return false, nil
	}
	return err == nil, err
}

// Forget implements agents.Store: the history of wakes is purged, then
// the agent record, so that no relay serves its KeyPackages any more,
// then the pooled KeyPackages' keys.
func (a *Agents) Forget(ctx context.Context, agent string) error {
	r, _, found, err := a.get(ctx, agent)
	if err != nil {
		return err
	}
	// Purging the key's subject from the stream leaves no purge marker
	// behind, so that Agents, which lists the subjects holding messages,
	// no longer names the agent.
	st, err := a.c.js.Stream(ctx, "KV_"+a.c.n.bucket)
	if err != nil {
		return err
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSubject("$KV."+a.c.n.bucket+"."+wakesKey(agent))); err != nil || !found {
		return err
	}
	err = st.Purge(ctx, jetstream.WithPurgeSubject("$KV."+a.c.n.bucket+"."+stateKey(agent)))
	a.c.dropCached(agent)
	if err != nil {
		return err
	}
	a.deleteKPs(ctx, agent, r.Pool)
	return nil
}

// Usage implements agents.Store: the agent records and the bucket's bytes.
func (a *Agents) Usage(ctx context.Context) (agents.Usage, error) {
	ids, err := a.Agents(ctx)
	if err != nil {
		return agents.Usage{}, err
	}
	st, err := a.c.kv.Status(ctx)
	if err != nil {
		return agents.Usage{}, err
	}
	return agents.Usage{Agents: len(ids), Bytes: int64(st.Bytes())}, nil
}
