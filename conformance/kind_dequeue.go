package conformance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

func init() {
	Register("asleep-dequeue", runDequeue)
	Register("asleep-dequeue-sequence", runDequeueSequence)
	Register("asleep-dequeue-restart", runDequeueRestart)
}

// The dequeue kinds run the agent's real pipeline (runtime.OpenPipeline:
// the drainer with the receiver checks, replay cache, gate, ledger and
// outbox on one bbolt file, with fsync) over records taken from, and
// acknowledged to, the relay's real queue store (queue.Bolt), both under
// the vector's temporary directory. Only the device link between them is
// left out: the records are the store's, and the acknowledgement is the
// store's Ack, as the link's relay side calls it.
//
// The vectors carry unencrypted Governed Objects, so the pipeline runs with
// AllowPlaintext, and their bodies put {mediaType, object} directly on the
// part, without A2A's data wrapper (INDEX.md, "shape caveat"). The drain
// accepts that shape on purpose: it reads it as a data part, so the media
// type rules of draft Section 7.3 still apply (see runtime/drain, part).
//
// Results print as the vector's expect members: "name=value", and for the
// *Min members "name>=min" when met, else "name=<got>".

// dequeueAgentSeed is the last byte of the RFC 8032 seed of the agent the
// vectors' records are queued for (the vectors name none).
const dequeueAgentSeed = 0x0a

type dequeueVector struct {
	Body              json.RawMessage            `json:"body"`
	OpaqueBlobBase64  string                     `json:"opaqueBlobBase64"`
	TTLMs             *int64                     `json:"ttlMs"`
	EnqueuedAt        *time.Time                 `json:"enqueuedAt"`
	AdvancedNow       *time.Time                 `json:"advancedNow"`
	WakeNow           *time.Time                 `json:"wakeNow"`
	PermittedPurposes []string                   `json:"permittedPurposes"`
	Steps             []string                   `json:"steps"`
	Expect            map[string]json.RawMessage `json:"expect"`
}

// body returns the queued request bytes: the body as the reference runner
// serialises it (compact JSON), or the opaque blob.
func (in *dequeueVector) body() ([]byte, error) {
	if in.OpaqueBlobBase64 != "" {
		return base64.StdEncoding.DecodeString(in.OpaqueBlobBase64)
	}
	if len(in.Body) == 0 {
		return nil, errors.New("neither body nor opaqueBlobBase64")
	}
	var v any
	if err := json.Unmarshal(in.Body, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func (in *dequeueVector) wakeNow() time.Time {
	if in.WakeNow != nil {
		return *in.WakeNow
	}
	if in.EnqueuedAt != nil {
		return *in.EnqueuedAt
	}
	return queueNow
}

// dequeueRun is one vector's relay queue and agent pipeline.
type dequeueRun struct {
	v      *Vector
	in     *dequeueVector
	dir    string
	clock  *clocktest.Clock
	agent  *did.PrivateKey
	caller string
	q      queue.Store
	db     *bolt.DB
	pipe   *runtime.Pipeline
	app    *deliver.Recorder
	got    map[string]any
	queues int // queue files opened, so a restart can start a new queue
}

func newDequeueRun(v *Vector) (*dequeueRun, error) {
	var in dequeueVector
	if err := v.Decode(&in); err != nil {
		return nil, err
	}
	dir, err := v.TempDir()
	if err != nil {
		return nil, err
	}
	seed := make([]byte, 32)
	seed[31] = dequeueAgentSeed
	agent, err := did.NewKeyFromSeed(seed)
	if err != nil {
		return nil, err
	}
	r := &dequeueRun{v: v, in: &in, dir: dir, clock: clocktest.New(in.wakeNow()), agent: agent,
		app: &deliver.Recorder{}, got: map[string]any{}}
	if len(v.Identities) > 0 {
		r.caller = v.Identities[0].String()
	}
	return r, nil
}

// open opens the relay queue (a new file when fresh) and the agent's
// pipeline.
func (r *dequeueRun) open(freshQueue bool) error {
	if freshQueue || r.q == nil {
		r.queues++
		q, err := openQueue(filepath.Join(r.dir, fmt.Sprintf("queue-%d.db", r.queues)))
		if err != nil {
			return err
		}
		r.q = q
	}
	db, err := store.Open(filepath.Join(r.dir, "agent.db"), nil)
	if err != nil {
		return err
	}
	permitted, err := purpose.ParseSet(strings.Join(r.in.PermittedPurposes, ","))
	if err != nil {
		db.Close()
		return err
	}
	pipe, err := runtime.OpenPipeline(db, runtime.PipelineConfig{
		Key: r.agent, Purposes: permitted, Consequential: purpose.Set{"action:*"}, AllowPlaintext: true,
		Routes: []deliver.Route{{Pattern: "*", Name: "application", Handler: r.app}}, Clock: r.clock,
	})
	if err != nil {
		db.Close()
		return err
	}
	r.db, r.pipe = db, pipe
	return nil
}

// restart closes the agent's pipeline and file, as a process exit would.
func (r *dequeueRun) restart() error {
	r.pipe.Close()
	if err := r.db.Close(); err != nil {
		return err
	}
	return r.open(true)
}

func (r *dequeueRun) close() {
	if r.pipe != nil {
		r.pipe.Close()
	}
	if r.db != nil {
		r.db.Close()
	}
	if r.q != nil {
		r.q.Close()
	}
}

// enqueue queues the vector's body at at, as the relay would on a 503.
func (r *dequeueRun) enqueue(at time.Time) error {
	body, err := r.in.body()
	if err != nil {
		return err
	}
	b := queuebounds.Default()
	if r.in.TTLMs != nil {
		b.TTL = time.Duration(*r.in.TTLMs) * time.Millisecond
	}
	_, err = r.q.Enqueue(context.Background(), queue.Record{Agent: r.agent.DID().String(), From: r.caller, Body: body}, b, at)
	return err
}

// drain runs one wake's drain at now: every live record, in batches, the
// batch acknowledged to the queue only after the agent's transaction
// committed.
func (r *dequeueRun) drain(now time.Time) (drain.Report, error) {
	ctx := context.Background()
	r.clock.Set(now)
	agent := r.agent.DID().String()
	var total drain.Report
	var after uint64
	for {
		recs, err := r.q.Next(ctx, agent, after, 64, now)
		if err != nil || len(recs) == 0 {
			return total, err
		}
		batch := make([]drain.Record, len(recs))
		for i, rec := range recs {
			batch[i] = drain.Record{Seq: rec.Seq, From: rec.From, ExpiresAt: rec.ExpiresAt, Body: rec.Body}
		}
		rep, err := r.pipe.Batch(ctx, batch, func(ctx context.Context, seqs []uint64) error {
			return r.q.Ack(ctx, agent, seqs)
		})
		total.Add(rep)
		if err != nil {
			return total, err
		}
		after = recs[len(recs)-1].Seq
	}
}

func (r *dequeueRun) count(now time.Time) (int, error) {
	st, err := r.q.Stats(context.Background(), r.agent.DID().String(), now)
	return st.Messages, err
}

func (r *dequeueRun) fail(err error) Result {
	return Result{Status: Fail, Expected: renderQueueExpect(r.in.Expect), Got: "error", Note: err.Error()}
}

func (r *dequeueRun) result() Result {
	dev, ok := dequeueDeviations[r.v.ID]
	if !ok || len(r.in.OpaqueBlobBase64) == 0 {
		return Compare(renderQueueExpect(r.in.Expect), renderGot(r.in.Expect, r.got))
	}
	var own map[string]json.RawMessage
	if err := json.Unmarshal([]byte(dev.expect), &own); err != nil {
		return Broken(err)
	}
	ref := renderQueueExpect(r.in.Expect)
	r.in.Expect = own // render reports the members of Torpor's expectation
	res := Compare(renderQueueExpect(own), renderGot(r.in.Expect, r.got))
	res.Note = fmt.Sprintf("deliberate deviation: the reference expects %s; %s", ref, dev.why)
	return res
}

// dequeueDeviations are the reference's dequeue vectors whose expectation
// Torpor deliberately does not meet, with what Torpor does instead (in the
// vector's expect format, compared like the reference's) and why. They
// apply to vectors with an opaque record only.
var dequeueDeviations = map[string]struct{ expect, why string }{
	"od-054": {`{"rejectedMin": 1, "processed": 1, "queueCount": 0}`, opaqueWhy},
	"od-055": {`{"rejectedMin": 1, "listCountAfterPurge": 0}`, opaqueWhy},
}

// opaqueWhy is why Torpor acknowledges an opaque record (docs/agent.md,
// "Drain: validate-on-dequeue").
const opaqueWhy = "Torpor refuses a record that is not a JSON-RPC message submission and acknowledges it " +
	"(cause opaque), since no later wake would judge it otherwise: left queued it fills the queue until its TTL " +
	"and comes back at every wake"

// withDequeueRun runs body over a fresh run of v whose agent is open and
// whose record is enqueued at the vector's wake time, now, and returns
// the run's result.
func withDequeueRun(v *Vector, body func(r *dequeueRun, now time.Time) error) Result {
	r, err := newDequeueRun(v)
	if err != nil {
		return Broken(err)
	}
	defer r.close()
	if err := r.open(true); err != nil {
		return r.fail(err)
	}
	now := r.in.wakeNow()
	if err := r.enqueue(now); err != nil {
		return r.fail(err)
	}
	if err := body(r, now); err != nil {
		return r.fail(err)
	}
	return r.result()
}

// runDequeue runs asleep-dequeue (profile, Validate-on-Dequeue): one
// record enqueued, one drain at wakeNow, and for a TTL vector a purge at
// advancedNow.
func runDequeue(v *Vector) Result {
	return withDequeueRun(v, func(r *dequeueRun, now time.Time) error {
		rep, err := r.drain(now)
		if err != nil {
			return err
		}
		r.got["accepted"] = rep.Accepted
		r.got["rejected"] = rep.RejectedTotal()
		r.got["deferred"] = rep.Deferred
		r.got["processed"] = rep.Acked
		n, err := r.count(now)
		if err != nil {
			return err
		}
		r.got["queueEmpty"], r.got["queueCount"] = n == 0, n
		if r.in.AdvancedNow == nil {
			return nil
		}
		if _, err := r.q.Purge(context.Background(), *r.in.AdvancedNow); err != nil {
			return err
		}
		r.got["listCountAfterPurge"], err = r.count(*r.in.AdvancedNow)
		return err
	})
}

// runDequeueSequence runs asleep-dequeue-sequence: steps over one process
// (replay across wakes of the same process): dequeue-accept, re-enqueue,
// dequeue-reject.
func runDequeueSequence(v *Vector) Result {
	return withDequeueRun(v, func(r *dequeueRun, now time.Time) error {
		for _, step := range r.in.Steps {
			if err := r.step(step, now); err != nil {
				return fmt.Errorf("step %s: %w", step, err)
			}
		}
		return nil
	})
}

func (r *dequeueRun) step(step string, now time.Time) error {
	switch step {
	case "re-enqueue":
		return r.enqueue(now)
	case "dequeue-accept", "dequeue-reject":
		rep, err := r.drain(now)
		if err != nil {
			return err
		}
		if step == "dequeue-accept" {
			r.got["firstAccepted"] = rep.Accepted
		} else {
			r.got["secondRejected"] = rep.RejectedTotal()
		}
		n, err := r.count(now)
		r.got["queueEmpty"] = n == 0
		return err
	}
	return fmt.Errorf("unknown step %q", step)
}

// runDequeueRestart runs asleep-dequeue-restart: accept on dequeue, stop
// the agent (its bbolt file closed), start it again with a new relay queue,
// enqueue the same body again: the replay cache on disk rejects it.
func runDequeueRestart(v *Vector) Result {
	return withDequeueRun(v, func(r *dequeueRun, now time.Time) error {
		steps := []func() error{
			func() error { return r.step("dequeue-accept", now) },
			r.restart,
			func() error { return r.enqueue(now) },
			func() error { return r.step("dequeue-reject", now) },
		}
		for _, s := range steps {
			if err := s(); err != nil {
				return err
			}
		}
		return nil
	})
}
