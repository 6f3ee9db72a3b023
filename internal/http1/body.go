package http1

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// bodyReader returns the reader of resp's body (RFC 9112 Section 6.3; a
// 2xx answer to CONNECT has none: the tunnel follows).
func bodyReader(br *bufio.Reader, method string, resp *Response) (io.Reader, error) {
	c := resp.StatusCode
	if method == "HEAD" || c/100 == 1 || c == 204 || c == 304 || method == "CONNECT" && c/100 == 2 {
		return strings.NewReader(""), nil
	}
	if te := resp.Header.Values("Transfer-Encoding"); len(te) > 0 {
		// Section 6.3, item 4: chunked must be the final coding, and then
		// the body is chunked; a response with another final coding is
		// read until the connection closes. Content-Length is ignored.
		codings := strings.Split(strings.Join(te, ","), ",")
		if strings.EqualFold(strings.TrimSpace(codings[len(codings)-1]), "chunked") {
			if len(codings) > 1 {
				return nil, fmt.Errorf("%w: transfer codings %q (only chunked is read)", ErrMalformed, strings.Join(te, ","))
			}
			return &chunked{br: br}, nil
		}
		return br, nil
	}
	if cl := resp.Header.Values("Content-Length"); len(cl) > 0 {
		n, err := contentLength(cl)
		if err != nil {
			return nil, err
		}
		return &exact{r: br, n: n}, nil
	}
	return br, nil
}

// contentLength parses the Content-Length values; several must agree
// (RFC 9110 Section 8.6).
func contentLength(vals []string) (int64, error) {
	var n int64 = -1
	for _, v := range strings.Split(strings.Join(vals, ","), ",") {
		v = strings.TrimSpace(v)
		m, err := strconv.ParseInt(v, 10, 63)
		if err != nil || m < 0 || v[0] == '+' || (n >= 0 && m != n) {
			return 0, fmt.Errorf("%w: Content-Length %q", ErrMalformed, strings.Join(vals, ","))
		}
		n = m
	}
	return n, nil
}

// exact reads exactly n bytes; fewer before EOF is io.ErrUnexpectedEOF.
type exact struct {
	r io.Reader
	n int64
}

func (e *exact) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.n {
		p = p[:e.n]
	}
	n, err := e.r.Read(p)
	e.n -= int64(n)
	if err == io.EOF && e.n > 0 {
		err = io.ErrUnexpectedEOF
	} else if err == io.EOF {
		err = nil
	}
	return n, err
}

// chunked decodes the chunked transfer coding (RFC 9112 Section 7.1):
//
//	chunked-body = *chunk last-chunk trailer-section CRLF
//	chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//	last-chunk   = 1*("0") [ chunk-ext ] CRLF
//
// Chunk extensions and trailer fields are read and ignored (Sections
// 7.1.1, 7.1.2).
type chunked struct {
	br   *bufio.Reader
	left int64 // bytes left in the current chunk
	done bool
	err  error
}

func (c *chunked) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if c.left == 0 && !c.done {
		if c.err = c.nextChunk(); c.err != nil {
			return 0, c.err
		}
	}
	if c.done {
		c.err = io.EOF
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.br.Read(p)
	c.left -= int64(n)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err == nil && c.left == 0 {
		err = c.crlf()
	}
	c.err = err
	return n, err
}

// nextChunk reads a chunk-size line; for the last chunk it reads the
// trailer section too.
func (c *chunked) nextChunk() error {
	line, err := readLine(c.br)
	if err != nil {
		return err
	}
	size, _, _ := strings.Cut(line, ";")
	size = strings.TrimRight(size, " \t")
	n, err := strconv.ParseUint(size, 16, 63)
	if err != nil || size == "" || len(size) > 16 {
		return fmt.Errorf("%w: chunk size %q", ErrMalformed, trim(line))
	}
	if n > 0 {
		c.left = int64(n)
		return nil
	}
	c.done = true
	_, err = readHeader(c.br) // the trailer section and the final CRLF
	return err
}

// crlf reads the CRLF after a chunk's data.
func (c *chunked) crlf() error {
	line, err := readLine(c.br)
	if err != nil {
		return err
	}
	if line != "" {
		return fmt.Errorf("%w: %d bytes after a chunk's data", ErrMalformed, len(line))
	}
	return nil
}

// ParseDate parses an HTTP date (RFC 9110 Section 5.6.7): the preferred
// IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), and the two obsolete
// forms a recipient must also accept, rfc850-date ("Sunday, 06-Nov-94
// 08:49:37 GMT") and asctime-date ("Sun Nov  6 08:49:37 1994"). The time
// is UTC.
func ParseDate(s string) (time.Time, error) {
	for _, layout := range []string{
		"Mon, 02 Jan 2006 15:04:05 GMT",
		"Monday, 02-Jan-06 15:04:05 GMT",
		"Mon Jan _2 15:04:05 2006",
	} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("http1: %q is not an HTTP date", trim(s))
}
