package mqttsession

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"testing"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho/session/state"
	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/torpor-dev/torpor/store"
)

// paho's session/state takes two values of an unexported interface type;
// this line fails to compile if *Store stops satisfying it.
var _ = state.New((*Store)(nil), (*Store)(nil))

func mustOpenDB(t testing.TB, path string) *bolt.DB {
	t.Helper()
	db, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustStore(t testing.TB, db *bolt.DB) *Store {
	t.Helper()
	s, err := OpenStore(db, "sess-client")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// publish returns a serialisable PUBLISH packet with id and payload.
func publish(id uint16, payload string) *packets.ControlPacket {
	cp := packets.NewControlPacket(packets.PUBLISH)
	p := cp.Content.(*packets.Publish)
	p.PacketID, p.QoS, p.Topic, p.Payload = id, 1, "t/x", []byte(payload)
	return cp
}

func readPayload(t testing.TB, s *Store, id uint16) string {
	t.Helper()
	r, err := s.Get(id)
	if err != nil {
		t.Fatalf("Get(%d): %v", id, err)
	}
	defer r.Close()
	cp, err := packets.ReadPacket(r)
	if err != nil {
		t.Fatalf("Get(%d): reading packet: %v", id, err)
	}
	return string(cp.Content.(*packets.Publish).Payload)
}

func TestStoreOrderSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	db := mustOpenDB(t, path)
	s := mustStore(t, db)
	// Ids deliberately out of numeric order, put back to back with no
	// delay: the order must be the order of Put, not of id or time.
	for _, id := range []uint16{9, 3, 65535, 1, 200} {
		if err := s.Put(id, packets.PUBLISH, publish(id, "p")); err != nil {
			t.Fatal(err)
		}
	}
	// A PUBREL replacing the PUBLISH under id 3 moves it to the end.
	rel := packets.NewControlPacket(packets.PUBREL)
	rel.Content.(*packets.Pubrel).PacketID = 3
	if err := s.Put(3, packets.PUBREL, rel); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(65535); err != nil {
		t.Fatal(err)
	}
	want := []uint16{9, 1, 200, 3}
	if got, err := s.List(); err != nil || !cmp.Equal(got, want) {
		t.Fatalf("List() = %v, %v; want %v", got, err, want)
	}
	db.Close()

	db = mustOpenDB(t, path)
	s = mustStore(t, db)
	if got, err := s.List(); err != nil || !cmp.Equal(got, want) {
		t.Fatalf("after reopen List() = %v, %v; want %v", got, err, want)
	}
	if got := readPayload(t, s, 200); got != "p" {
		t.Errorf("Get(200) payload = %q, want %q", got, "p")
	}
	r, err := s.Get(3)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := packets.ReadPacket(r)
	if err != nil || cp.Type != packets.PUBREL {
		t.Errorf("Get(3) = %v, %v; want the PUBREL", cp, err)
	}
}

func TestStoreErrors(t *testing.T) {
	s := mustStore(t, mustOpenDB(t, filepath.Join(t.TempDir(), "a.db")))
	tests := []struct {
		name string
		call func() error
	}{
		{"Get", func() error { _, err := s.Get(7); return err }},
		{"Delete", func() error { return s.Delete(7) }},
		{"Quarantine", func() error { return s.Quarantine(7) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, ErrNotFound) {
				t.Errorf("%s(7) on an empty store = %v, want ErrNotFound", tt.name, err)
			}
		})
	}
	if _, err := OpenStore(s.db, ""); err == nil {
		t.Error("OpenStore with an empty name succeeded")
	}
}

func TestStoreResetAndQuarantine(t *testing.T) {
	s := mustStore(t, mustOpenDB(t, filepath.Join(t.TempDir(), "a.db")))
	for id := uint16(1); id <= 100; id++ {
		if err := s.Put(id, packets.PUBLISH, publish(id, "x")); err != nil {
			t.Fatal(err)
		}
	}
	for id := uint16(1); id <= 80; id++ {
		if err := s.Quarantine(id); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.Quarantined(); err != nil || n != maxQuarantined {
		t.Errorf("Quarantined() = %d, %v; want the bound %d", n, err, maxQuarantined)
	}
	ids, _ := s.List()
	if len(ids) != 20 || ids[0] != 81 {
		t.Errorf("after quarantining 1..80, List() = %v, want 81..100", ids)
	}
	if err := s.Reset(); err != nil {
		t.Fatal(err)
	}
	if ids, err := s.List(); err != nil || len(ids) != 0 {
		t.Errorf("after Reset List() = %v, %v; want empty", ids, err)
	}
	if _, err := s.Get(90); !errors.Is(err, ErrNotFound) {
		t.Errorf("after Reset Get(90) = %v, want ErrNotFound", err)
	}
}

type failingWriter struct{}

func (failingWriter) WriteTo(io.Writer) (int64, error) { return 0, errors.New("boom") }

func TestStorePutSerialisationError(t *testing.T) {
	s := mustStore(t, mustOpenDB(t, filepath.Join(t.TempDir(), "a.db")))
	if err := s.Put(1, packets.PUBLISH, failingWriter{}); err == nil {
		t.Fatal("Put with a failing writer succeeded")
	}
	if ids, _ := s.List(); len(ids) != 0 {
		t.Errorf("a failed Put left %v in the store", ids)
	}
}

func TestNewStateUsesTwoStores(t *testing.T) {
	db := mustOpenDB(t, filepath.Join(t.TempDir(), "a.db"))
	if _, _, err := NewState(db, "mqtt"); err != nil {
		t.Fatal(err)
	}
	err := db.View(func(tx *bolt.Tx) error {
		for _, b := range []string{"mqtt-client", "mqtt-server"} {
			if tx.Bucket([]byte(b)) == nil {
				t.Errorf("bucket %q missing", b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestStoreWaitForEmpty(t *testing.T) {
	s := mustStore(t, mustOpenDB(t, filepath.Join(t.TempDir(), "a.db")))
	select {
	case <-s.WaitForEmpty():
	default:
		t.Fatal("WaitForEmpty on an empty store is not closed")
	}
	for id := uint16(1); id <= 2; id++ {
		if err := s.Put(id, packets.PUBLISH, publish(id, "x")); err != nil {
			t.Fatal(err)
		}
	}
	empty := s.WaitForEmpty()
	if err := s.Delete(1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-empty:
		t.Fatal("WaitForEmpty closed while a packet is stored")
	default:
	}
	if err := s.Delete(2); err != nil {
		t.Fatal(err)
	}
	<-empty
}

func TestStoreGetCopiesBytes(t *testing.T) {
	db := mustOpenDB(t, filepath.Join(t.TempDir(), "a.db"))
	s := mustStore(t, db)
	if err := s.Put(5, packets.PUBLISH, publish(5, "original")); err != nil {
		t.Fatal(err)
	}
	r, err := s.Get(5)
	if err != nil {
		t.Fatal(err)
	}
	// Writing more data (which may remap the file) must not disturb the
	// bytes Get returned: they are a copy, not a view of the mmap.
	for id := uint16(10); id < 50; id++ {
		if err := s.Put(id, packets.PUBLISH, publish(id, string(bytes.Repeat([]byte("z"), 64<<10)))); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := packets.ReadPacket(r)
	if err != nil || string(cp.Content.(*packets.Publish).Payload) != "original" {
		t.Errorf("packet read after later writes = %v, %v; want payload %q", cp, err, "original")
	}
}
