package procs

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// Line is one structured log line of a daemon, as log/slog's TextHandler
// writes it: time=… level=… msg=… key=value…
type Line struct {
	Time  time.Time // the real time the daemon logged it
	Level string
	Msg   string
	Attrs []Attr // in order; a key may repeat (component=relay component=link)
	Raw   string
}

// Attr is one key=value pair of a Line.
type Attr struct {
	Key, Value string
}

// Get returns the value of the last attribute named key ("" when absent):
// the innermost logger's attribute wins, as with slog's With.
func (l Line) Get(key string) string {
	for i := len(l.Attrs) - 1; i >= 0; i-- {
		if l.Attrs[i].Key == key {
			return l.Attrs[i].Value
		}
	}
	return ""
}

// First returns the value of the first attribute named key ("" when
// absent): the agent's wake line has a "drain" summary and, later, a
// "drain" phase duration.
func (l Line) First(key string) string {
	for _, a := range l.Attrs {
		if a.Key == key {
			return a.Value
		}
	}
	return ""
}

// Has reports whether the line has an attribute named key.
func (l Line) Has(key string) bool {
	for _, a := range l.Attrs {
		if a.Key == key {
			return true
		}
	}
	return false
}

// errNotSlog is returned by ParseLine for a line slog did not write.
var errNotSlog = errors.New("procs: not a slog text line")

// ParseLine parses a line written by slog.TextHandler. Values and keys that
// needed quoting are Go-quoted (strconv.Quote), the rest run to the next
// space. time, level and msg become fields; the other pairs stay in Attrs.
func ParseLine(s string) (Line, error) {
	l := Line{Raw: s}
	rest := strings.TrimRight(s, "\r\n")
	for rest != "" {
		var key, val string
		var err error
		if key, rest, err = token(rest, '='); err != nil {
			return Line{Raw: s}, err
		}
		if val, rest, err = token(rest, ' '); err != nil {
			return Line{Raw: s}, err
		}
		rest = strings.TrimLeft(rest, " ")
		switch key {
		case "time":
			if l.Time, err = time.Parse(time.RFC3339Nano, val); err != nil {
				return Line{Raw: s}, errNotSlog
			}
		case "level":
			l.Level = val
		case "msg":
			l.Msg = val
		default:
			l.Attrs = append(l.Attrs, Attr{key, val})
		}
	}
	if l.Time.IsZero() || l.Level == "" {
		return Line{Raw: s}, errNotSlog
	}
	return l, nil
}

// token reads a quoted or bare token ending at end (or the string's end)
// and returns it and what follows end.
func token(s string, end byte) (tok, rest string, err error) {
	if strings.HasPrefix(s, `"`) {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return "", "", errNotSlog
		}
		tok, _ = strconv.Unquote(q)
		rest = s[len(q):]
		if rest != "" && rest[0] != end {
			return "", "", errNotSlog
		}
		if rest != "" {
			rest = rest[1:]
		}
		return tok, rest, nil
	}
	i := strings.IndexByte(s, end)
	if end == '=' && (i < 0 || strings.IndexByte(s[:i], ' ') >= 0) {
		return "", "", errNotSlog
	}
	if i < 0 {
		return s, "", nil
	}
	return s[:i], s[i+1:], nil
}
