package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/torpor-dev/torpor/internal/jsonpos"

	"github.com/torpor-dev/torpor/mls/vectors"
)

func init() {
	register(&subcommand{
		name:  "mls-vectors",
		args:  "FILE...",
		short: "Run MLS working-group test vector files (RFC 9420) and report each case.",
		run:   runMLSVectors,
	})
}

// runMLSVectors runs each file through mls/vectors, printing one line per
// case and a last line "N passed, M failed, K skipped". It exits 1 if any
// case failed or any file could not be run or held no case, so a run with
// nothing checked never exits 0. The kind of each case is told from its
// fields, so file names do not matter.
func runMLSVectors(ctx context.Context, e *env, fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return errUsage
	}
	var sum vectors.Summary
	bad := false
	for _, f := range fs.Args() {
		if err := ctx.Err(); err != nil {
			return err
		}
		results, err := runMLSVectorFile(f)
		if err != nil {
			fmt.Fprintf(e.stderr, "torporctl mls-vectors: %v\n", err)
			bad = true
			continue
		}
		for _, r := range results {
			fmt.Fprintln(e.stdout, r)
		}
		sum.Add(results)
	}
	fmt.Fprintln(e.stdout, sum)
	if bad || sum.Failed > 0 {
		return exitError{code: 1}
	}
	return nil
}

// mlsVectorShape says what an MLS test-vector file holds, for errors.
const mlsVectorShape = "a JSON array of test-case objects (mlswg/mls-implementations test-vectors/*.json)"

// runMLSVectorFile runs one file, after checking that it has the shape of
// a vector file, so that a wrong file gets an error naming it and saying
// what was expected rather than a bare encoding/json one.
func runMLSVectorFile(path string) ([]vectors.Result, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err // a *fs.PathError, which names path
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory; mls-vectors takes vector files (%s/*.json)", path, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if err := checkMLSVectorFile(data); err != nil {
		return nil, fmt.Errorf("%s: %v; want an MLS test-vector file, %s", path, err, mlsVectorShape)
	}
	return vectors.RunData(filepath.Base(path), data)
}

// checkMLSVectorFile says how data is not a non-empty JSON array of
// objects.
func checkMLSVectorFile(data []byte) error {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("not valid JSON (%s)", jsonpos.Describe(data, err))
	}
	cases, ok := v.([]any)
	switch {
	case !ok:
		return fmt.Errorf("the file holds a JSON %s, not an array", jsonKind(v))
	case len(cases) == 0:
		return errors.New("the array holds no test cases")
	}
	for i, c := range cases {
		if _, ok := c.(map[string]any); !ok {
			return fmt.Errorf("element %d is a JSON %s, not an object", i, jsonKind(c))
		}
	}
	return nil
}

// jsonKind names the JSON type of a value decoded into an any.
func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}
