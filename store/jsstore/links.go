package jsstore

import (
	"context"
	"encoding/base64"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Link presence (docs/scale-out.md, "Links across relays"): a relay that
// holds a device's link writes the key link.<agent>.<relay> in the shared
// bucket, with <agent> the unpadded base64url of the agent's DID and
// <relay> the relay's fleet id, and a TTL of LinkKeyTTL; it writes it
// again every LinkKeyRefresh while the link lives and purges it when the
// link closes. Each relay writes only its own keys, so no two writers
// race on a key. Every relay watches link.> and so knows, without asking,
// whether some relay holds an agent's link.

// LinkKeyTTL is the TTL of a link presence key: a relay that dies without
// purging its keys leaves them at most this long.
const LinkKeyTTL = 2 * time.Minute

// LinkKeyRefresh is how often a relay writes the keys of the links it
// still holds again.
const LinkKeyRefresh = LinkKeyTTL / 4

// Links is the fleet's link presence as one relay sees and writes it.
type Links struct {
	c     *Conn
	relay string
	w     jetstream.KeyWatcher
	stop  context.CancelFunc

	mu      sync.Mutex
	holders map[string]map[string]time.Time // agent key part → relays holding its link → when their key was seen
	ready   bool                            // the watch delivered the keys present at its start
	alive   bool                            // the watch runs
}

// Links starts the watch of the link presence keys for the relay whose
// fleet id is relay (letters and digits) and returns it; Close stops it.
func (c *Conn) Links(relay string) (*Links, error) {
	ctx, stop := context.WithCancel(context.Background())
	w, err := c.startWatch(ctx, func(ctx context.Context) (jetstream.KeyWatcher, error) { return c.sharedKV.Watch(ctx, "link.>") })
	if err != nil {
		stop()
		return nil, err
	}
	l := &Links{c: c, relay: relay, w: w, stop: stop, holders: map[string]map[string]time.Time{}, alive: true}
	c.mu.Lock()
	c.links = l
	c.mu.Unlock()
	go l.watch()
	return l, nil
}

func linkAgentPart(agent string) string { return base64.RawURLEncoding.EncodeToString([]byte(agent)) }

func (l *Links) key(agent string) string { return "link." + linkAgentPart(agent) + "." + l.relay }

// watch applies every write of a presence key until the watch ends; from
// then on Up says it does not know.
func (l *Links) watch() {
	for e := range l.w.Updates() {
		if e == nil {
			l.mu.Lock()
			l.ready = true
			l.mu.Unlock()
			continue
		}
		rest, ok := strings.CutPrefix(e.Key(), "link.")
		i := strings.LastIndexByte(rest, '.')
		if !ok || i < 0 {
			continue
		}
		agent, relay := rest[:i], rest[i+1:]
		l.mu.Lock()
		if e.Operation() == jetstream.KeyValuePut {
			if l.holders[agent] == nil {
				l.holders[agent] = map[string]time.Time{}
			}
			l.holders[agent][relay] = l.c.clk.Now()
		} else if h := l.holders[agent]; h != nil {
			delete(h, relay)
			if len(h) == 0 {
				delete(l.holders, agent)
			}
		}
		l.mu.Unlock()
	}
	l.mu.Lock()
	l.alive, l.holders = false, map[string]map[string]time.Time{}
	l.mu.Unlock()
}

// Up reports whether a relay other than this one holds agent's link, as
// the watch has delivered the keys so far: a key counts until it is
// removed, or for LinkKeyTTL after the watch last delivered it (a watch
// that was cut off longer than the bucket keeps removal markers would
// otherwise keep a removed key). known is false while the watch has not
// delivered the keys present at its start, or after it ended: the caller
// must ask otherwise.
func (l *Links) Up(agent string) (up, known bool) {
	part, now := linkAgentPart(agent), l.c.clk.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ready || !l.alive {
		return false, false
	}
	for relay, seen := range l.holders[part] {
		if relay != l.relay && now.Sub(seen) < LinkKeyTTL {
			return true, true
		}
	}
	return false, true
}

// Hold writes (or writes again) this relay's presence key for agent's
// link, with the TTL LinkKeyTTL, and returns once the bucket stored it.
func (l *Links) Hold(ctx context.Context, agent string) error {
	_, err := l.c.js.PublishMsg(ctx, &nats.Msg{Subject: "$KV." + l.c.n.shared + "." + l.key(agent), Data: []byte{1}},
		jetstream.WithExpectStream("KV_"+l.c.n.shared), jetstream.WithMsgTTL(LinkKeyTTL))
	return err
}

// Release purges this relay's presence key for agent's link; the purge's
// marker leaves the bucket after a minute (markerTTL).
func (l *Links) Release(ctx context.Context, agent string) error {
	return l.c.sharedKV.Purge(ctx, l.key(agent), jetstream.PurgeTTL(markerTTL))
}

// Close stops the watch.
func (l *Links) Close() error {
	l.stop()
	return l.w.Stop()
}
