package jsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/torpor-dev/torpor/store/audit"
)

// Audit is store/audit.Store in the stream TORPOR_AUDIT (see the package
// doc): a record's Seq is its stream sequence, the stream's max_msgs the
// log's bound (JetStream drops the oldest), and the dropped records are
// those before the stream's first sequence.
type Audit struct {
	c      *Conn
	stream jetstream.Stream
	own    bool
}

var _ audit.Store = (*Audit)(nil)

// Audit creates or updates the audit stream to keep the last max records
// (audit.DefaultMax when zero) and returns the log in it.
func (c *Conn) Audit(ctx context.Context, max int) (*Audit, error) {
	if max <= 0 {
		max = audit.DefaultMax
	}
	cfg := jetstream.StreamConfig{
		Name: c.n.audit, Description: "torpor-relay: the audit log of operator actions (store/audit)",
		Subjects: []string{c.n.auditSubj}, Storage: jetstream.FileStorage, Replicas: c.replicas,
		MaxMsgs: int64(max), Discard: jetstream.DiscardOld, AllowDirect: false,
	}
	var s jetstream.Stream
	err := c.retrySetup(ctx, func(ctx context.Context) (err error) {
		s, err = c.js.CreateOrUpdateStream(ctx, cfg)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("jsstore: stream %s: %w", cfg.Name, err)
	}
	return &Audit{c: c, stream: s}, nil
}

// OwnAudit is Audit whose Close closes c too (for the contract suite).
func (c *Conn) OwnAudit(ctx context.Context, max int) (*Audit, error) {
	a, err := c.Audit(ctx, max)
	if a != nil {
		a.own = true
	}
	return a, err
}

// Close closes the connection if OwnAudit made a.
func (a *Audit) Close() error {
	if a.own {
		return a.c.Close()
	}
	return nil
}

// Append implements audit.Store.
func (a *Audit) Append(ctx context.Context, r audit.Record) error {
	if err := audit.Check(r); err != nil {
		return err
	}
	r.Seq = 0 // the stream's sequence is the Seq
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return a.c.retry(ctx, func() error {
		_, err := a.c.js.Publish(ctx, a.c.n.auditSubj, b)
		return err
	})
}

// List implements audit.Store.
func (a *Audit) List(ctx context.Context, before uint64, limit int) (audit.Page, error) {
	limit = audit.Limit(limit)
	info, err := a.stream.Info(ctx)
	if err != nil {
		return audit.Page{}, fmt.Errorf("jsstore: audit: %w", err)
	}
	st := info.State
	p := audit.Page{Dropped: st.FirstSeq - 1}
	if st.Msgs == 0 {
		p.Dropped = st.LastSeq
		return p, nil
	}
	top := st.LastSeq
	if before != 0 && before-1 < top {
		top = before - 1
	}
	for seq := top; seq >= st.FirstSeq && seq > 0; seq-- {
		if len(p.Records) == limit {
			p.Next = p.Records[limit-1].Seq
			break
		}
		m, err := a.stream.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // dropped since Info
		}
		if err != nil {
			return audit.Page{}, fmt.Errorf("jsstore: audit: %w", err)
		}
		var r audit.Record
		if err := json.Unmarshal(m.Data, &r); err != nil {
			return audit.Page{}, fmt.Errorf("jsstore: audit record %d: %w", seq, err)
		}
		r.Seq = seq
		p.Records = append(p.Records, r)
	}
	return p, nil
}
