package http1

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Bounds on what ReadResponse accepts of a response's head.
const (
	// MaxLine bounds the status line and each header line.
	MaxLine = 8 << 10
	// MaxHeaderBytes bounds the whole head.
	MaxHeaderBytes = 64 << 10
	// MaxFields bounds the number of header lines.
	MaxFields = 128
)

// ErrMalformed wraps every error about a response that is not HTTP/1.1.
var ErrMalformed = errors.New("http1: malformed response")

// Header holds header fields by lower-cased name (field names are
// case-insensitive, RFC 9110 Section 5.1), each with its values in order.
type Header map[string][]string

// Get returns the first value of the field name, or "".
func (h Header) Get(name string) string {
	if v := h[strings.ToLower(name)]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Values returns every value of the field name.
func (h Header) Values(name string) []string { return h[strings.ToLower(name)] }

// HasToken reports whether the comma-separated list field name (RFC 9110
// Section 5.6.1) holds token, compared case-insensitively.
func (h Header) HasToken(name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// Field is one request header field.
type Field struct{ Name, Value string }

// Request is what WriteRequest writes.
type Request struct {
	Method string
	// Target is the request target in origin form ("/path?query"), RFC
	// 9112 Section 3.2.1.
	Target string
	Host   string
	Header []Field
	// Body, when not nil, is sent with its Content-Length.
	Body []byte
}

// WriteRequest writes r to w as one HTTP/1.1 request (RFC 9112 Section
// 3: request line; Section 5: fields; Section 6.2: Content-Length). It
// refuses a name or value that would break the framing (CR, LF, or a
// name that is not a token).
func WriteRequest(w io.Writer, r *Request) error {
	if !isToken(r.Method) || r.Target == "" || strings.ContainsAny(r.Target, " \r\n") {
		return fmt.Errorf("http1: bad request line %q %q", r.Method, r.Target)
	}
	var b strings.Builder
	b.WriteString(r.Method + " " + r.Target + " HTTP/1.1\r\n")
	fields := append([]Field{{"Host", r.Host}}, r.Header...)
	if r.Body != nil {
		fields = append(fields, Field{"Content-Length", strconv.Itoa(len(r.Body))})
	}
	for _, f := range fields {
		if !isToken(f.Name) || strings.ContainsAny(f.Value, "\r\n\x00") {
			return fmt.Errorf("http1: bad header field %q", f.Name)
		}
		b.WriteString(f.Name + ": " + f.Value + "\r\n")
	}
	b.WriteString("\r\n")
	buf := append([]byte(b.String()), r.Body...)
	_, err := w.Write(buf)
	return err
}

// isToken reports whether s is a token (RFC 9110 Section 5.6.2).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// Response is a response's head and its body.
type Response struct {
	// StatusCode is the three-digit status code; Status is the code and
	// the reason phrase ("422 Unprocessable Entity"), as the server sent
	// them.
	StatusCode int
	Status     string
	Header     Header
	// Body reads the body as its framing says (RFC 9112 Section 6.3); it
	// is empty for a response without one (and for 101, whose connection
	// goes on in the new protocol: read that from the bufio.Reader).
	Body io.Reader
}

// maxInterim bounds the interim responses ReadResponse reads past.
const maxInterim = 8

// ReadResponse reads a response to a request of method from br. Interim
// 1xx responses other than 101 are read and dropped (RFC 9110, Section
// 15.2: a client must accept them before the final response), up to
// maxInterim of them.
func ReadResponse(br *bufio.Reader, method string) (*Response, error) {
	for i := 0; ; i++ {
		if i > maxInterim {
			return nil, fmt.Errorf("%w: more than %d interim answers", ErrMalformed, maxInterim)
		}
		line, err := readLine(br)
		if err != nil {
			return nil, err
		}
		resp, err := parseStatusLine(line)
		if err != nil {
			return nil, err
		}
		if resp.Header, err = readHeader(br); err != nil {
			return nil, err
		}
		if resp.StatusCode/100 == 1 && resp.StatusCode != 101 {
			continue
		}
		resp.Body, err = bodyReader(br, method, resp)
		return resp, err
	}
}

// parseStatusLine parses "HTTP/1.1 200 OK" (RFC 9112 Section 4).
func parseStatusLine(line string) (*Response, error) {
	proto, rest, ok := strings.Cut(line, " ")
	if !ok || !strings.HasPrefix(proto, "HTTP/1.") || len(proto) != 8 {
		return nil, fmt.Errorf("%w: status line %q", ErrMalformed, trim(line))
	}
	code, reason, _ := strings.Cut(rest, " ")
	n, err := strconv.Atoi(code)
	if err != nil || len(code) != 3 || n < 100 {
		return nil, fmt.Errorf("%w: status code in %q", ErrMalformed, trim(line))
	}
	status := code
	if reason != "" {
		status += " " + reason
	}
	return &Response{StatusCode: n, Status: status}, nil
}

// readHeader reads header lines up to the empty line (RFC 9112 Section 5).
func readHeader(br *bufio.Reader) (Header, error) {
	h := Header{}
	total := 0
	for n := 0; ; n++ {
		line, err := readLine(br)
		if err != nil {
			return nil, err
		}
		if line == "" {
			return h, nil
		}
		if total += len(line); total > MaxHeaderBytes || n >= MaxFields {
			return nil, fmt.Errorf("%w: header larger than %d bytes or %d fields", ErrMalformed, MaxHeaderBytes, MaxFields)
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || !isToken(name) {
			// Also refuses obsolete line folding (Section 5.2).
			return nil, fmt.Errorf("%w: header line %q", ErrMalformed, trim(line))
		}
		name = strings.ToLower(name)
		h[name] = append(h[name], strings.Trim(value, " \t"))
	}
}

// readLine reads one line ended by LF (a CR before it is dropped, RFC 9112
// Section 2.2), at most MaxLine bytes.
func readLine(br *bufio.Reader) (string, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if len(line) > MaxLine {
			return "", fmt.Errorf("%w: line longer than %d bytes", ErrMalformed, MaxLine)
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return "", err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return string(line), nil
}

func trim(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
