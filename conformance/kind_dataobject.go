package conformance

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/store"
	"github.com/torpor-dev/torpor/store/replay"
)

func init() {
	Register("data-object", runDataObject)
	Register("data-object-sequence", runDataObject)
}

// dataObjectStep is one object presented to the receiver.
type dataObjectStep struct {
	Expect string          `json:"expect"`
	Reason string          `json:"reason"`
	Object json.RawMessage `json:"object"`
}

type dataObjectVector struct {
	Now               string   `json:"now"`
	PermittedPurposes []string `json:"permittedPurposes"`
	dataObjectStep
	Sequence []dataObjectStep `json:"sequence"`
}

// runDataObject runs data-object and data-object-sequence vectors through
// governed.Receiver with the durable replay cache of store/replay, in a
// fresh bbolt file per vector (the steps of a sequence share it). Each step
// is one committed transaction, as the agent processes a drained record.
// The receiver knows the manifest's identities, so a signature made by one
// of them for another reports signature-not-by-issuer (see package
// governed).
func runDataObject(v *Vector) Result {
	var in dataObjectVector
	if err := v.Decode(&in); err != nil {
		return Broken(err)
	}
	if len(in.Sequence) == 0 {
		in.Sequence = []dataObjectStep{in.dataObjectStep}
	}
	now, err := time.Parse(time.RFC3339Nano, in.Now)
	if err != nil {
		return Broken(fmt.Errorf("now: %v", err))
	}
	dir, err := v.TempDir()
	if err != nil {
		return Broken(err)
	}
	db, err := store.Open(filepath.Join(dir, "agent.db"), nil)
	if err != nil {
		return Broken(err)
	}
	defer db.Close()
	clk := clocktest.New(now)
	cache, err := replay.Open(db, &replay.Options{Clock: clk})
	if err != nil {
		return Broken(err)
	}
	r := &governed.Receiver{Purposes: in.PermittedPurposes, KnownSigners: v.Identities, Clock: clk}
	var want, got []string
	for _, s := range in.Sequence {
		want = append(want, verdict(s.Expect, s.Reason))
		err := db.Update(func(tx *bolt.Tx) error {
			_, err := r.Accept(s.Object, governed.Input{Replay: cache.Tx(tx)})
			return err
		})
		if err != nil && !errors.Is(err, governed.ErrRejected) {
			return Result{Status: Fail, Expected: strings.Join(want, ","), Got: "error", Note: err.Error()}
		}
		got = append(got, verdict(outcome(err), governed.ReasonOf(err).String()))
	}
	return compareVerdicts(want, got)
}

func outcome(err error) string {
	if err == nil {
		return "accept"
	}
	return "reject"
}

// verdict renders "accept" or "reject(<reason>)" ("reject" without one).
func verdict(expect, reason string) string {
	if expect == "accept" || reason == "" {
		return expect
	}
	return expect + "(" + reason + ")"
}

// compareVerdicts passes when every step matches; an expected "reject"
// without a reason matches a rejection for any reason.
func compareVerdicts(want, got []string) Result {
	r := Compare(strings.Join(want, ","), strings.Join(got, ","))
	if r.Status == Pass || len(want) != len(got) {
		return r
	}
	for i := range want {
		if want[i] != got[i] && !(want[i] == "reject" && strings.HasPrefix(got[i], "reject(")) {
			return r
		}
	}
	r.Status = Pass
	return r
}
