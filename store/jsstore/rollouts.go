package jsstore

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/torpor-dev/torpor/store/rollouts"
)

// Rollouts is store/rollouts.Store in the agents bucket (Config.Prefix's
// _AGENTS), one key per rollout:
//
//	ro.<id>   the rollout's record (transport/relay/rollout encodes it); the
//	          id base64url-encoded, as token encodes an agent
//
// A record's revision is its key's JetStream revision, so Put is the
// bucket's Create (revision 0) or Update (compare-and-swap): relays on one
// cluster never overwrite each other's changes. The bucket exists once
// Open returned, so there is nothing to create here.
type Rollouts struct{ c *Conn }

var _ rollouts.Store = (*Rollouts)(nil)

// Rollouts returns the rollouts store over c's bucket. Closing it does
// not close c.
func (c *Conn) Rollouts() *Rollouts { return &Rollouts{c: c} }

// OwnRollouts is Rollouts whose Close closes c too.
func (c *Conn) OwnRollouts() rollouts.Store { return ownRollouts{c.Rollouts()} }

type ownRollouts struct{ *Rollouts }

func (o ownRollouts) Close() error { return o.c.Close() }

const rolloutPrefix = "ro."

// rolloutKey: ids are letters, digits, '-', '_' and '.' (rollouts.CheckID),
// and a tenant's rollout's key has '/' too (rollouts.Key); a '.' would be
// a token separator in a key, so the key is encoded.
func rolloutKey(id string) string {
	return rolloutPrefix + base64.RawURLEncoding.EncodeToString([]byte(id))
}

// Get implements rollouts.Store.
func (r *Rollouts) Get(ctx context.Context, id string) ([]byte, uint64, error) {
	if rollouts.CheckKey(id) != nil {
		return nil, 0, rollouts.ErrNotFound
	}
	e, err := r.c.kv.Get(ctx, rolloutKey(id))
	if isMissing(err) {
		return nil, 0, rollouts.ErrNotFound
	}
	if err != nil {
		return nil, 0, fmt.Errorf("jsstore: rollout %s: %w", id, err)
	}
	return e.Value(), e.Revision(), nil
}

// Put implements rollouts.Store.
func (r *Rollouts) Put(ctx context.Context, id string, value []byte, rev uint64) (uint64, error) {
	if err := rollouts.Check(id, value); err != nil {
		return 0, err
	}
	var err error
	var got uint64
	if rev == 0 {
		got, err = r.c.kv.Create(ctx, rolloutKey(id), value)
	} else {
		got, err = r.c.kv.Update(ctx, rolloutKey(id), value, rev)
	}
	if isRevisionMismatch(err) {
		return 0, rollouts.ErrConflict
	}
	if err != nil {
		return 0, fmt.Errorf("jsstore: rollout %s: %w", id, err)
	}
	return got, nil
}

// List implements rollouts.Store.
func (r *Rollouts) List(ctx context.Context) ([]string, error) {
	l, err := r.c.kv.ListKeysFiltered(ctx, rolloutPrefix+">")
	if err != nil {
		return nil, fmt.Errorf("jsstore: listing rollouts: %w", err)
	}
	defer l.Stop()
	var ids []string
	for k := range l.Keys() {
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(k, rolloutPrefix))
		if err != nil {
			return nil, fmt.Errorf("jsstore: a rollout key %q that is not base64url: %w", k, err)
		}
		ids = append(ids, string(b))
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil, ctx.Err()
	}
	slices.Sort(ids)
	return ids, nil
}

// Close implements rollouts.Store; it does not close the connection.
func (r *Rollouts) Close() error { return nil }
