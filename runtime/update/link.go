package update

import (
	"context"
	"errors"

	"github.com/torpor-dev/torpor/transport/link/wire"
)

// Link is the part of the device's link (transport/link's Client) that
// fetches from the relay's update repository.
type Link interface {
	Update(ctx context.Context, req wire.UpdateRequest) ([]byte, error)
}

// LinkSource is the relay's repository reached over the device's link
// (update frames, transport/link/wire update.go).
func LinkSource(l Link) Source { return linkSource{l} }

type linkSource struct{ l Link }

func (s linkSource) Metadata(ctx context.Context, name string, max int64) ([]byte, error) {
	return s.get(ctx, wire.UpdateRequest{Kind: wire.UpdateMeta, Name: name, Max: max})
}

func (s linkSource) Fresh(ctx context.Context) error {
	_, err := s.get(ctx, wire.UpdateRequest{Kind: wire.UpdateFresh})
	return err
}

func (s linkSource) Blob(ctx context.Context, sha256 string, off, n int64) ([]byte, error) {
	return s.get(ctx, wire.UpdateRequest{Kind: wire.UpdateBlob, Name: sha256, Off: off, Max: n})
}

func (s linkSource) get(ctx context.Context, req wire.UpdateRequest) ([]byte, error) {
	b, err := s.l.Update(ctx, req)
	var re *wire.RemoteError
	if errors.As(err, &re) && re.Code == wire.CodeUpdateNotFound {
		return nil, ErrNotFound
	}
	return b, err
}
