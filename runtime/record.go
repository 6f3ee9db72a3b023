package runtime

import (
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// A wake's record (its report and the cycle state: when it began, the
// wake it planned, how many wakes there were) is not committed in a
// transaction of its own when the wake ends: it waits in memory for the
// next commit, the next wake's pulse (Pipeline.Pulse), so that an empty
// wake commits once (each bbolt commit is two fdatasync calls and a good
// part of the wake's CPU on a slow core: docs/performance.md). The pulse itself
// still commits before it is published (docs/agent.md, "Liveness
// pulses"). The record is committed before a sleep that may not keep the
// process (wake.KeepsProcess: a power-off) and when the agent stops;
// restore says when a wake's record was lost with the power or a crash
// (lostRecord).

// unrecorded is the report of the last wake not yet committed, and how
// many wakes ended since the last commit (each counts in cycle.Wakes).
type unrecorded struct {
	r     WakeReport
	wakes uint64
}

// pending is a Pipeline's unrecorded wake, and the last one it committed.
type pending struct {
	mu sync.Mutex
	u  *unrecorded // nil: nothing to commit
	// stored is the report this process last committed as the last wake
	// (putWake, the only writer of keyLastWake), which the store holds:
	// the status reads it here rather than decode it from the store at
	// every publish. nil before the first such commit.
	stored *WakeReport
}

// keep holds r for the next commit; a report still held (its commit
// failed) is replaced, its wake still counted.
func (p *pending) keep(r WakeReport) {
	p.mu.Lock()
	defer p.mu.Unlock()
	u := &unrecorded{r: r, wakes: 1}
	if p.u != nil {
		u.wakes += p.u.wakes
	}
	p.u = u
}

// take returns what is held, nil when nothing is; it stays held until
// committed reports that it was.
func (p *pending) take() *unrecorded {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.u
}

// committed forgets u, which a transaction committed; a report held since
// take keeps only the wakes u did not count.
func (p *pending) committed(u *unrecorded) {
	if u == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r := u.r
	p.stored = &r
	switch {
	case p.u == u:
		p.u = nil
	case p.u != nil:
		p.u.wakes -= u.wakes
	}
}

// lastWake returns the report held, or else the one this process last
// committed, if any.
func (p *pending) lastWake() (WakeReport, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.u != nil:
		return p.u.r, true
	case p.stored != nil:
		return *p.stored, true
	}
	return WakeReport{}, false
}

// putWake writes u in tx: the cycle state and the last wake's report.
func putWake(tx *bolt.Tx, u *unrecorded) error {
	c, err := loadCycle(tx)
	if err != nil {
		return err
	}
	c.LastWake, c.NextWake = u.r.At, u.r.NextWake
	c.Wakes += u.wakes
	if err := putCBOR(tx, keyCycle, c); err != nil {
		return err
	}
	return putCBOR(tx, keyLastWake, &u.r)
}

// keepWake holds r, the report of a wake that ended, for the next commit.
func (p *Pipeline) keepWake(r WakeReport) { p.unrec.keep(r) }

// RecordWake commits the wake's record held for the next commit, if any,
// in a transaction of its own: before a sleep that may not keep the
// process, and when the pipeline closes.
func (p *Pipeline) RecordWake() error {
	u := p.unrec.take()
	if u == nil {
		return nil
	}
	if err := p.db.Update(func(tx *bolt.Tx) error { return putWake(tx, u) }); err != nil {
		return fmt.Errorf("runtime: recording the wake: %w", err)
	}
	p.unrec.committed(u)
	return nil
}

// lastWake returns the last wake's report: the one held for the next
// commit, or else the one tx holds (as this process committed it, when it
// did).
func (p *Pipeline) lastWake(tx *bolt.Tx) (WakeReport, bool, error) {
	if r, ok := p.unrec.lastWake(); ok {
		return r, true, nil
	}
	return LastWake(tx)
}
