package mqttconn

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/eclipse/paho.golang/packets"
	"github.com/eclipse/paho.golang/paho"

	"github.com/torpor-dev/torpor/clock"
)

// Dial opens a TCP connection to u's host, with TLS (tlsCfg) for the
// schemes mqtts, tls and ssl. It is Config.Dial's default; there is no
// WebSocket and no proxy.
func Dial(ctx context.Context, u *url.URL, tlsCfg *tls.Config) (net.Conn, error) {
	var conn net.Conn
	var err error
	switch strings.ToLower(u.Scheme) {
	case "mqtt", "tcp", "":
		var d net.Dialer
		conn, err = d.DialContext(ctx, "tcp", u.Host)
	case "mqtts", "tls", "ssl":
		d := tls.Dialer{Config: tlsCfg}
		conn, err = d.DialContext(ctx, "tcp", u.Host)
	default:
		return nil, fmt.Errorf("mqtt: unsupported broker URL scheme %q", u.Scheme)
	}
	if err != nil {
		return nil, err
	}
	return conn, nil
}

// establish makes connection attempts, waiting Backoff(n) before attempt
// n, until one succeeds or ctx ends (nil client). lost receives the first
// error that ends the connection.
func (m *Manager) establish(ctx context.Context, first bool) (cli *paho.Client, ca *paho.Connack, lost <-chan error) {
	for attempt := 0; ; attempt++ {
		if d := m.cfg.Backoff(attempt); d > 0 {
			if clock.Sleep(ctx, m.clock, d) != nil {
				return nil, nil, nil
			}
		}
		if ctx.Err() != nil {
			return nil, nil, nil
		}
		cli, ca, lost, err := m.attempt(ctx, first)
		if err == nil {
			return cli, ca, lost
		}
		if ctx.Err() != nil {
			return nil, nil, nil
		}
		m.cfg.Logs.Debug.Printf("mqttconn: failed to connect to %s: %v", m.cfg.Server, err)
		if m.cfg.Hooks.OnConnectError != nil {
			m.cfg.Hooks.OnConnectError(err)
		}
	}
}

// attempt dials, sends CONNECT and waits for the CONNACK, within
// Connect.Timeout (a wait for the network: real time).
func (m *Manager) attempt(ctx context.Context, first bool) (*paho.Client, *paho.Connack, <-chan error, error) {
	cp := &paho.Connect{KeepAlive: m.cfg.Connect.KeepAlive, ClientID: m.cfg.Client.ClientID, CleanStart: m.cfg.Connect.CleanStart && first}
	if m.cfg.Connect.SessionExpiry != 0 {
		exp := m.cfg.Connect.SessionExpiry
		cp.Properties = &paho.ConnectProperties{SessionExpiryInterval: &exp}
	}
	if m.cfg.Connect.Packet != nil {
		var err error
		if cp, err = m.cfg.Connect.Packet(cp); err != nil {
			return nil, nil, nil, fmt.Errorf("failed to connect to %s: %w", m.cfg.Server, err)
		}
	}
	actx, cancel := context.WithTimeout(ctx, m.cfg.Connect.Timeout)
	defer cancel()
	conn, err := m.cfg.Dial(actx, m.cfg.Server)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("failed to connect to %s: %w", m.cfg.Server, err)
	}
	lost := make(chan error, 1)
	cfg := m.cfg.Client
	cfg.Conn = packets.NewThreadSafeConn(conn)
	cfg.OnClientError = func(err error) { report(lost, err) }
	cfg.OnServerDisconnect = func(d *paho.Disconnect) {
		report(lost, fmt.Errorf("server requested disconnect (reason: %d)", d.ReasonCode))
	}
	cli := paho.NewClient(cfg)
	cli.SetDebugLogger(m.cfg.Logs.PahoDebug)
	cli.SetErrorLogger(m.cfg.Logs.PahoErrors)
	ca, err := cli.Connect(actx, cp)
	if err != nil {
		conn.Close()
		if ca != nil {
			reason := ""
			if ca.Properties != nil {
				reason = ca.Properties.ReasonString
			}
			return nil, nil, nil, &ConnackError{ReasonCode: ca.ReasonCode, Reason: reason, Err: err}
		}
		return nil, nil, nil, fmt.Errorf("failed to connect to %s: %w", m.cfg.Server, err)
	}
	m.mu.Lock()
	m.conn = conn
	m.mu.Unlock()
	return cli, ca, lost, nil
}

// report passes the first error that ends a connection on; later ones
// (the same failure seen again while the client shuts down) are dropped.
func report(lost chan error, err error) {
	select {
	case lost <- err:
	default:
	}
}
