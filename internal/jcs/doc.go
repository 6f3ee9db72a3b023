// Package jcs transforms UTF-8 JSON text into its canonical form, the JSON
// Canonicalization Scheme of RFC 8785.
//
// It is a copy of github.com/gowebpki/jcs v1.0.2 (Apache License 2.0, see
// LICENSE in this directory; upstream https://github.com/gowebpki/jcs),
// changed in three ways:
//
//   - the number grammar of RFC 8259 Section 6 is checked by hand
//     (isJSONNumber) rather than with a regular expression, so that the
//     binaries using it do not link package regexp; that alone made the
//     armv6 torpor-agent 256 KiB larger (docs/footprint.md);
//   - its error messages start in lower case (Go style);
//   - parseQuotedString and parseObject are split into smaller functions
//     (parseEscape, parseUEscape, parseMember) for the module's function
//     length rule (internal/deptest).
//
// Its test checks the copy against the upstream module on the upstream
// test vectors (testdata) and on generated inputs, so the two cannot drift
// apart unnoticed. Use it through internal/canon.
package jcs
