package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestBalancer: requests and device links go round robin over the relays,
// counted apart; the answer names the relay, and taggedTransport hands the
// name to the caller through the request's context.
func TestBalancer(t *testing.T) {
	b, err := startBalancer()
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	for _, name := range []string{"relay1", "relay2", "relay3"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s %s", name, r.Host)
		}))
		defer srv.Close()
		if err := b.add(name, srv.URL); err != nil {
			t.Fatal(err)
		}
	}
	hc := &http.Client{Transport: taggedTransport{http.DefaultTransport}}
	get := func(path string) string {
		var by string
		ctx := context.WithValue(context.Background(), answeredKey{}, &by)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var name, host string
		if _, err := fmt.Fscan(resp.Body, &name, &host); err != nil {
			t.Fatal(err)
		}
		if by != name || host != b.url[len("http://"):] {
			t.Errorf("GET %s: answered by %s for host %s, tagged %q; want the tag to name it and the host to be the balancer's", path, name, host, by)
		}
		return name
	}
	var got []string
	for _, p := range []string{"/a/x", "/link", "/a/y", "/link", "/metrics", "/a/z"} {
		got = append(got, get(p))
	}
	want := []string{"relay1", "relay1", "relay2", "relay2", "relay3", "relay1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("relays in turn = %v, want %v", got, want)
	}
}
