package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/torpor-dev/torpor/did"
)

// Errors of loadKey, wrapped after the path, for commands to add a hint.
var (
	// errNoKeyFile is returned when the key file does not exist.
	errNoKeyFile = errors.New("no such key file")
	// errNotKeyFile is returned when the path is a directory or other
	// non-regular file, or a file that does not parse as a key file.
	errNotKeyFile = did.ErrNotKeyFile
)

// loadKey reads the key file at path, which keygen wrote. Every error names
// path and says what is wrong with it, without the "did:" prefix of the
// package's own errors, which would stutter under "torporctl did:".
func loadKey(path string) (*did.PrivateKey, error) {
	k, err := did.LoadKey(path)
	var ke *did.KeyFileError
	switch {
	case errors.Is(err, did.ErrNoKey):
		return nil, fmt.Errorf("%s: %w", path, errNoKeyFile)
	case errors.As(err, &ke):
		return nil, fmt.Errorf("%s: %w", path, ke.Err)
	}
	return k, err
}

// saveKey writes k to path as did.SaveKey does, refusing to overwrite an
// existing file unless force is set. Errors name path, never the
// temporary file SaveKey writes first.
func saveKey(path string, k *did.PrivateKey, force bool) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return fmt.Errorf("%s is a directory; keygen takes the path of the key file to write", path)
	case err == nil && !force:
		return fmt.Errorf("%s exists; refusing to overwrite a key (--force replaces it, and the old key is lost)", path)
	}
	err = did.SaveKey(path, k, force)
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	return fmt.Errorf("writing key file %s: %v", path, err)
}
