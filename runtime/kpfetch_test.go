package runtime_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did/didtest"
	"github.com/torpor-dev/torpor/transport/bearer"
)

// getKeyPackage fetches url, a relay's KeyPackage URL, as an initiator
// does: with a DID Bearer token (the relay requires one) of a fixed
// sender, issued at now.
func getKeyPackage(t *testing.T, url string, now time.Time) *http.Response {
	t.Helper()
	tok, err := bearer.Issue(didtest.Key(t, 200), url, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", bearer.Authorization(tok))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
