package httpjson

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestWrite: a value is written with its status, the JSON content type
// and its members in order; one that does not marshal is a 500 with the
// internal error body.
func TestWrite(t *testing.T) {
	type answer struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	for _, tt := range []struct {
		status int
		v      any
		want   string
	}{
		{http.StatusNotFound, answer{"unknown_agent", "no such agent"}, `{"error":"unknown_agent","message":"no such agent"}`},
		{http.StatusOK, map[string]int{"b": 2, "a": 1}, `{"a":1,"b":2}`},
		{http.StatusOK, func() {}, internalError},
	} {
		w := httptest.NewRecorder()
		Write(w, tt.status, tt.v)
		status := tt.status
		if tt.want == internalError {
			status = http.StatusInternalServerError
		}
		if w.Code != status || w.Body.String() != tt.want {
			t.Errorf("Write(%d, %T) = %d %s, want %d %s", tt.status, tt.v, w.Code, w.Body, status, tt.want)
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Errorf("Write(%d, %T): Content-Type = %q, want application/json; charset=utf-8", tt.status, tt.v, ct)
		}
	}
}
