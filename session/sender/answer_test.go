package sender

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/torpor-dev/torpor/did"
)

func TestReadAnswer(t *testing.T) {
	long := `{"error":"x","message":"` + strings.Repeat("m", 3000) + `"}`
	tests := []struct {
		name   string
		status int
		header http.Header
		body   string
		want   Answer
	}{
		{"asleep and queued", 503, nil, `{"error":"agent_asleep","queued":true,"retryAfterSec":600}`,
			Answer{Status: 503, Error: "agent_asleep", Queued: true, RetryAfter: 600, Body: `{"error":"agent_asleep","queued":true,"retryAfterSec":600}`}},
		{"JSON-RPC mapping", 503, nil, `{"jsonrpc":"2.0","id":1,"error":{"code":-32003,"message":"asleep","data":{"error":"agent_asleep","kind":"k","queued":true,"retryAfterSec":30}}}`,
			Answer{Status: 503, Error: "agent_asleep", Message: "asleep", Kind: "k", Queued: true, RetryAfter: 30,
				Body: `{"jsonrpc":"2.0","id":1,"error":{"code":-32003,"message":"asleep","data":{"error":"agent_asleep","kind":"k","queued":true,"retryAfterSec":30}}}`}},
		{"top-level members win over error.data", 507, nil, `{"kind":"bytes","message":"top","retryAfterSec":5,"error":{"code":-32004,"message":"rpc","data":{"error":"asleep_queue_full","kind":"peer","retryAfterSec":9}}}`,
			Answer{Status: 507, Error: "asleep_queue_full", Message: "top", Kind: "bytes", RetryAfter: 5,
				Body: `{"kind":"bytes","message":"top","retryAfterSec":5,"error":{"code":-32004,"message":"rpc","data":{"error":"asleep_queue_full","kind":"peer","retryAfterSec":9}}}`}},
		{"live rejection", 200, nil, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"object rejected"}}`,
			Answer{Status: 200, Error: "rejected", RPCCode: -32602, Message: "object rejected"}},
		{"live success keeps the body", 200, nil, `{"jsonrpc":"2.0","id":1,"result":{}}`,
			Answer{Status: 200, Body: `{"jsonrpc":"2.0","id":1,"result":{}}`}},
		{"Retry-After header wins", 503, http.Header{"Retry-After": {"120"}}, `{"error":"agent_asleep","retryAfterSec":600}`,
			Answer{Status: 503, Error: "agent_asleep", RetryAfter: 120, Body: `{"error":"agent_asleep","retryAfterSec":600}`}},
		{"HTTP-date Retry-After is ignored", 503, http.Header{"Retry-After": {"Wed, 21 Oct 2015 07:28:00 GMT"}}, `{"error":"agent_asleep","retryAfterSec":600}`,
			Answer{Status: 503, Error: "agent_asleep", RetryAfter: 600, Body: `{"error":"agent_asleep","retryAfterSec":600}`}},
		{"Retry-After 0 is no hint", 429, http.Header{"Retry-After": {"0"}}, `{}`,
			Answer{Status: 429, Body: `{}`}},
		{"bearer challenge", 401, http.Header{"Www-Authenticate": {`Bearer error="invalid_token", error_description="token expired"`}}, "",
			Answer{Status: 401, Challenge: "token expired"}},
		{"not JSON", 502, nil, " bad gateway\n", Answer{Status: 502, Body: "bad gateway"}},
		{"retired", 410, nil, `{"error":"agent_retired","successor":"did:key:z6MkNext"}`,
			Answer{Status: 410, Error: "agent_retired", Successor: "did:key:z6MkNext", Body: `{"error":"agent_retired","successor":"did:key:z6MkNext"}`}},
		{"long body is cut", 500, nil, long, Answer{Status: 500, Error: "x", Message: strings.Repeat("m", 3000), Body: long[:maxAnswerBody]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ReadAnswer(tt.status, tt.header, []byte(tt.body))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ReadAnswer(%d, %q) mismatch (-want +got):\n%s", tt.status, tt.body, diff)
			}
		})
	}
}

func TestAnswerString(t *testing.T) {
	tests := []struct {
		a    Answer
		want string
	}{
		{Answer{Status: 200, RPCCode: -32602, Message: "no"}, "rejected: the agent refused it, or the relay refused it for the agent by its signed policy (an unencrypted object where the policy takes none); nothing was queued: -32602 no"},
		{Answer{Status: 200}, "delivered: the agent was awake and took it"},
		{Answer{Status: 503, Queued: true, RetryAfter: 90}, "queued: the agent is asleep; the relay stored the message and delivers it when the agent wakes (expected in about 1m30s); it will not be sent again"},
		{Answer{Status: 503, Queued: true}, "queued: the agent is asleep; the relay stored the message and delivers it when the agent wakes; it will not be sent again"},
		{Answer{Status: 503, RetryAfter: 7}, "refused: the agent is not accepting this now and nothing was queued; try again in 7s"},
		{Answer{Status: 503, Error: "store_unconfirmed", RetryAfter: 5}, "unconfirmed: the relay's store did not confirm the write; the message may or may not be queued (the device drops a second copy, so sending it again is safe)"},
		{Answer{Status: 410, Error: "agent_retired", Successor: "did:key:z6MkNext"}, "refused: the agent's key was rotated; it is now did:key:z6MkNext: send to that DID (nothing was queued)"},
		{Answer{Status: 507, Error: "asleep_queue_full", Kind: "peer", Message: "cap"}, "refused: the agent's queue is full (peer bound: cap); nothing was queued"},
		{Answer{Status: 504}, "unanswered: the agent's device did not answer; it may or may not have processed the message (not retried)"},
		{Answer{Status: 401, Challenge: "expired", Body: "b"}, "refused: the relay did not accept your DID Bearer token: expired"},
		{Answer{Status: 401, Body: "b"}, "refused: the relay did not accept your DID Bearer token: b"},
		{Answer{Status: 404, Body: "b"}, "refused: the relay does not know this agent: b"},
		{Answer{Status: 413, Body: "b"}, "refused: the message exceeds the agent's maximum message size: b"},
		{Answer{Status: 418, Body: "b"}, "refused: HTTP 418: b"},
	}
	for _, tt := range tests {
		if got := tt.a.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.a, got, tt.want)
		}
	}
}

func TestRetryable(t *testing.T) {
	tests := []struct {
		a    Answer
		want bool
	}{
		{Answer{Status: 503}, true},
		{Answer{Status: 503, Queued: true}, false},
		{Answer{Status: 507}, true},
		{Answer{Status: 429}, true},
		{Answer{Status: 504}, false},
		{Answer{Status: 200}, false},
		{Answer{Status: 401}, false},
	}
	for _, tt := range tests {
		if got := tt.a.Retryable(); got != tt.want {
			t.Errorf("%+v.Retryable() = %v, want %v", tt.a, got, tt.want)
		}
	}
}

func TestKeyPackageError(t *testing.T) {
	agent, err := did.Parse("did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		status int
		body   string
		want   string
	}{
		{410, `{"error":"agent_retired","successor":"did:key:z6MkNext"}`, "was retired when its key was rotated; it is now did:key:z6MkNext"},
		{404, `{"error":"unknown_agent"}`, "no such agent on this relay: no device has published " + agent.String()},
		{503, `{"error":"no_key_package","retryAfterSec":60}`, "has no MLS KeyPackage left on the relay (used up, or none published yet); its device publishes new ones when it next links (expected in about 1m0s)"},
		{500, `oops`, "no MLS KeyPackage for " + agent.String() + " from the relay: refused: HTTP 500: oops"},
	}
	for _, tt := range tests {
		err := KeyPackageError(agent, &HTTPError{Op: "key-package", Status: tt.status, Body: []byte(tt.body)})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("KeyPackageError(%d %s) = %v, want one containing %q", tt.status, tt.body, err, tt.want)
		}
	}
}
