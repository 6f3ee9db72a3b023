package groupcommit

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// TestBatches holds a first commit open until 20 calls wait, then checks
// that they share one commit, capped by Max, and that each gets its own
// error.
func TestBatches(t *testing.T) {
	release, held := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var batches [][]int
	g := &Group[int]{Max: 15}
	g.Commit = func(batch []int, _ func()) []error {
		if batch[0] < 0 {
			close(held)
			<-release
			return nil
		}
		mu.Lock()
		batches = append(batches, append([]int(nil), batch...))
		mu.Unlock()
		errs := make([]error, len(batch))
		for i, v := range batch {
			if v == 7 {
				errs[i] = errors.New("seven")
			}
		}
		return errs
	}
	first := make(chan error)
	go func() { first <- g.Do(-1) }()
	<-held
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = g.Do(i) })
	}
	for g.Waiting() < n {
	}
	close(release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if len(batches) != 2 || len(batches[0]) != 15 || len(batches[1]) != 5 {
		t.Errorf("batches %v, want one of 15 and one of 5", batches)
	}
	for i, err := range errs {
		if (err != nil) != (i == 7) {
			t.Errorf("call %d: %v", i, err)
		}
	}
}

// TestHandOffEarly: a leader that hands off before its commit ends lets
// the next batch commit while it still runs (without the hand-off the
// second call waits for the first forever and the test times out).
func TestHandOffEarly(t *testing.T) {
	started, inSecond, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	g := &Group[string]{}
	g.Commit = func(batch []string, handOff func()) []error {
		if batch[0] == "first" {
			close(started)
			handOff()
			<-release // the second commits meanwhile
			return nil
		}
		close(inSecond)
		return nil
	}
	done := make(chan error)
	go func() { done <- g.Do("first") }()
	<-started
	if err := g.Do("second"); err != nil {
		t.Fatal(err)
	}
	<-inSecond
	close(release)
	if err := <-done; err != nil {
		t.Fatal(fmt.Errorf("first: %w", err))
	}
}

// TestReusedCallsAnswerTheirOwn runs many concurrent calls, each with its
// own error, while commits hand off early: with calls reused, every Do
// must still get its own result.
func TestReusedCallsAnswerTheirOwn(t *testing.T) {
	g := &Group[int]{Max: 7}
	g.Commit = func(batch []int, handOff func()) []error {
		handOff()
		errs := make([]error, len(batch))
		for i, v := range batch {
			if v%3 == 0 {
				errs[i] = fmt.Errorf("call %d", v)
			}
		}
		return errs
	}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 500 {
				v := w*1000 + i
				err := g.Do(v)
				if want := v%3 == 0; (err != nil) != want || want && err.Error() != fmt.Sprintf("call %d", v) {
					t.Errorf("Do(%d) = %v", v, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
