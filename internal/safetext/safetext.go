// Package safetext keeps text a device publishes (its name, its board, its
// build) from reordering or hiding what an operator reads: it refuses, where
// such text enters, and neutralises, where it is shown, the characters
// that change how the text around them looks without being seen
// themselves.
//
// Refused are the Unicode general categories Cc (controls: C0, DEL, C1)
// and Cf (format characters), which include the bidirectional embeddings
// and overrides U+202A–U+202E, the isolates U+2066–U+2069, the marks
// U+200E and U+200F, the zero-width U+200B–U+200D and U+FEFF (Unicode
// Standard Annex #9, https://www.unicode.org/reports/tr9/, and the
// categories of https://www.unicode.org/reports/tr44/#General_Category_Values),
// the line and paragraph separators Zl and Zp, and bytes that are not
// UTF-8. The categories are package unicode's tables.
package safetext

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Hidden reports whether r is refused: Cc, Cf, Zl, Zp, or U+FFFD standing
// for a byte that is not UTF-8.
func Hidden(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// Check returns an error naming the first refused character of s (what
// says which text it is: "name"), or nil.
func Check(what, s string) error {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return fmt.Errorf("%s: byte %d is not UTF-8", what, i)
			}
		}
		if Hidden(r) {
			return fmt.Errorf("%s: character %U at byte %d is a control or invisible formatting character (Unicode category %s)", what, r, i, category(r))
		}
	}
	return nil
}

// Show returns s with each refused character replaced by its code point
// in visible ASCII ("<U+202E>") and each byte that is not UTF-8 by U+FFFD,
// so that it can be shown in a page or a terminal table as it is.
func Show(s string) string {
	if Check("", s) == nil {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !validAt(s, i):
			b.WriteRune(utf8.RuneError)
		case Hidden(r):
			fmt.Fprintf(&b, "<%U>", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Clip returns Show(s) cut to at most n bytes, at a character boundary:
// for a sentence of bounded length that a page, a log or a signed status
// will show.
func Clip(s string, n int) string {
	s = Show(s)
	if len(s) <= n {
		return s
	}
	s = s[:max(n, 0)]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// ShowLines is Show for text of several lines: it keeps newlines and
// tabs, and neutralises every other refused character.
func ShowLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		cells := strings.Split(strings.TrimSuffix(l, "\r"), "\t")
		for j, c := range cells {
			cells[j] = Show(c)
		}
		lines[i] = strings.Join(cells, "\t")
	}
	return strings.Join(lines, "\n")
}

// Writer returns a writer that writes to w what it is given through
// ShowLines: for a terminal that shows what a relay or a device sent.
// Each Write must hold whole characters (fmt's functions write each call
// at once).
func Writer(w io.Writer) io.Writer { return shownWriter{w} }

type shownWriter struct{ w io.Writer }

func (s shownWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(s.w, ShowLines(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

func validAt(s string, i int) bool {
	_, n := utf8.DecodeRuneInString(s[i:])
	return n > 1
}

func category(r rune) string {
	for _, c := range []string{"Cc", "Cf", "Zl", "Zp"} {
		if unicode.Is(unicode.Categories[c], r) {
			return c
		}
	}
	return "?"
}
