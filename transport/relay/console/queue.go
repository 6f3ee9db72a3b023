package console

import (
	"cmp"
	"context"
	"fmt"
	"github.com/torpor-dev/torpor/transport/operatorapi"
	"slices"
	"time"

	"github.com/torpor-dev/torpor/store/agents"
	"github.com/torpor-dev/torpor/transport/link/wire"
	"github.com/torpor-dev/torpor/wake"
)

// queueOf fills d.Queue: counts and bytes and the share of the bounds in
// force (complete adds the oldest record's age).
func (s *Source) queueOf(ctx context.Context, d *operatorapi.Device, st agents.State, now time.Time) error {
	qs, err := s.Queue.Stats(ctx, d.DID, now)
	if err != nil {
		return err
	}
	b := s.Bounds(d.DID, st)
	q := operatorapi.Queue{Messages: qs.Messages, Bytes: qs.Bytes, MaxMessages: b.MaxMessages, MaxBytes: b.MaxBytes}
	if b.MaxMessages > 0 && b.MaxBytes > 0 {
		q.Share = max(float64(qs.Messages)/float64(b.MaxMessages), float64(qs.Bytes)/float64(b.MaxBytes))
	}
	d.Queue = q
	return nil
}

// detail reads what the device page adds: the wakes the status reports,
// the queue by sender and the held actions.
func (s *Source) detail(ctx context.Context, id string, now time.Time) (*operatorapi.Detail, error) {
	st, err := s.States.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	dt := &operatorapi.Detail{Wakes: []operatorapi.Wake{}, Senders: []operatorapi.Sender{}, Held: nil, Window: describeWindow(st.Window), Schedule: string(st.Mode)}
	if ws, err := s.Verified.Status(st.Status, id); st.Status != nil && err == nil {
		for _, w := range []*operatorapi.Wake{wakeOf(ws.Wake), wakeOf(ws.LastWake)} {
			if w != nil {
				dt.Wakes = append(dt.Wakes, *w)
			}
		}
		dt.Held, dt.Lost = ws.Held, ws.Lost
	}
	if dt.History, err = s.history(ctx, id); err != nil {
		return nil, err
	}
	b := s.Bounds(id, st)
	recs, err := s.Queue.Next(ctx, id, 0, b.MaxMessages+b.HandshakeMessages, now)
	if err != nil {
		return nil, err
	}
	by := map[string]*operatorapi.Sender{}
	for _, r := range recs {
		sd := by[r.From]
		if sd == nil {
			sd = &operatorapi.Sender{DID: r.From, OldestAge: operatorapi.Seconds(now.Sub(r.EnqueuedAt) / time.Second)}
			by[r.From] = sd
		}
		sd.Messages++
		sd.Bytes += int64(len(r.Body))
	}
	for _, sd := range by {
		dt.Senders = append(dt.Senders, *sd)
	}
	slices.SortFunc(dt.Senders, func(a, b operatorapi.Sender) int {
		return cmp.Or(cmp.Compare(b.Messages, a.Messages), cmp.Compare(a.DID, b.DID))
	})
	return dt, nil
}

func wakeOf(w *wire.StatusWake) *operatorapi.Wake {
	if w == nil {
		return nil
	}
	return &operatorapi.Wake{At: w.At, Reason: w.Reason, AwakeMs: w.AwakeMs, Phases: w.Phases}
}

// describeWindow says when w opens in the hour and for how long, such as
// "at :19 past every hour for 5m0s".
func describeWindow(w wake.Window) string {
	start := (time.Duration(w.Minute)*time.Minute + w.Offset) % time.Hour
	if start < 0 {
		start += time.Hour
	}
	return fmt.Sprintf("at :%02d:%02d past every hour for %v", int(start/time.Minute), int(start%time.Minute/time.Second), windowLength(w))
}
