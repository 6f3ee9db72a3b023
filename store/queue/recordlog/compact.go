package recordlog

import "os"

// Compactable returns the oldest segments before the last that are mostly
// dead (at most a quarter of the records written to them still live):
// their live records are worth copying forward into a new segment, so
// that they can be deleted (only a prefix of the segments is ever
// deleted, see DropDead, and one record nobody drains would otherwise
// keep every later segment).
func Compactable(segs []*Segment) map[*Segment]bool {
	from := map[*Segment]bool{}
	for _, s := range segs[:len(segs)-1] {
		if s.Live*4 > s.Records {
			break
		}
		from[s] = true
	}
	return from
}

// DropDead deletes the oldest segments while they hold no live record and
// the commit that emptied them is synced (DeadAt <= durable), and returns
// the segments left. Only a prefix is deleted: a later segment may hold
// the tombstones of an earlier one's records. The last segment is never
// deleted. A failed removal is left for the next call.
func DropDead(segs []*Segment, durable uint64) []*Segment {
	for len(segs) > 1 && segs[0].Live == 0 && segs[0].DeadAt <= durable {
		s := segs[0]
		if err := os.Remove(s.Path); err != nil {
			break
		}
		s.File.Close()
		segs = segs[1:]
	}
	return segs
}
