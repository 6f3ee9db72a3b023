package operatorapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// request is what the stand-in relay saw.
type request struct {
	method, path, query string
	err                 error // the token's verification
}

// relay answers every request with status and body, recording it and
// verifying its token for purpose.
// operator stands, as relay's purpose, for the operator purpose of each
// request's method and path.
const operator = "(operator)"

func relay(t *testing.T, purpose string, status int, body string) (*Client, *request) {
	t.Helper()
	var seen request
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := &bearer.Verifier{Audience: srv.URL, Purpose: purpose}
		if purpose == operator {
			v.Purpose = bearer.OperatorPurpose(r.Method, r.URL.EscapedPath())
		}
		_, seen.err = v.Verify(r.Header.Get("Authorization"))
		seen.method, seen.path, seen.query = r.Method, r.URL.Path, r.URL.RawQuery
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	origin, err := bearer.NormalizeAudience(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return &Client{Origin: origin, Key: didtest.Key(t, 1)}, &seen
}

func TestFleet(t *testing.T) {
	c, seen := relay(t, bearer.PurposeFleet, 200, `{"summary":{"devices":1,"overdue":1},"devices":[{"name":"pump","state":"overdue"}]}`)
	f, raw, err := c.Fleet(context.Background(), StateOverdue)
	if err != nil || f.Summary.Overdue != 1 || len(f.Devices) != 1 || f.Devices[0].Name != "pump" || !strings.HasPrefix(string(raw), `{"summary"`) {
		t.Fatalf("Fleet = %+v, %s, %v", f, raw, err)
	}
	if seen.err != nil || seen.method != "GET" || seen.path != "/fleet/api/devices" || seen.query != "state=overdue" {
		t.Errorf("the relay saw %+v", *seen)
	}
}

func TestFleetErrors(t *testing.T) {
	tests := []struct {
		status  int
		body    string
		wantErr string
	}{
		{404, `not found`, "HTTP 404: this relay serves no fleet console (it has no --operator)"},
		{401, `{"error":"unauthorized","message":"not an operator"}`, "HTTP 401: not an operator"},
		{200, `{"devices":`, "unexpected end of JSON input"},
	}
	for _, tt := range tests {
		c, _ := relay(t, bearer.PurposeFleet, tt.status, tt.body)
		if _, _, err := c.Fleet(context.Background(), ""); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("Fleet on %d %s = %v, want an error containing %q", tt.status, tt.body, err, tt.wantErr)
		}
	}
}

func TestQueue(t *testing.T) {
	agent := didtest.Key(t, 2).DID().String()
	c, seen := relay(t, operator, 200, `{"agent":"`+agent+`","messages":1,"bytes":10,"records":[{"seq":7,"from":"did:key:z6MkS","kind":"mls","bytes":10}]}`)
	q, _, err := c.ListQueue(context.Background(), agent, "did:key:z6MkS")
	if err != nil || q.Messages != 1 || q.Purged != nil || len(q.Records) != 1 || q.Records[0].Seq != 7 {
		t.Fatalf("ListQueue = %+v, %v", q, err)
	}
	if seen.err != nil || seen.method != "GET" || seen.path != "/operator/queue/"+agent || seen.query != "sender=did%3Akey%3Az6MkS" {
		t.Errorf("the relay saw %+v", *seen)
	}
	c, seen = relay(t, operator, 200, `{"agent":"`+agent+`","purged":3,"bytes":30}`)
	q, _, err = c.PurgeQueue(context.Background(), agent, "", true)
	if err != nil || q.Purged == nil || *q.Purged != 3 {
		t.Fatalf("PurgeQueue = %+v, %v", q, err)
	}
	if seen.err != nil || seen.method != "DELETE" || seen.query != "all=1" {
		t.Errorf("the relay saw %+v", *seen)
	}
	if _, _, err := c.PurgeQueue(context.Background(), agent, "did:key:z6MkS", true); err == nil {
		t.Error("PurgeQueue with a sender and all succeeded")
	}
}

func TestQueueRefusals(t *testing.T) {
	tests := []struct {
		status  int
		body    string
		wantErr string
	}{
		{403, `{"error":"forbidden","message":"not an operator"}`, "relay answered 403 Forbidden: forbidden: not an operator"},
		{400, `{"error":"bad_request","detail":"sender is not a DID"}`, "relay answered 400 Bad Request: bad_request: sender is not a DID"},
		{502, "  bad gateway " + strings.Repeat("x", 300), "relay answered 502 Bad Gateway: bad gateway " + strings.Repeat("x", 186)},
	}
	for _, tt := range tests {
		c, _ := relay(t, operator, tt.status, tt.body)
		_, _, err := c.ListQueue(context.Background(), "did:key:z6MkA", "")
		if err == nil || err.Error() != tt.wantErr {
			t.Errorf("ListQueue on %d = %v, want %q", tt.status, err, tt.wantErr)
		}
	}
}
