package relaytest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/torpor-dev/torpor/did"
	"github.com/torpor-dev/torpor/governed"
	"github.com/torpor-dev/torpor/test/internal/testenv"
	"github.com/torpor-dev/torpor/transport/a2a"
	"github.com/torpor-dev/torpor/transport/bearer"
	"github.com/torpor-dev/torpor/transport/link"
	"github.com/torpor-dev/torpor/transport/link/wire"
)

// startedOrStopped matches the line a relay logs when it serves and the
// one it logs when it gives up.
var startedOrStopped = regexp.MustCompile(`msg="torpor-relay (listening|stopped)"`)

// Try runs torpor-relay as Start does, but a relay that refuses to start
// is no failure: it returns the running relay, or nil, the exit status
// and the log of the one that stopped.
func Try(t testing.TB, dir string, extra ...string) (r *Relay, exit int, log string) {
	t.Helper()
	r = Launch(t, testenv.Binary(t, "torpor-relay"), dir, extra...)
	if m := r.WaitWithin(t, time.Minute, startedOrStopped); m[1] == "listening" {
		r.URL = r.Wait(t, ListenRE)[1]
		return r, 0, ""
	}
	err := r.Stop() // it is exiting: this waits for it and its log
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("torpor-relay logged that it stopped, then exited with %v", err)
	}
	return nil, ee.ExitCode(), r.Log()
}

// Answer is what a send got: the HTTP status and, for an asleep answer,
// whether the relay said the message is queued. Err is a transport error
// (the relay died mid-request): neither queued nor refused.
type Answer struct {
	Status int
	Queued bool
	Err    error
}

// Body returns the A2A SendMessage request Send posts: messageId id and
// an mls-wire part of the bytes pad.
func Body(id, pad string) string {
	mid, _ := json.Marshal(id)
	return `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":` + string(mid) +
		`,"role":"ROLE_USER","parts":[{"mediaType":"` + a2a.MediaTypeMLSWire + `","data":{"mediaType":"` + a2a.MediaTypeMLSWire +
		`","wire":"` + base64.StdEncoding.EncodeToString([]byte(pad)) + `"}}]}}}`
}

// Send posts Body(id, pad) to the agent at the relay url as sender (a
// fresh DID Bearer token each time). It never fails the test, so that
// senders may run in goroutines against a relay that is killed.
func Send(url string, agent did.DID, sender *did.PrivateKey, id, pad string) Answer {
	tok, err := bearer.Issue(sender, url, time.Now(), 0)
	if err != nil {
		return Answer{Err: err}
	}
	status, b, err := Exchange(sendClient, url+"/a/"+agent.String()+"/a2a/jsonrpc", bearer.Authorization(tok), []byte(Body(id, pad)))
	if err != nil {
		return Answer{Status: status, Err: err}
	}
	var a struct {
		Queued bool `json:"queued"`
	}
	json.Unmarshal(b, &a)
	return Answer{Status: status, Queued: a.Queued}
}

var sendClient = &http.Client{Timeout: 30 * time.Second}

// Exchange posts the A2A 1.0 request body to target (an agent's
// /a2a/jsonrpc) through client with the Authorization header auth, and
// returns the answer's status and body; the status is 0 when no answer
// came. It never fails the test, so that senders and benchmarks may run it
// in goroutines.
func Exchange(client *http.Client, target, auth string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("Authorization", auth)
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// ObjectBody is an A2A 1.0 SendMessage (messageId "m-"+id) carrying a
// plaintext Governed Object by key with id, schema and purpose
// comms:message, issued now and valid for an hour: what a device with
// allowPlaintext takes and hands to its handler.
func ObjectBody(key *did.PrivateKey, id, schema string) ([]byte, error) {
	o, err := governed.Sign(key, governed.Template{ID: id, IssuedAt: time.Now(), Semantic: governed.Semantic{Schema: schema},
		Payload: map[string]string{"text": id}, Purpose: "comms:message", TTL: time.Hour})
	if err != nil {
		return nil, err
	}
	obj, err := o.MarshalJSON()
	if err != nil {
		return nil, err
	}
	part, err := a2a.DataObjectPart{Object: obj}.Part()
	if err != nil {
		return nil, err
	}
	req, err := a2a.NewSendMessage(json.RawMessage(`1`), a2a.Version10, a2a.NewUserMessage("m-"+id, "", part))
	if err != nil {
		return nil, err
	}
	return json.Marshal(req)
}

// MessageID returns the messageId of a request body Send posted.
func MessageID(body []byte) string {
	var m struct {
		Params struct {
			Message struct {
				MessageID string `json:"messageId"`
			} `json:"message"`
		} `json:"params"`
	}
	json.Unmarshal(body, &m)
	return m.Params.Message.MessageID
}

// Drain links dev to the relay at url and drains its queue as a device
// does: pull a batch, acknowledge it, until nothing is left. It calls
// delivered with each batch's bodies once their acknowledgement
// succeeded, and returns the first error (a link or store failure).
func Drain(url string, dev *did.PrivateKey, delivered func(bodies [][]byte)) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := link.Dial(ctx, link.Config{RelayURL: url, Key: dev})
	if err != nil {
		return err
	}
	defer c.Close()
	return pullEach(ctx, c, true, func(recs []wire.Record) {
		bodies := make([][]byte, len(recs))
		for i, r := range recs {
			bodies[i] = r.Body
		}
		delivered(bodies)
	})
}

// Count links dev to the relay at url and counts its queued records
// without acknowledging any (PullAll that returns its error).
func Count(url string, dev *did.PrivateKey) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := link.Dial(ctx, link.Config{RelayURL: url, Key: dev})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	n := 0
	err = pullEach(ctx, c, false, func(recs []wire.Record) { n += len(recs) })
	return n, err
}
