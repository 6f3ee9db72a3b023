package runtimetest

import (
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/runtime"
	"github.com/torpor-dev/torpor/runtime/deliver"
	"github.com/torpor-dev/torpor/runtime/purpose"
	"github.com/torpor-dev/torpor/runtime/sessions"
	"github.com/torpor-dev/torpor/session"
	"github.com/torpor-dev/torpor/store"
)

// Device is the receiving agent of a drain, without its link: its bbolt
// file, its sessions (a pool of 3 KeyPackages) and the real drain
// pipeline, which takes the purposes comms:* and hands every object it
// accepts to Rec.
type Device struct {
	Key   *did.PrivateKey
	Clock *clocktest.Clock
	Path  string // the bbolt file
	DB    *bolt.DB
	S     *session.Sessions
	Pipe  *runtime.Pipeline
	Rec   *deliver.Recorder
	tb    testing.TB
	opts  *store.Options
}

// NewDevice opens the Device of key on clk over the bbolt file at path,
// opened with opts; the file is closed when the test ends.
func NewDevice(tb testing.TB, key *did.PrivateKey, clk *clocktest.Clock, path string, opts *store.Options) *Device {
	tb.Helper()
	d := &Device{Key: key, Clock: clk, Path: path, Rec: &deliver.Recorder{}, tb: tb, opts: opts}
	d.open()
	tb.Cleanup(func() { d.DB.Close() })
	return d
}

func (d *Device) open() {
	d.tb.Helper()
	db, err := store.Open(d.Path, d.opts)
	if err != nil {
		d.tb.Fatal(err)
	}
	s, err := session.New(session.Config{Key: d.Key, Clock: d.Clock, PoolSize: 3})
	if err != nil {
		d.tb.Fatal(err)
	}
	pipe, err := runtime.OpenPipeline(db, runtime.PipelineConfig{
		Key: d.Key, Purposes: purpose.Set{"comms:*"}, Sessions: sessions.Sessions{S: s}, Clock: d.Clock,
		Routes: []deliver.Route{{Pattern: "*", Name: "rec", Handler: d.Rec}},
	})
	if err != nil {
		d.tb.Fatal(err)
	}
	d.DB, d.S, d.Pipe = db, s, pipe
}

// Reboot closes the pipeline and the file and opens them again, as the
// agent does when it starts again.
func (d *Device) Reboot() {
	d.tb.Helper()
	d.Pipe.Close()
	if err := d.DB.Close(); err != nil {
		d.tb.Fatal(err)
	}
	d.open()
}
