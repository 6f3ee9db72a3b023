package bearerhttp

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/clock/clocktest"
	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// The test vectors of package bearer's tests (transport/bearer/token_test.go).
const (
	aliceDID    = "did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG"
	goldenToken = "atom.eyJhdWQiOiJodHRwczovL3BlZXIuZXhhbXBsZSIsImRpZCI6ImRpZDprZXk6ejZNa2pjaGhmVXNENm1tdm5pOG1DZFhIdzIxNlhybTliUWUybUJIMVA1UkRqVkpHIiwiZXhwIjoxNzY4NDc4NzAwLCJpYXQiOjE3Njg0Nzg0MDAsInYiOjF9.fTHY3e-rKq6apgvOcRgtB7a5CZhz9By4FnwHJM1etY-HvucCYx_XKKhEu1ibnp0HWUjeeMm6UrMFpNqjx-JdBA"
)

var noon = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC) // 1768478400

func TestWriteUnauthorized(t *testing.T) {
	v := &bearer.Verifier{Audience: "https://peer.example", Clock: clocktest.New(noon.Add(time.Hour))}
	_, err := v.Verify(goldenToken)
	rec := httptest.NewRecorder()
	WriteUnauthorized(rec, err)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("status = %d, want 401", rec.Code)
	}
	wantHdr := `Bearer realm="atom", error="invalid_token", error_description="transport token: expired"`
	if got := rec.Header().Get("WWW-Authenticate"); got != wantHdr {
		t.Errorf("WWW-Authenticate = %s, want %s", got, wantHdr)
	}
	if got, want := rec.Body.String(), `{"error":"unauthorized","detail":"transport token: expired"}`; got != want {
		t.Errorf("body = %s, want %s", got, want)
	}
	rec = httptest.NewRecorder()
	WriteUnauthorized(rec, errors.New(`some "quoted" failure`))
	if got := rec.Body.String(); got != `{"error":"unauthorized","detail":"invalid token"}` {
		t.Errorf("body for a foreign error = %s", got)
	}
}

// TestMiddleware runs a real HTTP server on loopback.
func TestMiddleware(t *testing.T) {
	clk := clocktest.New(noon)
	var v bearer.Verifier
	srv := httptest.NewServer(Middleware(&v, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := Caller(r.Context())
		if !ok {
			t.Error("handler ran without a caller DID")
		}
		io.WriteString(w, id.String())
	})))
	defer srv.Close()
	v = bearer.Verifier{Audience: srv.URL, Clock: clk}
	k := didtest.Key(t, 1)
	tok, err := bearer.Issue(k, srv.URL+"/a2a/jsonrpc", clk.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	// Change one whole sextet in the middle of the signature.
	i := len(tok) - 20
	tampered := tok[:i] + map[bool]string{true: "B", false: "A"}[tok[i] == 'A'] + tok[i+1:]
	tests := []struct {
		name, auth string
		status     int
		body       string
	}{
		{"valid", bearer.Authorization(tok), 200, aliceDID},
		{"missing", "", 401, `{"error":"unauthorized","detail":"missing bearer token"}`},
		{"tampered", bearer.Authorization(tampered), 401, `{"error":"unauthorized","detail":"transport token: bad signature"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", srv.URL+"/a2a/jsonrpc", strings.NewReader("{}"))
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if diff := cmp.Diff(tt.body, string(b)); resp.StatusCode != tt.status || diff != "" {
				t.Errorf("POST = %d, want %d; body (-want +got):\n%s", resp.StatusCode, tt.status, diff)
			}
		})
	}
}
