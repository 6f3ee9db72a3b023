// Package pkgdoc holds a test that every package of the module has a
// package comment; it has no code of its own.
package pkgdoc
