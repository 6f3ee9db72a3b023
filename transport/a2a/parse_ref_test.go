package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/torpor-dev/torpor/internal/strictjson"
)

// parseRequestByMap is ParseRequest as it was before the strict walk split
// the top-level object: json.Unmarshal into a map, after strictjson.Check
// (whose refusals come first, in the order of the text). ParseRequest must
// answer as it does for every input.
func parseRequestByMap(b []byte) (*Request, error) {
	invalid := func(why string) error {
		return &RPCError{Code: CodeInvalidRequest, Message: "Invalid Request: " + why}
	}
	var e *strictjson.Error
	switch err := strictjson.Check(b); {
	case errors.As(err, &e) && e.Err == strictjson.ErrDuplicate:
		return nil, invalid(fmt.Sprintf("duplicate member %q", truncate(e.Name)))
	case errors.As(err, &e) && e.Err != strictjson.ErrSyntax:
		return nil, invalid(e.Err.Error())
	}
	var m map[string]json.RawMessage
	var syntax *json.SyntaxError
	switch err := json.Unmarshal(b, &m); {
	case errors.As(err, &syntax):
		return nil, &RPCError{Code: CodeParseError, Message: "Parse error"}
	case err != nil || m == nil:
		return nil, invalid("not a JSON object")
	}
	var r Request
	if err := json.Unmarshal(m["jsonrpc"], &r.JSONRPC); err != nil || r.JSONRPC != "2.0" {
		return nil, invalid(`jsonrpc must be "2.0"`)
	}
	if err := json.Unmarshal(m["method"], &r.Method); err != nil || r.Method == "" {
		return nil, invalid("method must be a non-empty string")
	}
	if id, ok := m["id"]; ok {
		if !validID(id) {
			return nil, invalid("id must be a string, a number within range or null")
		}
		r.ID = id
	}
	if p, ok := m["params"]; ok {
		if c := firstByte(p); c != '{' && c != '[' {
			return nil, invalid("params must be an object or an array")
		}
		r.Params = p
	}
	return &r, nil
}

var parseRequestCorpus = []string{
	``, ` `, `null`, `[]`, `[{"jsonrpc":"2.0","method":"m"}]`, `"s"`, `1`, `{`, `{}`, ` {} `,
	`{"jsonrpc":"2.0","method":"m"}`,
	" \t\r\n{ \"jsonrpc\" : \"2.0\" ,\n\"method\"\t:\"m\" , \"id\" : 7 , \"params\" : { \"a\" : [ 1 , {\"b\":\":,}\"} ] } } \n",
	`{"jsonrpc":"2.0","method":"m","id":null}`, `{"jsonrpc":"2.0","method":"m","id":"x\"y"}`,
	`{"jsonrpc":"2.0","method":"m","id":1e400}`, `{"jsonrpc":"2.0","method":"m","id":-0.5e-3}`,
	`{"jsonrpc":"2.0","method":"m","id":{}}`, `{"jsonrpc":"2.0","method":"m","id":[1]}`, `{"jsonrpc":"2.0","method":"m","id":true}`,
	`{"jsonrpc":"2.0","method":"m","params":[]}`, `{"jsonrpc":"2.0","method":"m","params":"p"}`, `{"jsonrpc":"2.0","method":"m","params":null}`,
	`{"\u006asonrpc":"2.0","m\u0065thod":"m\u00e9","p\u0061rams":{"x":"\u0000"}}`,
	`{"jsonrpc":"2.0","method":"m","method":"n"}`, `{"jsonrpc":"2.0","method":"m","\u006dethod":"n"}`,
	`{"jsonrpc":"2.0","method":"m","params":{"a":1,"a":2}}`, `{"jsonrpc":"2.0","method":"m","params":{"a":{"b":1},"c":{"b":1}}}`,
	`{"jsonrpc":2.0,"method":"m"}`, `{"jsonrpc":"2.0","method":""}`, `{"jsonrpc":"2.0","method":7}`, `{"jsonrpc":"2.0","method":null}`,
	`{"jsonrpc":"2.0","method":"m\ud800"}`, "{\"jsonrpc\":\"2.0\",\"method\":\"m\xff\"}", "{\"jsonrpc\":\"2.0\",\"method\xff\":\"m\"}",
	`{"jsonrpc":"2.0","method":"m","id":1e309}`, `[1e400]`, `{"jsonrpc":"2.0","method":"m","params":{"x":"\udc00"}}`,
	`{"jsonrpc":"2.0","method":"m","params":` + strings.Repeat("[", 70) + strings.Repeat("]", 69) + `}`,
	`{"jsonrpc":"2.0","method":"m"}x`, `{"jsonrpc":"2.0","method":"m",}`, `{"jsonrpc":"2.0" "method":"m"}`,
	`{"a":[{"b":[{"c":{}}]}],"jsonrpc":"2.0","method":"m","z":"}"}`,
	`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18,"k19":19,"jsonrpc":"2.0","method":"m","params":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18,"k19":19,"o":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18,"k19":19,"x":1},"k19":0}}`,
	`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18,"k19":19,"jsonrpc":"2.0","method":"m","params":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18,"k19":19,"o":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18,"k19":19,"x":1},"k1\u0039":0}}`,
	`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18,"k19":19,"jsonrpc":"2.0","method":"m","params":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18,"k19":19,"o":{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18,"k19":19,"k3":1}}}`,
}

// TestParseRequestAsByMap: ParseRequest, which reads the top-level members
// in the strict walk, answers as the map-based reading does.
func TestParseRequestAsByMap(t *testing.T) {
	for _, in := range parseRequestCorpus {
		checkParseAsByMap(t, []byte(in))
	}
}

func FuzzParseRequestAsByMap(f *testing.F) {
	for _, in := range parseRequestCorpus {
		f.Add([]byte(in))
	}
	f.Fuzz(checkParseAsByMap)
}

func checkParseAsByMap(t *testing.T, in []byte) {
	got, gerr := ParseRequest(in)
	want, werr := parseRequestByMap(in)
	if !reflect.DeepEqual(gerr, werr) || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseRequest(%q) = %+v, %v\nby map: %+v, %v", in, got, gerr, want, werr)
	}
}

// TestDuplicatePastSixteen: a member name twice in an object of more
// than 16 members (strictjson's set), at the top or nested, escaped or
// not, is refused, and one object's names do not count for another's.
func TestDuplicatePastSixteen(t *testing.T) {
	many := ""
	for i := range 20 {
		many += fmt.Sprintf(`"k%d":%d,`, i, i)
	}
	for _, tt := range []struct {
		in  string
		dup bool
	}{
		{`{` + many + `"jsonrpc":"2.0","method":"m","params":{` + many + `"o":{` + many + `"x":1}}}`, false},
		{`{` + many + `"jsonrpc":"2.0","method":"m","params":{` + many + `"o":{` + many + `"x":1},"k19":0}}`, true},
		{`{` + many + `"jsonrpc":"2.0","method":"m","params":{` + many + `"o":{` + many + `"x":1},"k1\u0039":0}}`, true},
		{`{` + many + `"jsonrpc":"2.0","method":"m","params":{` + many + `"o":{` + many + `"k3":1}}}`, true},
		{`{` + many + `"jsonrpc":"2.0","method":"m","k0":1}`, true},
	} {
		_, err := ParseRequest([]byte(tt.in))
		if got := err != nil && strings.Contains(err.(*RPCError).Message, "duplicate member"); got != tt.dup {
			t.Errorf("%.80s…: %v, want a duplicate: %v", tt.in, err, tt.dup)
		}
	}
}
