package deptest

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestFunctionLength fails for every function or function literal of the
// module, tests and integration tests included, longer than MaxFuncLines.
func TestFunctionLength(t *testing.T) {
	eachGoFile(t, true, func(rel string, src []byte) error {
		long, err := LongFuncs(rel, src, MaxFuncLines)
		for _, f := range long {
			t.Errorf("%v; split it (at most %d)", f, MaxFuncLines)
		}
		return err
	})
}

// eachGoFile calls check with the path (from the module's root) and the
// contents of every Go file of the module, test files too if tests, and
// fails the test on check's first error or if it read too few files to
// be reading the module.
func eachGoFile(t *testing.T, tests bool, check func(rel string, src []byte) error) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != root) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || !tests && strings.HasSuffix(path, "_test.go") {
			return nil
		}
		n++
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		return check(rel, src)
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("read %d Go files under %s; the walk is not reading the module", n, root)
	}
}

// TestLongFuncsCanFail shows the check finds a long function and a long
// function literal (and so the function around it), and passes one at the
// limit.
func TestLongFuncsCanFail(t *testing.T) {
	body := func(n int) string { return strings.Repeat("\t_ = 0\n", n) }
	src := "package p\n\n" +
		"func atLimit() {\n" + body(MaxFuncLines-2) + "}\n\n" +
		"func overLimit() {\n" + body(MaxFuncLines-1) + "}\n\n" +
		"func outer() {\n\t_ = func() {\n" + body(MaxFuncLines) + "\t}\n}\n"
	long, err := LongFuncs("p.go", []byte(src), MaxFuncLines)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range long {
		got = append(got, f.String())
	}
	want := []string{
		"p.go:" + itoa(MaxFuncLines+4) + ":1: overLimit is " + itoa(MaxFuncLines+1) + " lines",
		"p.go:" + itoa(2*MaxFuncLines+6) + ":1: outer is " + itoa(MaxFuncLines+4) + " lines",
		"p.go:" + itoa(2*MaxFuncLines+7) + ":6: func literal is " + itoa(MaxFuncLines+2) + " lines",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("LongFuncs =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := LongFuncs("bad.go", []byte("package"), MaxFuncLines); err == nil {
		t.Error("LongFuncs of a file that does not parse: no error")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
