package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/transport/operatorapi"
)

// TestQueueListShowsDamaged: records the relay withholds because they fail
// their checksum are printed with their seqs and what to do.
func TestQueueListShowsDamaged(t *testing.T) {
	var ans operatorapi.QueueAnswer
	if err := json.Unmarshal([]byte(`{"agent":"did:key:zA","records":[],"messages":0,"bytes":0,"damaged":[4,9]}`), &ans); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	printQueue(&out, queueArgs{}, ans)
	for _, want := range []string{"2 damaged records withheld from the device", "seqs [4 9]", "torporctl queue purge --all"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("queue list printed %q, want %q", out.String(), want)
		}
	}
}
