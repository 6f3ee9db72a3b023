package calls

import (
	"errors"
	"testing"

	"github.com/torpor-dev/torpor/transport/link/wire"
)

// TestAnswersReachTheirRequest: answers go to the request with their id,
// in any order; an answer nobody waits for is dropped; after Fail every
// waiting request gets nil and every later Open the first error.
func TestAnswersReachTheirRequest(t *testing.T) {
	var c Table
	id1, ch1, err := c.Open()
	if err != nil {
		t.Fatal(err)
	}
	id2, ch2, _ := c.Open()
	if id1 == id2 {
		t.Fatalf("two requests numbered %d", id1)
	}
	c.Answer(&wire.Frame{ID: id2, T: wire.FrameAcked})
	c.Answer(&wire.Frame{ID: id1, T: wire.FrameRecords})
	if f := <-ch1; f.T != wire.FrameRecords {
		t.Errorf("request %d got %q, want records", id1, f.T)
	}
	if f := <-ch2; f.T != wire.FrameAcked {
		t.Errorf("request %d got %q, want acked", id2, f.T)
	}
	c.Answer(&wire.Frame{ID: 99}) // nobody waits: must not block

	id3, ch3, _ := c.Open()
	c.Forget(id3)
	c.Answer(&wire.Frame{ID: id3})
	if len(ch3) != 0 {
		t.Error("a forgotten request got its answer")
	}

	_, ch4, _ := c.Open()
	first, second := errors.New("first"), errors.New("second")
	c.Fail(first)
	c.Fail(second)
	if f := <-ch4; f != nil {
		t.Errorf("a waiting request got %+v after Fail, want nil", f)
	}
	if _, _, err := c.Open(); err != first {
		t.Errorf("Open after Fail = %v, want the first error", err)
	}
	if err := c.Err(); err != first {
		t.Errorf("Err = %v, want the first error", err)
	}
}
