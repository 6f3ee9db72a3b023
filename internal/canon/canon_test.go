package canon

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTransform(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		// RFC 8785 Section 3.2.3: member names sorted by UTF-16 code units.
		// U+1F600 (surrogates D83D DE00) sorts before U+FB33, although its
		// UTF-8 and code point order is after: the case where sorting by
		// Go strings (UTF-8 bytes) goes wrong.
		{"UTF-16 order, RFC 8785 §3.2.3",
			`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`,
			"{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		{"supplementary plane before U+E000", `{"\ue000":1,"\ud800\udc00":2,"\uffff":3}`, "{\"𐀀\":2,\"\ue000\":1,\"\uffff\":3}"},
		{"non-ASCII keys raw and escaped", `{"zebra":1,"ärger":2,"\u00e4rger2":3,"Zebra":4}`, `{"Zebra":4,"zebra":1,"ärger":2,"ärger2":3}`},
		{"nested objects sorted, arrays kept", `{"b":[3,1,{"y":1,"x":2}],"a":{"d":1,"c":2}}`, `{"a":{"c":2,"d":1},"b":[3,1,{"x":2,"y":1}]}`},
		{"null kept", `{"b":null,"a":[null]}`, `{"a":[null],"b":null}`},
		{"literals", `[true, false, null]`, `[true,false,null]`},
		{"white space removed", " {\n\t\"a\" : 1 ,\r\n \"b\":[ ] } ", `{"a":1,"b":[]}`},
		// RFC 8785 Section 3.2.2.3 and Appendix B number forms.
		{"RFC 8785 §3.2.2.3 numbers", `{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001]}`, `{"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27]}`},
		{"integers", `[0,-0,1,-1,100,9007199254740991,9007199254740992,1.0,1e2]`, `[0,0,1,-1,100,9007199254740991,9007199254740992,1,100]`},
		{"exponent thresholds", `[1e20,1e21,1e-6,1e-7,123e-9,0.5]`, `[100000000000000000000,1e+21,0.000001,1e-7,1.23e-7,0.5]`},
		{"float precision", `[0.1,0.30000000000000004,5e-324,1.7976931348623157e308]`, `[0.1,0.30000000000000004,5e-324,1.7976931348623157e+308]`},
		// RFC 8785 Section 3.2.2.2 string escaping.
		{"strings", `"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/"`, `"€$\u000f\nA'B\"\\\\\"/"`},
		{"no HTML or U+2028 escaping", `"<&>\u2028\u2029"`, "\"<&>\u2028\u2029\""},
		{"control characters", `"\u0000\u0008\u0009\u001f\u007f"`, "\"\\u0000\\b\\t\\u001f\u007f\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Transform([]byte(tt.in))
			if err != nil {
				t.Fatalf("Transform(%s) = %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("Transform(%s) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestTransformRejects(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
	}{
		{"duplicate key", []byte(`{"a":1,"a":2}`)},
		{"duplicate key by escape", []byte(`{"a":1,"\u0061":2}`)},
		{"nested duplicate key", []byte(`{"x":{"a":1,"b":2,"a":1}}`)},
		{"lone high surrogate", []byte(`{"a":"\ud800"}`)},
		{"lone low surrogate", []byte(`{"a":"\udc00"}`)},
		{"high surrogate then letter", []byte(`{"a":"\ud800x"}`)},
		{"two high surrogates", []byte(`{"a":"\ud800\ud800"}`)},
		{"lone surrogate key", []byte(`{"\udead":1}`)},
		{"invalid UTF-8 byte", []byte("{\"a\":\"\xff\"}")},
		{"truncated UTF-8", []byte("{\"a\":\"\xc3\"}")},
		{"UTF-8 encoded surrogate", []byte("{\"a\":\"\xed\xa0\x80\"}")},
		{"overlong UTF-8", []byte("{\"a\":\"\xc0\xaf\"}")},
		{"number out of range", []byte(`[1e400]`)},
		{"leading zero", []byte(`[01]`)},
		{"NaN", []byte(`[NaN]`)},
		{"trailing comma", []byte(`[1,]`)},
		{"trailing data", []byte(`{} {}`)},
		{"empty", []byte(``)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := Transform(tt.in); err == nil {
				t.Errorf("Transform(%q) = %s, want error", tt.in, got)
			}
		})
	}
}

func TestMarshal(t *testing.T) {
	got, err := Marshal(map[string]any{"b": "<&>", "a": 1.5, "\U0001F600": nil, "\uE000": []int{}})
	if err != nil {
		t.Fatal(err)
	}
	want := "{\"a\":1.5,\"b\":\"<&>\",\"😀\":null,\"\ue000\":[]}"
	if string(got) != want {
		t.Errorf("Marshal = %s, want %s", got, want)
	}
}

func TestMembers(t *testing.T) {
	ms, err := Members([]byte(` {"b": [1, 2], "a":{"x" : 1}} `))
	if err != nil {
		t.Fatal(err)
	}
	want := []Member{{"b", json.RawMessage(`[1, 2]`)}, {"a", json.RawMessage(`{"x" : 1}`)}}
	if diff := cmp.Diff(want, ms); diff != "" {
		t.Errorf("Members (-want +got):\n%s", diff)
	}
	for _, bad := range []string{`[]`, `"x"`, `{"a":1,"a":1}`, `{"a":1} x`, `{"a":1}{}`, `{"a":}`, ``} {
		if _, err := Members([]byte(bad)); err == nil {
			t.Errorf("Members(%s) succeeded", bad)
		}
	}
}

// TestObject: Object accepts what Members accepts, and refuses the rest.
func TestObject(t *testing.T) {
	for _, in := range []string{`{}`, ` {"a":1,"b":{"c":[1,2]}} `, `{"a":1,"a":2}`, `{"a":{"b":1,"b":2}}`, `[]`, `1`, `"x"`, `{`, ``, "{\"a\":\"\xff\"}"} {
		_, merr := Members([]byte(in))
		if err := Object([]byte(in)); (err == nil) != (merr == nil) {
			t.Errorf("Object(%q) = %v, Members gives %v", in, err, merr)
		}
	}
}

// TestMemberView: MemberView gives what MemberMap gives.
func TestMemberView(t *testing.T) {
	for _, in := range []string{`{}`, ` {"a":1,"b":{"c":[1,2]},"\u00e9":"x"} `, `{"a":1,"a":2}`, `[]`, `{`} {
		want, werr := MemberMap([]byte(in))
		got, err := MemberView([]byte(in))
		if (err == nil) != (werr == nil) || !cmp.Equal(got, want) {
			t.Errorf("MemberView(%q) = %q, %v; MemberMap gives %q, %v", in, got, err, want, werr)
		}
	}
}
