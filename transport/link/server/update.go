package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// Updates is the relay's TUF repository as linked devices read it
// (store/updaterepo's Repo). A file or blob it does not hold is an error
// wrapping fs.ErrNotExist.
type Updates interface {
	Metadata(name string, max int64) ([]byte, error)
	Blob(sha256 string, off, n int64) ([]byte, error)
	Fresh() error
}

// UpdatesOf is an Updates that holds more than one repository (a hosted
// relay's: one per tenant, docs/tenants.md): the server reads each
// device's from For. For returns nil when the device has none (answered
// CodeNoUpdates).
type UpdatesOf interface {
	For(agent did.DID) (Updates, error)
}

// update answers an update frame: the link authenticated the device, and
// what it gets is public repository content that the device checks
// itself (docs/updates.md). Max is clamped to wire.MaxUpdateData.
func (c *serverConn) update(ctx context.Context, f *wire.Frame) error {
	u := c.s.Updates
	if of, ok := u.(UpdatesOf); ok && f.Update != nil {
		var err error
		if u, err = of.For(c.agent); err != nil {
			c.s.log().Warn("update request failed: the device's repository", "agent", c.agent.String(), "err", err)
			return c.write(ctx, &wire.Frame{T: wire.FrameError, ID: f.ID, Code: "bad-update", Message: "the relay could not find the device's update repository"})
		}
	}
	if u == nil || f.Update == nil {
		code, msg := wire.CodeNoUpdates, "this relay hosts no update repository"
		if f.Update == nil {
			code, msg = "bad-update", "update frame without a request"
		}
		return c.write(ctx, &wire.Frame{T: wire.FrameError, ID: f.ID, Code: code, Message: msg})
	}
	r := *f.Update
	max := r.Max
	if max <= 0 || max > wire.MaxUpdateData {
		max = wire.MaxUpdateData
	}
	var (
		data []byte
		err  error
	)
	switch r.Kind {
	case wire.UpdateMeta:
		data, err = u.Metadata(r.Name, max)
	case wire.UpdateBlob:
		data, err = u.Blob(r.Name, r.Off, max)
	case wire.UpdateFresh:
		err = u.Fresh()
	default:
		err = fmt.Errorf("unknown update kind %q", r.Kind)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return c.write(ctx, &wire.Frame{T: wire.FrameError, ID: f.ID, Code: wire.CodeUpdateNotFound, Message: err.Error()})
	case err != nil:
		c.s.log().Warn("update request failed", "agent", c.agent.String(), "kind", r.Kind, "err", err)
		return c.write(ctx, &wire.Frame{T: wire.FrameError, ID: f.ID, Code: "bad-update", Message: err.Error()})
	}
	return c.write(ctx, &wire.Frame{T: wire.FrameUpdateData, ID: f.ID, Data: data})
}
