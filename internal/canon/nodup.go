package canon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// NoDuplicates returns an error naming the first object, at any depth of
// the JSON text b, that has two members of the same name, and where it is
// (a path of member names, "[]" for an array element). encoding/json keeps
// the last of two equal names silently (and merges two objects of one
// name), so a configuration or command with a repeated member would mean
// something other than what its reader sees. Errors of syntax are returned
// too.
func NoDuplicates(b []byte) error {
	if !json.Valid(b) {
		var v any
		return fmt.Errorf("canon: %v", json.Unmarshal(b, &v))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var stack []*jsonFrame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("canon: %v", err)
		}
		var top *jsonFrame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if name, ok := tok.(string); ok && top != nil && top.names != nil && top.wantName {
			if top.names[name] {
				return fmt.Errorf("canon: duplicate member %q in the object at %s", name, framePath(stack))
			}
			top.names[name], top.last, top.wantName = true, name, false
			continue
		}
		switch tok {
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		case json.Delim('{'):
			stack = append(stack, &jsonFrame{label: label(top), names: map[string]bool{}, wantName: true})
			continue
		case json.Delim('['):
			stack = append(stack, &jsonFrame{label: label(top)})
			continue
		}
		if len(stack) > 0 && stack[len(stack)-1].names != nil {
			stack[len(stack)-1].wantName = true // a value ended: a name or '}' follows
		}
	}
}

// jsonFrame is an open object (names set) or array in NoDuplicates.
type jsonFrame struct {
	label    string
	names    map[string]bool
	last     string
	wantName bool
}

func label(parent *jsonFrame) string {
	switch {
	case parent == nil:
		return ""
	case parent.names == nil:
		return "[]"
	}
	return parent.last
}

func framePath(stack []*jsonFrame) string {
	var parts []string
	for _, f := range stack[1:] {
		parts = append(parts, f.label)
	}
	return "/" + strings.Join(parts, "/")
}
