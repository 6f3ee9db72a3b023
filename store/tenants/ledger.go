package tenants

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/clock"
	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/store"
)

// The ledger's buckets: tenants by owner DID (tenant, JSON), each
// enrolled device's owner by device DID, what each tenant holds now by
// owner DID (held, JSON) and each tenant's hours by owner DID, a space
// and the hour's start in RFC 3339 (hour, JSON).
var (
	bucketTenants = []byte("tenants")
	bucketDevices = []byte("devices")
	bucketHeld    = []byte("held")
	bucketHours   = []byte("hours")
)

// tenant is a tenant as stored.
type tenant struct {
	Owner  string `json:"owner"`
	Quotas Quotas `json:"quotas"`
	// Operators and HostSeesDevices are the owner's signed operator list
	// (SetOperators); ListIssued is its issue time, so that an older list
	// never replaces a newer one.
	Operators       []string  `json:"operators,omitempty"`
	HostSeesDevices bool      `json:"hostSeesDevices,omitempty"`
	ListIssued      time.Time `json:"listIssued,omitzero"`
}

// Held is what a tenant holds now.
type Held struct {
	Devices         int64 `json:"devices"`
	QueuedBytes     int64 `json:"queuedBytes"`
	KeyPackageBytes int64 `json:"keyPackageBytes"`
	// UpdateBytes are the blob bytes of the tenant's update repository,
	// as the relay last observed them (Store.Observe).
	UpdateBytes int64 `json:"updateBytes,omitempty"`
	// Since is when QueuedBytes was last accrued into the hours'
	// byte-milliseconds.
	Since time.Time `json:"since,omitzero"`
	// Period is the start of the byte_hours period (PeriodOf) of the
	// last accrual, and PeriodByteMillis the byte-time accrued in it up
	// to Since (PeriodByteMillisAt is it up to any later time).
	Period           time.Time `json:"period,omitzero"`
	PeriodByteMillis int64     `json:"periodByteMillis,omitempty"`
}

// hour is a tenant's usage in one hour of the relay's clock.
type hour struct {
	Requests        int64           `json:"requests"`
	Refused         map[Quota]int64 `json:"refused,omitempty"`
	PeakDevices     int64           `json:"peakDevices"`
	PeakQueuedBytes int64           `json:"peakQueuedBytes"`
	PeakKeyPackages int64           `json:"peakKeyPackageBytes"`
	PeakUpdateBytes int64           `json:"peakUpdateBytes,omitempty"`
	ByteMillis      int64           `json:"byteMillis"`
}

// Ledger keeps the tenants in a bbolt file. Its methods are safe for
// concurrent use: each one that spends a quota checks it and spends it in
// one bbolt write transaction, and bbolt runs those one at a time.
type Ledger struct {
	db  *bolt.DB
	clk clock.Clock
	own bool

	mu      sync.Mutex
	windows map[string]*window
	counts  map[hourKey]*hour
	locks   map[string]*sync.Mutex
}

// OpenLedger opens (creating) the ledger file at path.
func OpenLedger(path string, clk clock.Clock) (*Ledger, error) {
	db, err := store.Open(path, nil)
	if err != nil {
		return nil, err
	}
	l, err := NewLedger(db, clk)
	if err != nil {
		db.Close()
		return nil, err
	}
	l.own = true
	return l, nil
}

// NewLedger keeps the ledger in db, which the caller closes.
func NewLedger(db *bolt.DB, clk clock.Clock) (*Ledger, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketTenants, bucketDevices, bucketHeld, bucketHours} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("tenants: %w", store.Err(err))
	}
	return &Ledger{db: db, clk: clock.Or(clk), windows: map[string]*window{}, counts: map[hourKey]*hour{}}, nil
}

// Close writes the counted requests and closes the file if OpenLedger
// opened it.
func (l *Ledger) Close() error {
	err := l.Flush()
	if l.own {
		if cerr := l.db.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Put creates the tenant owner or changes its quotas (the host's act).
func (l *Ledger) Put(owner did.DID, q Quotas) error {
	if owner.IsZero() {
		return fmt.Errorf("tenants: a tenant needs an owner DID")
	}
	if err := q.Check(); err != nil {
		return err
	}
	return l.update(func(tx *bolt.Tx) error {
		t, err := getTenant(tx, owner)
		if err == ErrNoTenant {
			t, err = tenant{Owner: owner.String()}, nil
		}
		if err != nil {
			return err
		}
		t.Quotas = q
		return putJSON(tx, bucketTenants, []byte(owner.String()), t)
	})
}

// Info is a tenant as the host sees it: quotas, what it holds and who
// operates it, never its devices.
type Info struct {
	Owner           did.DID  `json:"owner"`
	Quotas          Quotas   `json:"quotas"`
	Held            Held     `json:"held"`
	Operators       []string `json:"operators"`
	HostSeesDevices bool     `json:"hostSeesDevices"`
}

// Tenants lists the tenants, ordered by owner DID.
func (l *Ledger) Tenants() ([]Info, error) {
	var out []Info
	err := l.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketTenants).ForEach(func(k, v []byte) error {
			info, err := infoOf(tx, v)
			out = append(out, info)
			return err
		})
	})
	return out, store.Err(err)
}

// Tenant returns one tenant (ErrNoTenant if owner is none).
func (l *Ledger) Tenant(owner did.DID) (Info, error) {
	var info Info
	err := l.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketTenants).Get([]byte(owner.String()))
		if v == nil {
			return ErrNoTenant
		}
		var err error
		info, err = infoOf(tx, v)
		return err
	})
	return info, store.Err(err)
}

func infoOf(tx *bolt.Tx, v []byte) (Info, error) {
	var t tenant
	if err := json.Unmarshal(v, &t); err != nil {
		return Info{}, fmt.Errorf("tenants: damaged tenant record: %w", err)
	}
	owner, err := did.Parse(t.Owner)
	if err != nil {
		return Info{}, fmt.Errorf("tenants: damaged tenant record: %w", err)
	}
	h, err := getHeld(tx, owner)
	return Info{Owner: owner, Quotas: t.Quotas, Held: h, Operators: slices.Clone(t.Operators), HostSeesDevices: t.HostSeesDevices}, err
}

// update runs fn in a write transaction; a full file is store.ErrFull.
func (l *Ledger) update(fn func(tx *bolt.Tx) error) error {
	return store.Err(l.db.Update(fn))
}

func getTenant(tx *bolt.Tx, owner did.DID) (tenant, error) {
	var t tenant
	v := tx.Bucket(bucketTenants).Get([]byte(owner.String()))
	if v == nil {
		return t, ErrNoTenant
	}
	if err := json.Unmarshal(v, &t); err != nil {
		return t, fmt.Errorf("tenants: damaged record of tenant %s: %w", owner, err)
	}
	return t, nil
}

func getHeld(tx *bolt.Tx, owner did.DID) (Held, error) {
	var h Held
	v := tx.Bucket(bucketHeld).Get([]byte(owner.String()))
	if v == nil {
		return h, nil
	}
	if err := json.Unmarshal(v, &h); err != nil {
		return h, fmt.Errorf("tenants: damaged usage of tenant %s: %w", owner, err)
	}
	return h, nil
}

func putJSON(tx *bolt.Tx, bucket, key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return tx.Bucket(bucket).Put(key, b)
}
