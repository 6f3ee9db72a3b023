package relay

import (
	"bufio"
	"crypto/rand"
	"io"
	"sync"
)

// bufferedRand is crypto/rand read 4 KiB at a time: the Retry-After
// jitter (wake.Jitter) takes 8 bytes for each request answered asleep to
// an hourly_wake or scheduled sleep agent, and one read of the system's
// generator per 512 answers costs less than one per answer. The bytes are
// crypto/rand's all the same.
type bufferedRand struct {
	mu sync.Mutex
	r  *bufio.Reader
}

func newBufferedRand() io.Reader {
	return &bufferedRand{r: bufio.NewReaderSize(rand.Reader, 4096)}
}

func (b *bufferedRand) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return io.ReadFull(b.r, p)
}
