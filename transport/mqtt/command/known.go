package command

import (
	"bufio"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/internal/atomicfile"
	"github.com/torpor-dev/torpor/transport/mqtt"
)

// KnownDevices are an operator's pins of device names to DIDs, like SSH's
// known_hosts: a file of "NAME DID" lines, '#' comments. The first contact
// with a name records the DID its verified status was signed by; from
// then on a status or reply of another DID under that name is refused,
// never a silent switch. torporctl keeps them in
// ~/.config/torpor/known_devices.
type KnownDevices struct {
	path string
	pins map[string]did.DID
}

// LoadKnownDevices reads path; a missing file is an empty one. A name
// pinned to two DIDs is an error naming both.
func LoadKnownDevices(path string) (*KnownDevices, error) {
	k := &KnownDevices{path: path, pins: map[string]did.DID{}}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return k, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 || mqtt.CheckName(fields[0]) != nil {
			return nil, fmt.Errorf("%s:%d: want NAME DID", path, n)
		}
		d, err := did.Parse(fields[1])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", path, n, err)
		}
		if prev, ok := k.pins[fields[0]]; ok && prev != d {
			return nil, fmt.Errorf("%s:%d: two DIDs claim the device name %s: %s and %s; remove the wrong line", path, n, fields[0], prev, d)
		}
		k.pins[fields[0]] = d
	}
	return k, sc.Err()
}

// Path is the file the pins are in.
func (k *KnownDevices) Path() string { return k.path }

// Lookup returns the DID name is pinned to.
func (k *KnownDevices) Lookup(name string) (did.DID, bool) {
	d, ok := k.pins[name]
	return d, ok
}

// Devices returns every pin, name to DID.
func (k *KnownDevices) Devices() map[string]did.DID { return maps.Clone(k.pins) }

// Pin records name → d, appending to the file (created 0600 in a 0700
// directory).
func (k *KnownDevices) Pin(name string, d did.DID) error {
	if err := os.MkdirAll(filepath.Dir(k.path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(k.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "%s %s\n", name, d); err != nil {
		f.Close()
		return err
	}
	k.pins[name] = d
	return f.Close()
}

// Repin replaces name's pin with d (after a verified key rotation),
// rewriting the file without name's old line.
func (k *KnownDevices) Repin(name string, d did.DID) error {
	b, err := os.ReadFile(k.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var keep []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); line != "" && (len(f) == 0 || f[0] != name) {
			keep = append(keep, line)
		}
	}
	keep = append(keep, name+" "+d.String())
	if err := atomicfile.WriteFile(k.path, []byte(strings.Join(keep, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	k.pins[name] = d
	return nil
}
