package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
)

// expectMembers are the members of "expect" that the reference runner
// defines for each kind it runs (Qwixl/Atom, spec/vectors/offline-delivery/
// run.mjs at the snapshot testdata/vectors/atom/INDEX.md names and later:
// checkHttpExpect, evaluateAsleepQueue, evaluateAsleepDequeue and the
// others). The kinds here check each of them; a vector that names a member
// outside its kind's list fails, because a member that is not understood
// is an expectation that would otherwise go unchecked. Kinds whose expect
// is a string (data-object, encapsulation-part, credential-binding) or
// absent (agent-card-build) are not listed.
var expectMembers = map[string][]string{
	"reachability-verdict": {"accept", "error", "retryAfterSecMin"},
	"asleep-http-response": {"statusCode", "passThrough", "enqueued", "error", "queued", "kind",
		"retryAfterHeader", "retryAfterSecMin", "fromDid"},
	"asleep-queue": {"accepted", "listCount", "listCountAfterReopen", "firstAccepted", "secondKind",
		"rejectKind", "listCountBefore", "listCountAfter", "purged"},
	"asleep-dequeue": {"acceptedMin", "processedMin", "rejectedMin", "deferredMin", "accepted", "processed",
		"queueEmpty", "queueCount", "listCountAfterPurge"},
	"agent-card-extension": {"schemaOk"},
}

// expectSteps are the members that hold one request's expectations in a
// vector with "requests" (asleep-http-response), in request order.
var expectSteps = []string{"first", "second"}

// checkExpect returns an error naming each member of a vector's expect
// that its kind does not define (expectMembers).
func checkExpect(kind string, raw json.RawMessage) error {
	known, ok := expectMembers[kind]
	if !ok || len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	var expect map[string]json.RawMessage
	if err := json.Unmarshal(raw, &expect); err != nil {
		return fmt.Errorf("expect is not an object: %v", err)
	}
	var unknown []string
	for name, v := range expect {
		if kind == "asleep-http-response" && slices.Contains(expectSteps, name) {
			if err := checkExpect(kind, v); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			continue
		}
		if !slices.Contains(known, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("expectation members not understood for kind %s: %q (known: %q)", kind, unknown, known)
	}
	return nil
}
