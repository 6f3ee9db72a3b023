package canon

import (
	"fmt"

	"github.com/torpor-dev/torpor/internal/strictjson"
)

// NoDuplicates returns an error unless b is one strict JSON text
// (internal/strictjson): for an object, at any depth, with two members of
// the same name, naming it and where the object is (a path of member
// names, "[]" for an array element); for nesting deeper than
// strictjson.MaxDepth, a string that is not Unicode text, a number beyond
// the double range, and errors of syntax. encoding/json keeps the last of
// two equal names silently (and merges two objects of one name), so a
// configuration or command with a repeated member would mean something
// other than what its reader sees.
func NoDuplicates(b []byte) error {
	if err := strictjson.Check(b); err != nil {
		return fmt.Errorf("canon: %w", err)
	}
	return nil
}
