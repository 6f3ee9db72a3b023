package http1

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestAgainstNetHTTP posts to a real net/http server and reads its
// answers: with Content-Length, chunked (a flushed body), and none (204).
func TestAgainstNetHTTP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Got", r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+string(b))
		switch r.URL.Path {
		case "/chunked":
			for i := 0; i < 3; i++ {
				io.WriteString(w, strings.Repeat("x", 5000))
				w.(http.Flusher).Flush()
			}
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			http.Error(w, "declined", http.StatusUnprocessableEntity)
		}
	})}
	go srv.Serve(ln)
	defer srv.Close()
	tests := []struct {
		path, status, body string
	}{
		{"/chunked", "200 OK", strings.Repeat("x", 15000)},
		{"/empty", "204 No Content", ""},
		{"/other", "422 Unprocessable Entity", "declined\n"},
	}
	for _, tt := range tests {
		resp, body := roundTrip(t, ln.Addr().String(), tt.path)
		if resp.Status != tt.status || body != tt.body {
			t.Errorf("%s: %s %d bytes, want %s %d bytes", tt.path, resp.Status, len(body), tt.status, len(tt.body))
		}
		if got, want := resp.Header.Get("x-GOT"), "POST "+tt.path+" application/json {}"; got != want {
			t.Errorf("%s: the server saw %q, want %q", tt.path, got, want)
		}
		if d, err := ParseDate(resp.Header.Get("Date")); err != nil || time.Since(d).Abs() > time.Minute {
			t.Errorf("%s: Date %q = %v, %v", tt.path, resp.Header.Get("Date"), d, err)
		}
	}
}

func roundTrip(t *testing.T, addr, path string) (*Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = WriteRequest(c, &Request{Method: "POST", Target: path, Host: "torpor",
		Header: []Field{{"Content-Type", "application/json"}}, Body: []byte("{}")})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ReadResponse(bufio.NewReader(c), "POST")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: reading the body: %v", path, err)
	}
	return resp, string(b)
}

func TestReadResponse(t *testing.T) {
	tests := []struct {
		name, raw, body string
		err             string // a substring of the error, "" for none
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef", "abc", ""},
		{"close", "HTTP/1.1 200 OK\r\n\r\nabcdef", "abcdef", ""},
		{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 2\n\nab", "ab", ""},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n3;x=y\r\nabc\r\nA\r\n0123456789\r\n0\r\nT: v\r\n\r\nrest", "abc0123456789", ""},
		{"chunked short", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "ab", "unexpected EOF"},
		{"chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "", "chunk size"},
		{"chunk no CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n", "a", "after a chunk"},
		{"gzip then chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "", "transfer codings"},
		{"length short", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", "ab", "unexpected EOF"},
		{"lengths differ", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", "", "Content-Length"},
		{"negative length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "", "Content-Length"},
		{"101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x82\x00", "", ""},
		{"interim 1xx", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "ok", ""},
		{"endless 1xx", strings.Repeat("HTTP/1.1 102 Processing\r\n\r\n", maxInterim+1) + "HTTP/1.1 200 OK\r\n\r\n", "", "interim"},
		{"304", "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", "", ""},
		{"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", "", "status line"},
		{"status code", "HTTP/1.1 2000 OK\r\n\r\n", "", "status code"},
		{"folded", "HTTP/1.1 200 OK\r\nA: b\r\n c\r\n\r\n", "", "header line"},
		{"no colon", "HTTP/1.1 200 OK\r\nA b\r\n\r\n", "", "header line"},
		{"long line", "HTTP/1.1 200 OK\r\nA: " + strings.Repeat("b", MaxLine) + "\r\n\r\n", "", "longer than"},
		{"many fields", "HTTP/1.1 200 OK\r\n" + strings.Repeat("A: b\r\n", MaxFields+1) + "\r\n", "", "fields"},
		{"truncated head", "HTTP/1.1 200 OK\r\nA: b", "", "unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := readAll(tt.raw)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("err = %v, want %q", err, tt.err)
			}
			if body != tt.body {
				t.Errorf("body = %q, want %q", body, tt.body)
			}
		})
	}
}

func readAll(raw string) (string, error) {
	resp, err := ReadResponse(bufio.NewReader(strings.NewReader(raw)), "POST")
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestWriteRequestRefusesBrokenFraming(t *testing.T) {
	for _, r := range []Request{
		{Method: "POST", Target: "/a b", Host: "h"},
		{Method: "PO ST", Target: "/", Host: "h"},
		{Method: "GET", Target: "/", Host: "h\r\nX: y"},
		{Method: "GET", Target: "/", Host: "h", Header: []Field{{"Bad Name", "v"}}},
		{Method: "GET", Target: "/", Host: "h", Header: []Field{{"A", "v\nB: w"}}},
	} {
		if err := WriteRequest(io.Discard, &r); err == nil {
			t.Errorf("WriteRequest(%+v) succeeded", r)
		}
	}
}

// TestParseDate compares ParseDate with net/http's parser on the three
// forms of RFC 9110 Section 5.6.7 and on garbage.
func TestParseDate(t *testing.T) {
	for _, s := range []string{
		"Sun, 06 Nov 1994 08:49:37 GMT",
		"Sunday, 06-Nov-94 08:49:37 GMT",
		"Sun Nov  6 08:49:37 1994",
		"Thu, 03 Dec 2026 17:46:09 GMT",
		"Thu, 03 Dec 2026 17:46:09 UTC",
		"Thu, 3 Dec 2026 17:46:09 GMT",
		"", "yesterday", "Thu, 03 Dec 2026 25:46:09 GMT",
	} {
		got, err := ParseDate(s)
		want, werr := http.ParseTime(s)
		if (err == nil) != (werr == nil) || !got.Equal(want) {
			t.Errorf("ParseDate(%q) = %v, %v; net/http: %v, %v", s, got, err, want, werr)
		}
		if err == nil && got.Location() != time.UTC {
			t.Errorf("ParseDate(%q) is in %v, want UTC", s, got.Location())
		}
	}
	if _, err := ParseDate("x"); err == nil || errors.Is(err, ErrMalformed) {
		t.Errorf("ParseDate(x) = %v", err)
	}
}

// FuzzReadResponse: any bytes from a server give a response or an
// error, never a panic, and a body read stops at the input's end.
func FuzzReadResponse(f *testing.F) {
	f.Add("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")
	f.Add("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x\r\nabc\r\n0\r\nT: v\r\n\r\n")
	f.Add("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n")
	f.Fuzz(func(t *testing.T, raw string) {
		body, err := readAll(raw)
		if err == nil && len(body) > len(raw) {
			t.Fatalf("a body of %d bytes from %d bytes of input", len(body), len(raw))
		}
	})
}
