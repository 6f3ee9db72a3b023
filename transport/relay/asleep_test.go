package relay

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/torpor-dev/torpor/internal/benchcpu"
)

// TestAsleepAnswerBytes: answerAsleep writes, header and body, what
// answer (encoding/json) writes for the asleep answer, for calls and
// notifications, queued or not, with and without Retry-After, and ids
// encoding/json writes as they are or changes.
func TestAsleepAnswerBytes(t *testing.T) {
	ids := []string{"", `7`, `-1.5e3`, `"a"`, `null`, `"x<y&z"`, `"é"`, "\"\u2028\"", `"\u003c"`}
	for _, id := range ids {
		for _, queued := range []bool{false, true} {
			for _, retry := range []int{0, 1, 3599} {
				req := rpcRequest{}
				if id != "" {
					req.call, req.id = true, json.RawMessage(id)
				}
				got, want := httptest.NewRecorder(), httptest.NewRecorder()
				answerAsleep(got, req, queued, retry)
				answer(want, req, http.StatusServiceUnavailable, CodeAsleep, profileAnswer{Error: tokenAsleep, Message: asleepMessage(queued), Queued: queued}, retry)
				if got.Code != want.Code || got.Body.String() != want.Body.String() || !reflect.DeepEqual(got.Header(), want.Header()) {
					t.Errorf("id %s queued %v retry %d:\n got %d %v %s\nwant %d %v %s", id, queued, retry,
						got.Code, got.Header(), got.Body, want.Code, want.Header(), want.Body)
				}
			}
		}
	}
}

// BenchmarkAsleepAnswerWrite: the asleep answer from its parts, beside
// encoding/json's.
func BenchmarkAsleepAnswerWrite(b *testing.B) {
	req := rpcRequest{call: true, id: json.RawMessage(`7`)}
	w := httptest.NewRecorder()
	b.Run("parts", func(b *testing.B) {
		meter := benchcpu.Start(b)
		for b.Loop() {
			w.Body.Reset()
			answerAsleep(w, req, true, 60)
		}
		meter.Stop()
	})
	b.Run("encoding/json", func(b *testing.B) {
		meter := benchcpu.Start(b)
		for b.Loop() {
			w.Body.Reset()
			answer(w, req, http.StatusServiceUnavailable, CodeAsleep, profileAnswer{Error: tokenAsleep, Message: asleepMessage(true), Queued: true}, 60)
		}
		meter.Stop()
	})
}
