package relay

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
)

// TestReadAll: readAll reads bodies shorter than, as long as and longer
// than the length declared, and a reader's error.
func TestReadAll(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 1000)
	for _, declared := range []int64{-1, 0, 10, 9999, 10000, 10001, 20000} {
		got, err := readAll(iotest.HalfReader(bytes.NewReader(body)), declared)
		if err != nil || !bytes.Equal(got, body) {
			t.Errorf("declared %d: %d bytes, %v", declared, len(got), err)
		}
	}
	if _, err := readAll(iotest.ErrReader(io.ErrUnexpectedEOF), 10); err != io.ErrUnexpectedEOF {
		t.Errorf("failing reader: %v", err)
	}
}
