package wsclient

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/torpor-dev/torpor/internal/http1"
)

// ProxyFromEnvironment chooses the proxy for target as net/http's
// ProxyFromEnvironment does (https://pkg.go.dev/net/http#ProxyFromEnvironment),
// a wss URL taking the place of https and ws of http: HTTPS_PROXY or
// https_proxy for wss, HTTP_PROXY or http_proxy for ws (not when
// REQUEST_METHOD is set, as in a CGI program), never for localhost or a
// loopback address, nor for a host NO_PROXY or no_proxy names (a comma-separated list of
// "*", IP addresses, CIDR blocks, and host names that also match their
// subdomains, with an optional port; a leading "." or "*." matches the
// subdomains only). A proxy address without a scheme is http. It returns
// nil for a direct connection.
func ProxyFromEnvironment(target *url.URL) (*url.URL, error) {
	return proxyFor(target, os.Getenv)
}

func proxyFor(target *url.URL, getenv func(string) string) (*url.URL, error) {
	env := func(name string) string {
		if v := getenv(strings.ToUpper(name)); v != "" {
			return v
		}
		return getenv(name)
	}
	var raw string
	switch target.Scheme {
	case "wss":
		raw = env("https_proxy")
	case "ws":
		if getenv("REQUEST_METHOD") == "" {
			raw = env("http_proxy")
		}
	}
	if raw == "" || !useProxy(target, env("no_proxy")) {
		return nil, nil
	}
	p, err := url.Parse(raw)
	if err != nil || p.Scheme == "" || p.Host == "" {
		if p, err = url.Parse("http://" + raw); err != nil {
			// Not quoted: the address may hold a password.
			return nil, fmt.Errorf("websocket: the proxy address in the environment is not a URL")
		}
	}
	if p.Scheme != "http" && p.Scheme != "https" {
		return nil, fmt.Errorf("websocket: proxy %s: scheme %q is not supported (http and https are)", p.Redacted(), p.Scheme)
	}
	return p, nil
}

// useProxy reports whether target goes through a proxy given NO_PROXY.
func useProxy(target *url.URL, noProxy string) bool {
	host, port := strings.ToLower(target.Hostname()), defaultPort(target)
	ip := net.ParseIP(host)
	if host == "localhost" || ip != nil && ip.IsLoopback() {
		return false
	}
	for _, e := range strings.Split(noProxy, ",") {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "*" {
			return false
		}
		if _, block, err := net.ParseCIDR(e); err == nil {
			if ip != nil && block.Contains(ip) {
				return false
			}
			continue
		}
		eh, ep, err := net.SplitHostPort(e)
		if err != nil {
			eh, ep = e, ""
		}
		if eh == "" || ep != "" && ep != port {
			continue
		}
		if eip := net.ParseIP(eh); eip != nil {
			if ip != nil && eip.Equal(ip) {
				return false
			}
			continue
		}
		eh = strings.TrimPrefix(eh, "*")
		if strings.HasPrefix(eh, ".") && strings.HasSuffix(host, eh) || host == eh || strings.HasSuffix(host, "."+eh) {
			return false
		}
	}
	return true
}

func defaultPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	return map[string]string{"ws": "80", "http": "80", "wss": "443", "https": "443"}[u.Scheme]
}

// dialProxy opens a tunnel to addr through the HTTP proxy p with CONNECT
// (RFC 9110, Section 9.3.6), over TLS to the proxy when p is https, with
// Basic credentials (RFC 7617) when p has a user. The WebSocket (and, for
// wss, its TLS) then runs inside the tunnel, for ws as for wss.
func dialProxy(ctx context.Context, o *Options, dial func(context.Context, string, string) (net.Conn, error), p *url.URL, addr string) (net.Conn, error) {
	nc, err := dial(ctx, "tcp", net.JoinHostPort(p.Hostname(), defaultPort(p)))
	if err != nil {
		return nil, fmt.Errorf("websocket: proxy %s: %w", p.Redacted(), err)
	}
	if p.Scheme == "https" {
		tc := tls.Client(nc, tlsConfig(o, p.Hostname()))
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("websocket: proxy %s: %w", p.Redacted(), err)
		}
		nc = tc
	}
	var hdr []http1.Field
	if p.User != nil {
		pass, _ := p.User.Password()
		cred := base64.StdEncoding.EncodeToString([]byte(p.User.Username() + ":" + pass))
		hdr = append(hdr, http1.Field{Name: "Proxy-Authorization", Value: "Basic " + cred})
	}
	stop := watch(ctx, nc.SetDeadline)
	err = http1.WriteRequest(nc, &http1.Request{Method: "CONNECT", Target: addr, Host: addr, Header: hdr})
	var resp *http1.Response
	var br *bufio.Reader
	if err == nil {
		br = bufio.NewReader(nc)
		resp, err = http1.ReadResponse(br, "CONNECT")
	}
	if !stop() && err == nil {
		err = context.Cause(ctx)
	}
	switch {
	case err != nil:
	case resp.StatusCode/100 != 2:
		err = fmt.Errorf("refused the tunnel to %s: %s", addr, resp.Status)
	case br.Buffered() > 0:
		err = fmt.Errorf("%d bytes after its answer to CONNECT", br.Buffered())
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("websocket: proxy %s: %w", p.Redacted(), err)
	}
	return nc, nil
}

// tlsConfig is o's TLS configuration for a server named name.
func tlsConfig(o *Options, name string) *tls.Config {
	cfg := &tls.Config{}
	if o.TLSConfig != nil {
		cfg = o.TLSConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = name
	}
	return cfg
}
