package envelope

import (
	"errors"
	"fmt"
)

// ErrWidened is the reason a child scope or envelope is not covered by its
// parent; the wrapped message names the rule it breaks.
var ErrWidened = errors.New("envelope: child not covered by parent")

// Covers returns nil when the child scope attenuates the parent scope under
// the registry, and otherwise an error wrapping ErrUnknownVersion,
// ErrMalformed or ErrWidened that names the rule.
func (r Registry) Covers(parent, child Scope) error {
	if err := parent.Validate(); err != nil {
		return fmt.Errorf("parent: %w", err)
	}
	if err := child.Validate(); err != nil {
		return fmt.Errorf("child: %w", err)
	}
	switch {
	case !r.CoversAct(parent.Act, child.Act):
		return fmt.Errorf("%w: action %q not covered by %q", ErrWidened, child.Act, parent.Act)
	case !CoversRes(parent.Res, child.Res):
		return fmt.Errorf("%w: resource %q not covered by %q", ErrWidened, child.Res, parent.Res)
	case parent.Cap != nil && (child.Cap == nil || !CoversCap(*parent.Cap, *child.Cap)):
		return fmt.Errorf("%w: cap wider than the parent's", ErrWidened)
	case !CoversCP(parent.CP, child.CP):
		return fmt.Errorf("%w: counterparties wider than the parent's", ErrWidened)
	case parent.DecayMaxSec != nil && (child.DecayMaxSec == nil || *child.DecayMaxSec > *parent.DecayMaxSec):
		return fmt.Errorf("%w: decay_max_sec may only tighten", ErrWidened)
	case depth(child) > depth(parent)-1:
		return fmt.Errorf("%w: depth %d must drop by at least one from %d", ErrWidened, depth(child), depth(parent))
	}
	return nil
}

func isWidened(err error) bool { return errors.Is(err, ErrWidened) }

func depth(s Scope) int {
	if s.Depth == nil {
		return 0
	}
	return *s.Depth
}

// CoversEnvelope returns nil when every child scope is covered by some
// parent scope and the child scopes conserve each parent scope's budget:
// the child scopes a capped parent scope covers may together carry no more
// than its cumulative budget, each scaled to the parent's window (LIP-3 §6:
// five narrow scopes cannot each carry the full cap). A child scope covered
// by two parent scopes counts against both.
func (r Registry) CoversEnvelope(parent, child []Scope) error {
	if len(parent) == 0 || len(child) == 0 {
		return fmt.Errorf("%w: an envelope holds at least one scope", ErrMalformed)
	}
	spent := make([]int64, len(parent))
	for i, c := range child {
		var first error
		covered := false
		for j, p := range parent {
			err := r.Covers(p, c)
			if err == nil {
				covered = true
				spent[j] += scaled(p, c)
			} else if first == nil {
				first = err
			}
		}
		if !covered {
			return fmt.Errorf("child scope %d: %w", i, first)
		}
	}
	for j, p := range parent {
		if p.Cap != nil && p.Cap.Window != WindowTx && spent[j] > p.Cap.MaxCumulative {
			return fmt.Errorf("%w: child scopes carry %d of parent scope %d's budget of %d %s",
				ErrWidened, spent[j], j, p.Cap.MaxCumulative, p.Cap.Unit)
		}
	}
	return nil
}

// scaled is the child's cumulative budget in the parent's window, for a
// child Covers has accepted.
func scaled(p, c Scope) int64 {
	if p.Cap == nil || p.Cap.Window == WindowTx || p.Cap.Window == WindowEpochTotal {
		if p.Cap != nil && c.Cap != nil {
			return c.Cap.MaxCumulative
		}
		return 0
	}
	return c.Cap.MaxCumulative * (windowSeconds[p.Cap.Window] / windowSeconds[c.Cap.Window])
}
