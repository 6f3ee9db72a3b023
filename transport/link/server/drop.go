package server

import (
	"errors"

	"github.com/coder/websocket"
)

// Drop closes agent's link, if it has one, with reason: a relay of a fleet
// drops its link when the device linked again through another relay (see
// transport/relay/fleet), as attach closes an older link on this relay.
// It reports whether there was a link. The link's end calls
// Agents.Linked(agent, false) as usual.
func (s *Server) Drop(agent, reason string) bool {
	c := s.conn(agent)
	if c == nil {
		return false
	}
	c.ws.Close(websocket.StatusPolicyViolation, reason)
	c.fail(errors.New(reason))
	return true
}
