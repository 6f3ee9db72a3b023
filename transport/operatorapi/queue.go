package operatorapi

import "time"

// QueueAnswer is the relay's answer to a queue listing or purge
// (transport/relay, operator.go): the device's queue, or what a purge
// removed, or why the relay refused.
type QueueAnswer struct {
	Agent    string `json:"agent"`
	Messages int    `json:"messages"`
	Bytes    int    `json:"bytes"`
	// Purged is how many records a purge removed; nil for a listing.
	Purged  *int          `json:"purged"`
	Records []QueueRecord `json:"records"`
	// Damaged are the seqs of records the relay withholds from the
	// device because they fail their checksum (docs/operations.md, "Store
	// faults").
	Damaged []uint64 `json:"damaged"`
	// Error, Message and Detail say why the relay refused.
	Error   string `json:"error"`
	Message string `json:"message"`
	Detail  string `json:"detail"`
}

// QueueRecord is one queued record's metadata; the relay never shows the
// body.
type QueueRecord struct {
	Seq        uint64    `json:"seq"`
	From       string    `json:"from"`
	Kind       string    `json:"kind"`
	Bytes      int       `json:"bytes"`
	EnqueuedAt time.Time `json:"enqueuedAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
}
