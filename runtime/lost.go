package runtime

import (
	"log/slog"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store/ledger"
)

// msgLost is the message of the line a wake logs for a hand-off a crash
// may have cut off.
const msgLost = "hand-off possibly lost"

// maxLostLogged caps the lost hand-offs one wake logs; the next wakes log
// the rest.
const maxLostLogged = 64

// logLost logs, as warnings, the possibly lost hand-offs the ledger keeps
// that no wake logged yet (this wake's recovery found them, or an earlier
// wake that was killed before it logged them), then marks them logged. A
// kill between the two logs them again at the next wake: each is logged at
// least once. The signed status lists them until the ledger's retention
// drops them.
func (p *Pipeline) logLost(log *slog.Logger) error {
	var s ledger.LostSummary
	err := p.db.View(func(tx *bolt.Tx) (err error) {
		s, err = p.ledger.LostHandOffs(tx)
		return err
	})
	if err != nil {
		return err
	}
	var ids []uint64
	for _, l := range s.Kept {
		if l.Logged {
			continue
		}
		if len(ids) == maxLostLogged {
			break
		}
		log.Warn(msgLost, "cause", "notify-lost", "seq", l.Seq, "objectId", l.ObjectID, "issuer", l.Issuer,
			"purpose", l.Purpose, "attempt", l.Attempt, "recordedAt", l.RecordedAt.UTC().Format(time.RFC3339),
			"kept", s.Count(),
			"fate", "a kill cut the hand-off off (at-most-once notify): the application may not have it; not handed over again")
		ids = append(ids, l.ID)
	}
	if len(ids) == 0 {
		return nil
	}
	return p.db.Update(func(tx *bolt.Tx) error { return p.ledger.MarkLostLogged(tx, ids) })
}
