// Package pkgdoc holds a test that every package of the module has a
// package comment, which says what the package is for and the decisions
// it makes (docs/architecture.md: "Each package's doc.go explains its own
// decisions").
package pkgdoc

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEveryPackageHasADocComment(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	dirs := map[string]bool{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && (name == "testdata" || name == "node_modules" || name == "bin" || (strings.HasPrefix(name, ".") && p != root)) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			dirs[filepath.Dir(p)] = true
		}
		return nil
	})
	if len(dirs) < 3 {
		t.Fatalf("found only %d package directories", len(dirs))
	}
	for dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		documented := map[string]bool{}
		for _, e := range entries {
			n := e.Name()
			if !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, n), nil, parser.ParseComments|parser.PackageClauseOnly)
			if err != nil {
				t.Errorf("%s: %v", n, err)
				continue
			}
			name := f.Name.Name
			documented[name] = documented[name] || (f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "")
		}
		for name, ok := range documented {
			if !ok {
				rel, _ := filepath.Rel(root, dir)
				t.Errorf("package %s in %s has no package comment", name, rel)
			}
		}
	}
}
