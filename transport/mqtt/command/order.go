package command

import (
	"cmp"
	"encoding/json"
	"slices"

	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/transport/mqtt"
)

// claimed is a stored command with the sequence number it claims.
type claimed struct {
	d   *mqtt.Delivery
	seq uint64
}

// ClaimedSeq returns the sequence number o's payload claims, unverified (0
// when it claims none).
func ClaimedSeq(o *governed.Object) uint64 {
	var claim struct {
		Seq uint64 `json:"seq"`
	}
	json.Unmarshal(o.Payload, &claim)
	return claim.Seq
}

// Order sorts a backlog of commands for admission, as mqtt.Handler's Order
// wants it: undecodable messages first, then each operator's commands by
// their (claimed) sequence number, the operators interleaved by issuance
// time. Claims are unverified here; they only decide the order in which
// the device's admission checks them, so that a broker that redelivers a
// backlog out of order does not change which commands run.
func Order(b []*mqtt.Delivery) []*mqtt.Delivery {
	var out []*mqtt.Delivery
	groups := map[string][]claimed{}
	var issuers []string
	for _, d := range b {
		if d.Object == nil {
			out = append(out, d)
			continue
		}
		k := d.Object.Issuer.String()
		if _, ok := groups[k]; !ok {
			issuers = append(issuers, k)
		}
		groups[k] = append(groups[k], claimed{d, ClaimedSeq(d.Object)})
	}
	for _, k := range issuers {
		slices.SortStableFunc(groups[k], func(a, b claimed) int { return cmp.Compare(a.seq, b.seq) })
	}
	for {
		best := -1
		for i, k := range issuers {
			g := groups[k]
			if len(g) > 0 && (best < 0 || g[0].d.Object.IssuedAt.Before(groups[issuers[best]][0].d.Object.IssuedAt)) {
				best = i
			}
		}
		if best < 0 {
			return out
		}
		k := issuers[best]
		out = append(out, groups[k][0].d)
		groups[k] = groups[k][1:]
	}
}
