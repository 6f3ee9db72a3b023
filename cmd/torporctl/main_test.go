package main

import (
	"context"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the testscript scripts in testdata/script run torporctl as a
// command in the same binary.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"torporctl": func() { os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script"})
}
