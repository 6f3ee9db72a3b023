// Package httpjson writes the JSON answers of the relay's HTTP side and
// of its fleet console, alike: Content-Type application/json;
// charset=utf-8 (RFC 8259, Section 11), the members in the order the
// value gives them (a struct's fields, a map's sorted keys, as
// encoding/json marshals them).
//
// Use:
//
//	httpjson.Write(w, http.StatusNotFound, map[string]any{"error": "unknown_agent"})
package httpjson

import (
	"encoding/json"
	"net/http"
)

// internalError is the body written in place of a value that does not
// marshal.
const internalError = `{"error":"internal_error"}`

// Write writes v, marshalled by encoding/json, as the body of an answer
// of status. A v that does not marshal is answered 500 with
// {"error":"internal_error"} instead.
func Write(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(internalError)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b)
}
