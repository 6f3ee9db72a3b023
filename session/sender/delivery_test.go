package sender

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestDeliveryAnswers(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		retryAfter string
		body       string
		queued     bool
		retry      time.Duration
		err        bool
	}{
		{"live answer", 200, "", `{"jsonrpc":"2.0","id":1,"result":{"role":"ROLE_AGENT"}}`, false, 0, false},
		{"live refusal", 200, "", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}`, false, 0, true},
		{"reference asleep", 503, "", `{"error":"agent_asleep","message":"asleep, try later","queued":true}`, true, 0, false},
		{"reference asleep, hourly", 503, "840", `{"error":"agent_asleep","message":"asleep, try later","queued":true,"retryAfterSec":840}`, true, 840 * time.Second, false},
		{"relay asleep, JSON-RPC shape", 503, "60", `{"jsonrpc":"2.0","id":1,"error":{"code":-32003,"message":"asleep, try later","data":{"error":"agent_asleep","queued":true}},"message":"asleep, try later","queued":true}`, true, time.Minute, false},
		{"asleep, not queued", 503, "", `{"error":"agent_asleep","queued":false}`, false, 0, true},
		{"queue full", 507, "", `{"error":"asleep_queue_full","kind":"messages","queued":false}`, false, 0, true},
		{"unauthorized", 401, "", `{"error":"unauthorized"}`, false, 0, true},
		{"not JSON", 200, "", `<html>`, false, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := &http.Response{StatusCode: tt.status, Header: http.Header{}}
			if tt.retryAfter != "" {
				resp.Header.Set("Retry-After", tt.retryAfter)
			}
			d, err := delivery(resp, []byte(tt.body))
			if (err != nil) != tt.err {
				t.Fatalf("delivery(%d, %s) = %+v, %v; want error %v", tt.status, tt.body, d, err, tt.err)
			}
			var he *HTTPError
			if err != nil && tt.status != 200 && !errors.As(err, &he) {
				t.Errorf("error %v is not an *HTTPError", err)
			}
			if err == nil && (d.Queued != tt.queued || d.RetryAfter != tt.retry) {
				t.Errorf("delivery = %+v, want queued %v retry %v", d, tt.queued, tt.retry)
			}
		})
	}
}
