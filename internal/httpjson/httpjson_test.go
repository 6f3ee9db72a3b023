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
	tests := []struct {
		name       string
		status     int
		v          any
		wantStatus int
		wantBody   string
	}{
		{"struct", http.StatusNotFound, struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}{"unknown_agent", "no such agent"}, http.StatusNotFound, `{"error":"unknown_agent","message":"no such agent"}`},
		{"map", http.StatusOK, map[string]int{"b": 2, "a": 1}, http.StatusOK, `{"a":1,"b":2}`},
		{"does not marshal", http.StatusOK, func() {}, http.StatusInternalServerError, internalError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			Write(w, tt.status, tt.v)
			if w.Code != tt.wantStatus || w.Body.String() != tt.wantBody {
				t.Errorf("Write(%d, %v) = %d %s, want %d %s", tt.status, tt.v, w.Code, w.Body, tt.wantStatus, tt.wantBody)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type = %q, want application/json; charset=utf-8", ct)
			}
		})
	}
}
