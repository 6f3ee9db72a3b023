//go:build !unix

package store

import (
	"errors"
	"os"
)

// mapFile is not available here: pages are read with ReadAt.
func mapFile(*os.File, int64) ([]byte, func(), error) {
	return nil, nil, errors.ErrUnsupported
}
