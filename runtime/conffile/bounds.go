package conffile

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/session"
)

// Bounds of the numbers a configuration gives; Build refuses a value
// outside them with an error naming the member and the range.
const (
	// MaxBatchSize: the relay hands out at most 1000 records per pull
	// (transport/link/server).
	MaxBatchSize = 1000
	// MaxWindowLength: a window of an hour or more is always open.
	MaxWindowLength = time.Hour
	// MaxHandlerTimeout bounds a handler's hand-off.
	MaxHandlerTimeout = time.Hour
	// MaxQueueTTL bounds the queue TTL the agent asks for: a record kept
	// longer than any object may live (governed.DefaultMaxExplicitLifetime)
	// serves nothing.
	MaxQueueTTL = governed.DefaultMaxExplicitLifetime
	// MaxLifetime bounds "maxLifetime", the lifetime of objects that
	// declare none: at most what an object may declare.
	MaxLifetime = governed.DefaultMaxExplicitLifetime
	// maxSessionExpiry is MQTT 5's largest session expiry interval
	// (OASIS MQTT 5.0, Section 3.1.2.11.2: four bytes of seconds).
	maxSessionExpiry = time.Duration(math.MaxUint32) * time.Second
)

// checkBounds reports every number of f outside its range and every
// handler path that is not absolute.
func (f *File) checkBounds() error {
	var errs []error
	count := func(name string, v, hi int) {
		if v < 0 || v > hi {
			errs = append(errs, fmt.Errorf("%s %d outside 0..%d", name, v, hi))
		}
	}
	dur := func(name string, v Duration, lo, hi time.Duration) {
		if d := time.Duration(v); d != 0 && (d < lo || d > hi) {
			errs = append(errs, fmt.Errorf("%s %v outside %v..%v (or absent for the default)", name, d, lo, hi))
		}
	}
	count(`"keyPackages"`, f.KeyPackages, session.MaxPoolSize)
	count(`"batchSize"`, f.BatchSize, MaxBatchSize)
	dur(`"window.length" (or --window-length)`, f.Window.Length, time.Second, MaxWindowLength)
	if o := time.Duration(f.Window.Offset); o <= -time.Hour || o >= time.Hour {
		errs = append(errs, fmt.Errorf(`"window.offset" (or --window-offset) %v outside -59m59s..59m59s`, o))
	}
	dur(`"maxLifetime"`, f.MaxLifetime, time.Second, MaxLifetime)
	if b := f.Bounds; b != nil {
		count(`"bounds.maxMessages"`, b.MaxMessages, math.MaxInt32)
		count(`"bounds.maxPerPeer"`, b.MaxPerPeer, math.MaxInt32)
		if b.MaxBytes < 0 || b.MaxMessageSize < 0 {
			errs = append(errs, errors.New(`"bounds.maxBytes" and "bounds.maxMessageSize" must not be negative`))
		}
		dur(`"bounds.ttl"`, b.TTL, time.Second, MaxQueueTTL)
	}
	if m := f.MQTT; m != nil {
		dur(`"mqtt.sessionExpiry"`, m.SessionExpiry, time.Second, maxSessionExpiry)
	}
	for i, h := range f.Handlers {
		errs = append(errs, h.checkBounds(i)...)
	}
	return errors.Join(errs...)
}

// checkBounds refuses handler i's relative paths and timeouts out of range.
func (h Handler) checkBounds(i int) []error {
	var errs []error
	abs := func(name, p string) {
		if p != "" && !filepath.IsAbs(p) {
			errs = append(errs, fmt.Errorf("handler %d (%s): %s %q is not an absolute path", i, h.Purpose, name, p))
		}
	}
	timeout := func(name string, v Duration) {
		if d := time.Duration(v); d < 0 || d > MaxHandlerTimeout {
			errs = append(errs, fmt.Errorf("handler %d (%s): %s %v outside 0..%v", i, h.Purpose, name, d, MaxHandlerTimeout))
		}
	}
	if e := h.Exec; e != nil {
		abs("exec.path", e.Path)
		abs("exec.dir", e.Dir)
		timeout("exec.timeout", e.Timeout)
	}
	if u := h.Unix; u != nil {
		abs("unix.socket", u.Socket)
		timeout("unix.timeout", u.Timeout)
	}
	return errs
}
