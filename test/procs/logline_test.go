package procs

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseLine(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		msg   string
		level string
		attrs []Attr
	}{
		{"bare", `time=2026-12-02T15:23:01.666Z level=INFO msg=wake component=agent reason=boot`,
			"wake", "INFO", []Attr{{"component", "agent"}, {"reason", "boot"}}},
		{"quoted", `time=2026-12-02T15:23:01.666Z level=WARN msg="record rejected or deferred" seq=4 cause=expired detail="governed: expired at 15:00 \"x\""`,
			"record rejected or deferred", "WARN", []Attr{{"seq", "4"}, {"cause", "expired"}, {"detail", `governed: expired at 15:00 "x"`}}},
		{"repeated key", `time=2026-12-02T15:23:02.236Z level=INFO msg="link up" component=relay component=link agent=did:key:z6Mk`,
			"link up", "INFO", []Attr{{"component", "relay"}, {"component", "link"}, {"agent", "did:key:z6Mk"}}},
		{"empty value", `time=2026-12-02T15:23:02.236Z level=INFO msg=x a= b=1`,
			"x", "INFO", []Attr{{"a", ""}, {"b", "1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ParseLine(tt.in)
			if err != nil {
				t.Fatalf("ParseLine(%q) = %v", tt.in, err)
			}
			if l.Msg != tt.msg || l.Level != tt.level {
				t.Errorf("ParseLine(%q) = msg %q level %q, want %q %q", tt.in, l.Msg, l.Level, tt.msg, tt.level)
			}
			if diff := cmp.Diff(tt.attrs, l.Attrs); diff != "" {
				t.Errorf("ParseLine(%q) attrs (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseLineRejects(t *testing.T) {
	for _, in := range []string{
		"",
		"hello world",
		"panic: runtime error",
		`time=yesterday level=INFO msg=x`,
		`time=2026-12-02T15:23:01.666Z level=INFO msg="unterminated`,
	} {
		if _, err := ParseLine(in); err == nil {
			t.Errorf("ParseLine(%q) = nil error, want one", in)
		}
	}
}

// TestParseLineRoundTrip parses what slog itself writes, with awkward
// values, so a change in slog's quoting shows up here first.
func TestParseLineRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil)).With("component", "relay")
	vals := []any{"a b", `q"uote`, "=", "", "new\nline", 42, 1500 * time.Millisecond, "did:key:z6Mk"}
	for i, v := range vals {
		log.Info("m "+strings.Repeat("x", i), "k", v)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(vals) {
		t.Fatalf("slog wrote %d lines, want %d", len(lines), len(vals))
	}
	for i, s := range lines {
		l, err := ParseLine(s)
		if err != nil {
			t.Fatalf("ParseLine(%q) = %v", s, err)
		}
		want := slog.AnyValue(vals[i]).String()
		if got := l.Get("k"); got != want || l.Get("component") != "relay" {
			t.Errorf("ParseLine(%q): k = %q, component = %q; want %q, relay", s, got, l.Get("component"), want)
		}
	}
}
