package deptest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
)

// MaxFuncLines is the most lines a function may span, from its func
// keyword to its closing brace; function literals count on their own.
// Longer functions are split (a table of cases becomes a package-level
// variable, a phase of a test its own helper).
const MaxFuncLines = 60

// LongFunc is a function or function literal longer than the limit.
type LongFunc struct {
	Pos   token.Position
	Name  string // "func literal" for one without a name
	Lines int
}

func (f LongFunc) String() string {
	return fmt.Sprintf("%s: %s is %d lines", f.Pos, f.Name, f.Lines)
}

// LongFuncs parses the Go source src, named filename, and returns its
// functions and function literals that span more than max lines. Build
// constraints do not matter: every file is read.
func LongFuncs(filename string, src []byte, max int) ([]LongFunc, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var long []LongFunc
	ast.Inspect(f, func(n ast.Node) bool {
		var body *ast.BlockStmt
		name := "func literal"
		switch fn := n.(type) {
		case *ast.FuncDecl:
			body, name = fn.Body, fn.Name.Name
		case *ast.FuncLit:
			body = fn.Body
		}
		if body == nil {
			return true
		}
		start := fset.Position(n.Pos())
		if lines := fset.Position(body.Rbrace).Line - start.Line + 1; lines > max {
			long = append(long, LongFunc{Pos: start, Name: name, Lines: lines})
		}
		return true
	})
	return long, nil
}
