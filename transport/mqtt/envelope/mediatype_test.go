package envelope

import (
	"mime"
	"testing"
)

// mediaTypeCases are content types a broker or a client may carry: the
// two the agent reads, with parameters well and badly formed, quoted
// strings with escapes, RFC 2231 names, and what is not a media type.
var mediaTypeCases = []string{
	"", "application/json", "application/cbor", "APPLICATION/JSON", " application/json ",
	"application/json; charset=utf-8", "application/json;charset=utf-8", "application/json ; charset = utf-8",
	"application/json;", "application/json; ", "application/json;;", "application/json; ;",
	"application/json; charset", "application/json; charset=", "application/json; =utf-8",
	`application/json; charset="utf-8"`, `application/json; charset=""`, `application/json; charset="utf-8`,
	`application/json; a="x\"y"`, `application/json; a="C:\dev\x"`, "application/json; a=\"x\ry\"",
	"application/json; a=1; a=1", "application/json; a=1; a=2", "application/json; A=1; a=2",
	"application/json; a*=utf-8''%41", "application/json; a*0=x; a*1=y", "application/json; a*=x; a*=y",
	"application/json; a=1 b=2", "application/json; a=1, b=2", "application/json; a=@",
	"application", "application/", "/json", "application/json/x", "application/json x", "application /json",
	"text/plain", "application/cbor+x", "application/jsön", "application/json\x00", "\u00a0application/json",
	"application/json;\u00a0a=1", "application/json; a=\u00e9",
}

// classify is what IsCBOR makes of a content type, from mediaType's or
// mime.ParseMediaType's answer.
func classify(mt string, err error) string {
	switch {
	case err != nil:
		return "refused"
	case mt == ContentTypeJSON:
		return "json"
	case mt == ContentTypeCBOR:
		return "cbor"
	}
	return "refused"
}

// TestMediaTypeDifferential: for every case, mediaType and the standard
// library's mime.ParseMediaType, which it replaces in the agent, accept
// and refuse alike and agree on the media type.
func TestMediaTypeDifferential(t *testing.T) {
	for _, ct := range mediaTypeCases {
		checkDifferential(t, ct)
	}
}

func checkDifferential(t *testing.T, ct string) {
	t.Helper()
	got, gotErr := mediaType(ct)
	want, _, wantErr := mime.ParseMediaType(ct)
	if (gotErr == nil) != (wantErr == nil) || gotErr == nil && got != want {
		t.Errorf("%q: mediaType = %q, %v; mime.ParseMediaType = %q, %v", ct, got, gotErr, want, wantErr)
	}
	if g, w := classify(got, gotErr), classify(want, wantErr); g != w {
		t.Errorf("%q: read as %s, mime reads it as %s", ct, g, w)
	}
}

// FuzzMediaTypeDifferential holds mediaType to mime.ParseMediaType on
// any input.
func FuzzMediaTypeDifferential(f *testing.F) {
	for _, ct := range mediaTypeCases {
		f.Add(ct)
	}
	f.Fuzz(checkDifferential)
}
