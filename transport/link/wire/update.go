package wire

// The kinds of UpdateRequest.
const (
	// UpdateMeta asks for a TUF metadata file by name ("timestamp.json",
	// "2.root.json", "5.snapshot.json", "5.targets.json").
	UpdateMeta = "meta"
	// UpdateBlob asks for Max bytes from Off of the blob whose SHA-256
	// (lower-case hex) is Name.
	UpdateBlob = "blob"
	// UpdateFresh asks the relay to sign a timestamp now (the device's
	// has expired); the answer carries no data.
	UpdateFresh = "fresh"
)

// MaxUpdateData bounds the bytes of one update-data frame; the relay
// clamps a request's Max to it.
const MaxUpdateData = 1 << 20

// CodeUpdateNotFound is the error frame code for a file or blob the
// relay's repository does not hold; CodeNoUpdates the one of a relay
// that hosts no repository. A relay older than the update frames answers
// "unknown-frame".
const (
	CodeUpdateNotFound = "update-not-found"
	CodeNoUpdates      = "no-updates"
)

// UpdateRequest is what an update frame asks (device → relay): the
// device fetches the relay's TUF repository over its link, which
// authenticates it, and the answer is an update-data frame {id, data}.
// docs/updates.md says what the device checks of it.
type UpdateRequest struct {
	Kind string `cbor:"kind"`
	Name string `cbor:"name,omitempty"`
	Off  int64  `cbor:"off,omitempty"`
	Max  int64  `cbor:"max,omitempty"`
}
