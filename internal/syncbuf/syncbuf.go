// Package syncbuf holds Buffer, a bytes.Buffer that goroutines may write
// while another reads it: the log of a relay, a broker or an agent that a
// test runs in its own goroutines and reads as they go.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer whose methods may be called from several
// goroutines at once. Its zero value is an empty buffer ready to use.
type Buffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

// Write appends p to the buffer; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Bytes returns a copy of what was written so far.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.b.Bytes())
}
