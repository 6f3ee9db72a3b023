package runtime

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"

	"github.com/torpor-dev/torpor/runtime/drain"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// live answers a request the relay forwarded inside the window. It goes
// through the same pipeline as a queued record (one record, one
// transaction; nothing to acknowledge) and is answered with a JSON-RPC
// result when something was accepted, else with a coarse error that does
// not tell the sender which check failed (draft Section 8.4). Each result
// message has its own random messageId, as A2A requires message ids to be
// unique.
func (a *Agent) live(ctx context.Context, req wire.Request) wire.Response {
	id := json.RawMessage("null")
	r, err := a2a.ParseRequest(req.Body)
	var bad *a2a.RPCError
	if errors.As(err, &bad) {
		// Not a request this agent reads: its relay gives the same answer
		// when the agent is asleep (transport/relay), id null (JSON-RPC
		// 2.0 Section 5).
		return rpcResponse(statusOK, a2a.NewError(id, bad))
	}
	if err == nil && r.ID != nil {
		id = r.ID
	}
	p := a.Pipeline()
	if p == nil {
		return rpcResponse(statusUnavailable, a2a.NewError(id, &a2a.RPCError{Code: a2a.CodeInternalError, Message: "agent stopping"}))
	}
	rep, err := p.drainer.Batch(ctx, []drain.Record{{From: req.From, Body: req.Body}}, nil)
	logDiagnostics(a.log, rep.Diagnostics, msgLiveRejected, "from", req.From)
	a.mu.Lock()
	cur := a.cur
	a.mu.Unlock()
	if cur != nil {
		cur.addDrain(rep, true)
	}
	switch {
	case errors.Is(err, drain.ErrUntrusted):
		// Nothing was judged: the sender may try again, or its record
		// queued meanwhile waits for trusted time.
		a.log.Warn("live request held: no trusted time", "err", err)
		return rpcResponse(statusUnavailable, a2a.NewError(id, &a2a.RPCError{Code: a2a.CodeInternalError, Message: "agent has no trusted time yet; retry later"}))
	case err != nil:
		a.log.Error("live request", "err", err)
		return rpcResponse(statusInternalError, a2a.NewError(id, &a2a.RPCError{Code: a2a.CodeInternalError, Message: "Internal error"}))
	case rep.Rejected[drain.CauseOpaque] > 0, rep.Deferred > 0 && rep.Acked == 0:
		return rpcResponse(statusOK, a2a.NewError(id, &a2a.RPCError{Code: a2a.CodeMethodNotFound, Message: "Method not found"}))
	case rep.Accepted+rep.Handshake == 0:
		return rpcResponse(statusOK, a2a.NewError(id, a2a.ObjectRejected()))
	}
	msg := a2a.Message{MessageID: rand.Text(), Role: a2a.RoleAgent,
		Parts: []a2a.Part{{Text: ptr("accepted")}}}
	resp, err := a2a.NewSendResult(id, req.Version, msg)
	if err != nil {
		return rpcResponse(statusInternalError, a2a.NewError(id, &a2a.RPCError{Code: a2a.CodeInternalError, Message: "Internal error"}))
	}
	return rpcResponse(statusOK, resp)
}

// The HTTP status codes of live answers (RFC 9110, Section 15), spelled
// here because net/http's constants would link net/http into torpor-agent
// (internal/deptest).
const (
	statusOK            = 200
	statusInternalError = 500
	statusUnavailable   = 503
)

func rpcResponse(status int, r *a2a.Response) wire.Response {
	b, _ := json.Marshal(r)
	return wire.Response{Status: status, ContentType: "application/json", Body: b}
}

func ptr[T any](v T) *T { return &v }
