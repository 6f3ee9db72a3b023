package envelope

import "slices"

// The cap windows, UTC epoch buckets, narrowest first: tx ⊑ utc_hour ⊑
// utc_day ⊑ epoch_total.
const (
	WindowTx         = "tx"
	WindowUTCHour    = "utc_hour"
	WindowUTCDay     = "utc_day"
	WindowEpochTotal = "epoch_total"
)

var windowRank = map[string]int{WindowTx: 0, WindowUTCHour: 1, WindowUTCDay: 2, WindowEpochTotal: 3}

// windowSeconds are the lengths of the windows that repeat; tx and
// epoch_total do not.
var windowSeconds = map[string]int64{WindowUTCHour: 3600, WindowUTCDay: 86400}

// childShare is the most a child window may carry of a parent's cumulative
// budget, in the child's window (integer floor scaling), and false when no
// child budget in that window is within the parent's:
//   - a tx parent bounds only single transactions: any child window narrows it;
//   - a tx child under a windowed parent would be unbounded over the window;
//   - a repeating child under epoch_total would renew past the total: only
//     epoch_total (Torpor's narrower reading; the vectors are silent);
//   - hour under day gets floor(day / 24); a child wider than its parent none.
func childShare(parent, child Cap) (int64, bool) {
	switch {
	case parent.Window == WindowTx:
		return -1, true
	case child.Window == WindowTx:
		return 0, false
	case parent.Window == WindowEpochTotal:
		return parent.MaxCumulative, child.Window == WindowEpochTotal
	case windowRank[child.Window] > windowRank[parent.Window]:
		return 0, false
	}
	return parent.MaxCumulative * windowSeconds[child.Window] / windowSeconds[parent.Window], true
}

// CoversCap reports whether child is within parent: the same unit, a
// per-transaction ceiling no higher, and a cumulative budget within the
// parent's share for the child's window.
func CoversCap(parent, child Cap) bool {
	if parent.Unit != child.Unit || child.MaxPerTx > parent.MaxPerTx {
		return false
	}
	share, ok := childShare(parent, child)
	return ok && (share < 0 || child.MaxCumulative <= share)
}

// CoversCP reports whether the counterparties child allows are a subset of
// those parent allows (effective sets: allow, or everyone when allow is
// empty, minus deny). A nil set allows everyone.
func CoversCP(parent, child *Counterparties) bool {
	if parent == nil {
		return true
	}
	if child == nil {
		child = &Counterparties{}
	}
	if len(child.Allow) == 0 {
		// The child allows everyone not denied: the parent must too, and the
		// child must deny at least what the parent denies.
		if len(parent.Allow) != 0 {
			return false
		}
		for _, d := range parent.Deny {
			if !slices.Contains(child.Deny, d) {
				return false
			}
		}
		return true
	}
	for _, a := range child.Allow {
		if slices.Contains(child.Deny, a) {
			continue
		}
		if slices.Contains(parent.Deny, a) || (len(parent.Allow) != 0 && !slices.Contains(parent.Allow, a)) {
			return false
		}
	}
	return true
}
