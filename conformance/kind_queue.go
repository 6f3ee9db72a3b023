package conformance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/torpor-dev/torpor/store/queue"
	"github.com/torpor-dev/torpor/transport/a2a/queuebounds"
)

func init() { Register("asleep-queue", runAsleepQueue) }

// queueRecipient is the agent the vectors' records are queued for. The
// reference's queue belongs to one agent and its vectors name no
// recipient; Torpor's store is per agent.
const queueRecipient = "did:key:conformance-recipient"

// queueNow is the instant of vectors that give none (the vectors' common
// evaluation instant).
var queueNow = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)

type queueInput struct {
	BlobBase64 string `json:"blobBase64"`
	FromDid    string `json:"fromDid"`
	TTLMs      *int64 `json:"ttlMs"`
}

type queueVector struct {
	Action string `json:"action"`
	Caps   struct {
		MaxMessages       *int   `json:"maxMessages"`
		MaxTotalBytes     *int64 `json:"maxTotalBytes"`
		MaxPendingPerPeer *int   `json:"maxPendingPerPeer"`
		TTLMs             *int64 `json:"ttlMs"`
	} `json:"caps"`
	Input       *queueInput                `json:"input"`
	Inputs      []queueInput               `json:"inputs"`
	EnqueuedAt  *time.Time                 `json:"enqueuedAt"`
	AdvancedNow *time.Time                 `json:"advancedNow"`
	Expect      map[string]json.RawMessage `json:"expect"`
}

// runAsleepQueue runs the asleep-queue vectors (profile, Store-and-Forward
// and Backpressure) against the relay's real store: a queue.Bolt file under
// the vector's temporary directory, with fsync, reopened from disk where
// the vector asks. Caps override queuebounds.Default (the profile's
// reference bounds); a ttlMs sets the bounds' TTL. Expected and got print
// as the vector's expect members, "name=value" sorted by name.
func runAsleepQueue(v *Vector) Result {
	var in queueVector
	if err := v.Decode(&in); err != nil {
		return Broken(err)
	}
	dir, err := v.TempDir()
	if err != nil {
		return Broken(err)
	}
	inputs := in.Inputs
	if in.Input != nil {
		inputs = append([]queueInput{*in.Input}, inputs...)
	}
	if len(inputs) == 0 {
		return Broken(errors.New("no input"))
	}
	run := &queueRun{path: filepath.Join(dir, "queue.db"), bounds: in.bounds(inputs[0]), got: map[string]any{}}
	defer run.close()
	if err := run.open(); err != nil {
		return Result{Status: Fail, Got: "error", Note: err.Error()}
	}
	act, ok := queueActions[in.Action]
	if !ok {
		return Broken(fmt.Errorf("unknown action %q", in.Action))
	}
	if err := act(run, &in, inputs); err != nil {
		return Result{Status: Fail, Expected: renderQueueExpect(in.Expect), Got: "error", Note: err.Error()}
	}
	return Compare(renderQueueExpect(in.Expect), run.render(in.Expect))
}

// bounds returns the vector's caps over the default bounds.
func (in *queueVector) bounds(first queueInput) queuebounds.Bounds {
	b := queuebounds.Default()
	c := in.Caps
	if c.MaxMessages != nil {
		b.MaxMessages = *c.MaxMessages
	}
	if c.MaxTotalBytes != nil {
		b.MaxBytes = *c.MaxTotalBytes
	}
	if c.MaxPendingPerPeer != nil {
		b.MaxPerPeer = *c.MaxPendingPerPeer
	}
	b.MaxPeerBytes = b.MaxBytes // the reference has no per-peer byte cap
	for _, ttl := range []*int64{c.TTLMs, first.TTLMs} {
		if ttl != nil {
			b.TTL = time.Duration(*ttl) * time.Millisecond
		}
	}
	return b
}

var queueActions = map[string]func(*queueRun, *queueVector, []queueInput) error{
	"enqueue": func(q *queueRun, _ *queueVector, in []queueInput) error {
		kind, err := q.enqueue(in[0], queueNow)
		if err != nil {
			return err
		}
		q.got["accepted"] = kind == ""
		return q.count("listCount", queueNow)
	},
	"persist-reopen": func(q *queueRun, _ *queueVector, in []queueInput) error {
		kind, err := q.enqueue(in[0], queueNow)
		if err != nil {
			return err
		}
		q.got["accepted"] = kind == ""
		q.close()
		if err := q.open(); err != nil {
			return err
		}
		return q.count("listCountAfterReopen", queueNow)
	},
	"enqueue-reject": func(q *queueRun, _ *queueVector, in []queueInput) error {
		for i, input := range in {
			kind, err := q.enqueue(input, queueNow)
			if err != nil {
				return err
			}
			switch {
			case i == 0:
				q.got["firstAccepted"] = kind == ""
			case i == 1:
				q.got["secondKind"] = kind
			}
			if _, seen := q.got["rejectKind"]; !seen && kind != "" {
				q.got["rejectKind"] = kind
			}
		}
		return nil
	},
	"ttl-expiry": func(q *queueRun, v *queueVector, in []queueInput) error {
		if v.EnqueuedAt == nil || v.AdvancedNow == nil {
			return errors.New("ttl-expiry needs enqueuedAt and advancedNow")
		}
		if _, err := q.enqueue(in[0], *v.EnqueuedAt); err != nil {
			return err
		}
		if err := q.count("listCountBefore", *v.EnqueuedAt); err != nil {
			return err
		}
		n, err := q.store.Purge(context.Background(), *v.AdvancedNow)
		if err != nil {
			return err
		}
		q.got["purged"] = n
		return q.count("listCountAfter", *v.AdvancedNow)
	},
}

// queueRun is one vector's store and what it observed.
type queueRun struct {
	path   string
	bounds queuebounds.Bounds
	store  queue.Store
	got    map[string]any
}

func (q *queueRun) open() (err error) {
	q.store, err = openQueue(q.path)
	return err
}

func (q *queueRun) close() {
	if q.store != nil {
		q.store.Close()
		q.store = nil
	}
}

// enqueue enqueues one input and returns "" when it was accepted or the
// refusing bound's kind ("messages", "bytes", "peer", or "too-large").
func (q *queueRun) enqueue(in queueInput, now time.Time) (string, error) {
	body, err := base64.StdEncoding.DecodeString(in.BlobBase64)
	if err != nil {
		return "", fmt.Errorf("blobBase64: %v", err)
	}
	r := queue.Record{Agent: queueRecipient, From: in.FromDid, Body: body}
	_, err = q.store.Enqueue(context.Background(), r, q.bounds, now)
	var full *queue.FullError
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &full):
		return full.Kind, nil
	case errors.Is(err, queue.ErrTooLarge):
		return "too-large", nil
	}
	return "", err
}

// count records under name how many live records a drain would list at
// now, checking that the store's counters agree.
func (q *queueRun) count(name string, now time.Time) error {
	ctx := context.Background()
	recs, err := q.store.Next(ctx, queueRecipient, 0, 1<<20, now)
	if err != nil {
		return err
	}
	st, err := q.store.Stats(ctx, queueRecipient, now)
	if err != nil {
		return err
	}
	if st.Messages != len(recs) {
		return fmt.Errorf("store counters say %d live records, Next lists %d", st.Messages, len(recs))
	}
	q.got[name] = len(recs)
	return nil
}

// render prints the observed values of the members expect names.
func (q *queueRun) render(expect map[string]json.RawMessage) string {
	return renderGot(expect, q.got)
}

// renderQueueExpect prints a vector's expect members as "name=value", a
// member named xMin as "x>=value" (a lower bound).
func renderQueueExpect(expect map[string]json.RawMessage) string {
	var parts []string
	for _, k := range queueExpectKeys(expect) {
		var v any
		if err := json.Unmarshal(expect[k], &v); err != nil {
			v = string(expect[k])
		}
		if base, ok := strings.CutSuffix(k, "Min"); ok {
			parts = append(parts, fmt.Sprintf("%s>=%v", base, v))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%v", k, v))
	}
	return strings.Join(parts, " ")
}

// renderGot prints the observed value of each member of expect as
// "name=value" ("?" when none was observed), as renderQueueExpect prints
// the expected one: a member xMin as "x>=min" when x reached min, else as
// "x=value".
func renderGot(expect map[string]json.RawMessage, got map[string]any) string {
	var parts []string
	for _, k := range queueExpectKeys(expect) {
		if base, ok := strings.CutSuffix(k, "Min"); ok {
			var min int
			json.Unmarshal(expect[k], &min)
			n, _ := got[base].(int)
			if n >= min {
				parts = append(parts, fmt.Sprintf("%s>=%d", base, min))
			} else {
				parts = append(parts, fmt.Sprintf("%s=%d", base, n))
			}
			continue
		}
		v, ok := got[k]
		if !ok {
			v = "?"
		}
		parts = append(parts, fmt.Sprintf("%s=%v", k, v))
	}
	return strings.Join(parts, " ")
}

func queueExpectKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
