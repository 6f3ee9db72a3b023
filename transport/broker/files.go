package broker

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/torpor-dev/torpor/did"
)

// ReadDIDs reads a list of DIDs, one a line; blank lines and lines
// starting with '#' are skipped (the format of --operators-file).
func ReadDIDs(path string) ([]did.DID, error) {
	var out []did.DID
	err := readLines(path, func(n int, fields []string) error {
		if len(fields) != 1 {
			return fmt.Errorf("%s:%d: want one DID", path, n)
		}
		d, err := did.Parse(fields[0])
		if err != nil {
			return fmt.Errorf("%s:%d: %v", path, n, err)
		}
		out = append(out, d)
		return nil
	})
	return out, err
}

// ReadDevices reads device names and their DIDs, "NAME DID" a line;
// blank lines and lines starting with '#' are skipped. It is the format
// of torporctl's known_devices file and of --mqtt-devices-file. A name
// listed twice is an error.
func ReadDevices(path string) (map[string]did.DID, error) {
	out := map[string]did.DID{}
	err := readLines(path, func(n int, fields []string) error {
		if len(fields) != 2 {
			return fmt.Errorf("%s:%d: want NAME DID", path, n)
		}
		if err := checkName(fields[0]); err != nil {
			return fmt.Errorf("%s:%d: device name %v", path, n, err)
		}
		d, err := did.Parse(fields[1])
		if err != nil {
			return fmt.Errorf("%s:%d: %v", path, n, err)
		}
		if prev, ok := out[fields[0]]; ok && prev != d {
			return fmt.Errorf("%s:%d: two DIDs claim the name %s: %s and %s", path, n, fields[0], prev, d)
		}
		out[fields[0]] = d
		return nil
	})
	return out, err
}

func readLines(path string, line func(n int, fields []string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return scanLines(f, line)
}

func scanLines(r io.Reader, line func(n int, fields []string) error) error {
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if err := line(n, strings.Fields(t)); err != nil {
			return err
		}
	}
	return sc.Err()
}
