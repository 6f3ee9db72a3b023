package wsclient

import (
	"errors"
	"net/http"
	"sync"
	"time"

	gws "github.com/gorilla/websocket"
)

// gorillaLib is github.com/gorilla/websocket: its writer cuts a message
// into frames where its 512-byte buffer fills (a control frame written in
// between goes out between them), and its pings carry the payloads the
// script chose, 0 to 125 bytes. Its answer to a close frame repeats the
// code without the reason.
var gorillaLib = wsLib{name: "gorilla", play: playGorilla, pongs: gorillaPongs}

func playGorilla(w http.ResponseWriter, r *http.Request, s wsScript) serverSaw {
	var saw serverSaw
	var pmu sync.Mutex
	c, err := (&gws.Upgrader{WriteBufferSize: 512}).Upgrade(w, r, nil)
	if err != nil {
		return serverSaw{readErr: err}
	}
	defer c.Close()
	c.SetReadLimit(1 << 22)
	c.SetPongHandler(func(p string) error {
		pmu.Lock()
		saw.pongs = append(saw.pongs, p)
		pmu.Unlock()
		return nil
	})
	deadline := time.Now().Add(20 * time.Second)
	c.SetReadDeadline(deadline)
	c.SetWriteDeadline(deadline)
	allUp := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		saw.up, saw.readErr = readAllGorilla(c, len(s.up), allUp)
	}()
	saw.pingErr = writeGorilla(c, s.down, deadline)
	if s.serverCloses {
		select {
		case <-allUp:
			c.WriteControl(gws.CloseMessage, gws.FormatCloseMessage(int(s.code), s.reason), deadline)
		case <-readDone:
		}
	}
	<-readDone
	var ce *gws.CloseError
	if errors.As(saw.readErr, &ce) {
		saw.closed, saw.closeCode, saw.closeReason = true, StatusCode(ce.Code), ce.Text
	}
	pmu.Lock()
	defer pmu.Unlock()
	return saw
}

// readAllGorilla reads messages until an error, closing allUp after the
// n-th.
func readAllGorilla(c *gws.Conn, n int, allUp chan struct{}) ([]wsMsg, error) {
	var got []wsMsg
	if n == 0 {
		close(allUp)
	}
	for {
		typ, b, err := c.ReadMessage()
		if err != nil {
			return got, err
		}
		op := OpBinary
		if typ == gws.TextMessage {
			op = OpText
		}
		if got = append(got, wsMsg{op: op, data: b}); len(got) == n {
			close(allUp)
		}
	}
}

// writeGorilla writes msgs in the script's pieces, with a ping of the
// script's payload where it says.
func writeGorilla(c *gws.Conn, msgs []wsMsg, deadline time.Time) error {
	for _, m := range msgs {
		typ := gws.BinaryMessage
		if m.op == OpText {
			typ = gws.TextMessage
		}
		w, err := c.NextWriter(typ)
		if err != nil {
			return err
		}
		rest := m.data
		for i, n := range m.frags {
			if _, err := w.Write(rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
			if m.pings[i] {
				if err := c.WriteControl(gws.PingMessage, m.pingData[i], deadline); err != nil {
					return err
				}
			}
		}
		if err := w.Close(); err != nil {
			return err
		}
	}
	return nil
}

func gorillaPongs(s wsScript) []string {
	var want []string
	for _, m := range s.down {
		for i, p := range m.pings {
			if p {
				want = append(want, string(m.pingData[i]))
			}
		}
	}
	return want
}
