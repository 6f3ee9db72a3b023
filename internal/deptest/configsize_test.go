package deptest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// maxConfigFields is the most direct fields a struct type whose name ends
// in Config may have; past it, fields are grouped into sub-structs by
// concern (listeners, limits, stores, time, security).
const maxConfigFields = 12

// TestConfigSize fails for every struct type of the module, outside test
// files, whose name ends in Config and that has more than maxConfigFields
// direct fields.
func TestConfigSize(t *testing.T) {
	eachGoFile(t, false, func(rel string, src []byte) error {
		big, err := bigConfigs(rel, src, maxConfigFields)
		for _, c := range big {
			t.Errorf("%s; group its fields into sub-structs (at most %d)", c, maxConfigFields)
		}
		return err
	})
}

// TestBigConfigsCanFail shows the check counts names of one field list
// each and an embedded field as one, finds a Config over the limit (also
// one declared in a function), and ignores other names and non-structs.
func TestBigConfigsCanFail(t *testing.T) {
	src := `package p

type AtLimitConfig struct {
	A, B, C int
	D string
	Embedded
	*Other
}

type OverConfig struct {
	A, B, C int
	D string
	Embedded
	*Other
	E bool
}

type NotAConfigStruct struct{ A, B, C, D, E, F int }

type ListConfig []int

func f() {
	type innerConfig struct{ A, B, C, D, E, F, G int }
}
`
	big, err := bigConfigs("p.go", []byte(src), 6)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(big, "\n")
	want := "p.go:10:6: OverConfig has 7 direct fields\n" +
		"p.go:23:7: innerConfig has 7 direct fields"
	if got != want {
		t.Errorf("bigConfigs =\n%s\nwant\n%s", got, want)
	}
	if _, err := bigConfigs("bad.go", []byte("package"), 6); err == nil {
		t.Error("bigConfigs of a file that does not parse: no error")
	}
}

// bigConfigs parses the Go source src, named filename, and describes its
// struct types named *Config with more than max direct fields. A field
// list names each of its names as a field; an embedded field is one.
func bigConfigs(filename string, src []byte, max int) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var big []string
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || !strings.HasSuffix(ts.Name.Name, "Config") {
			return true
		}
		st, ok := ts.Type.(*ast.StructType)
		if !ok {
			return true
		}
		fields := 0
		for _, fl := range st.Fields.List {
			fields += max1(len(fl.Names))
		}
		if fields > max {
			big = append(big, fmt.Sprintf("%s: %s has %d direct fields", fset.Position(ts.Pos()), ts.Name.Name, fields))
		}
		return true
	})
	return big, nil
}

// max1 is n, or 1 for an embedded field (no names).
func max1(n int) int {
	if n == 0 {
		return 1
	}
	return n
}
