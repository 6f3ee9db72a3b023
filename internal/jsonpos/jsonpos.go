// Package jsonpos says where in a document a JSON syntax error is, as a
// person reading the file counts: line and column.
package jsonpos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Describe returns err, the error encoding/json gave for the document b,
// prefixed with the line and column (both from 1) of the offending byte
// when err is a *json.SyntaxError; other errors are returned as text.
func Describe(b []byte, err error) string {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return err.Error()
	}
	// Offset counts the bytes read, the offending one included.
	before := b[:min(max(int(se.Offset)-1, 0), len(b))]
	line := 1 + bytes.Count(before, []byte("\n"))
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d: %v", line, col, err)
}
