package zklock_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// clientParts are the Client's parts (see the Client type) and the files
// that may write their fields: the part's own, and for a few fields the
// file that owns what they count, as each part's doc says.
var clientParts = map[string][]string{
	"transport":      {"transport.go", "client.go", "connect.go"}, // once, before the Client is returned
	"lifecycle":      {"lifecycle.go"},
	"sessionState":   {"session.go"},
	"holdTable":      {"holdtable.go", "hold.go", "holdwatch.go"},
	"opsMemory":      {"zkops.go"},
	"drainState":     {"shutdown.go"},
	"backgroundWork": {"background.go", "zkops.go"},
}

// A field of a Client part is written only in the files its part allows:
// an assignment (to it or to an element of it), an increment, an atomic
// write (Store, Add, Swap, CompareAndSwap), delete or close on it, or its
// address taken, of c.field or x.c.field, where c is a Client; and a
// part's methods are declared in its files. The check goes by names, not
// types: by the package's convention a Client is c. A reader finds where
// a field is written from its part's doc, without searching.
func TestClientPartsWrittenInTheirFiles(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files[n] = f
		}
	}
	owner := partFields(files)
	for part := range clientParts {
		if !slices.Contains(slices.Collect(maps.Values(owner)), part) {
			t.Errorf("part %s: no struct type of that name", part)
		}
	}
	for name, f := range files {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil {
				if part := recvName(fd.Recv.List[0].Type); clientParts[part] != nil && !slices.Contains(clientParts[part], name) {
					t.Errorf("%s: a method of %s outside its part's files %v", fset.Position(fd.Pos()), part, clientParts[part])
				}
			}
		}
		for _, w := range clientWrites(f) {
			part, ok := owner[w.Sel.Name]
			if ok && !slices.Contains(clientParts[part], name) {
				t.Errorf("%s: %s's field %s is written outside its part's files %v", fset.Position(w.Pos()), part, w.Sel.Name, clientParts[part])
			}
		}
	}
}

// partFields maps each field of the Client's parts to its part.
func partFields(files map[string]*ast.File) map[string]string {
	owner := map[string]string{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || clientParts[ts.Name.Name] == nil {
				return true
			}
			for _, fl := range ts.Type.(*ast.StructType).Fields.List {
				for _, id := range fl.Names {
					owner[id.Name] = ts.Name.Name
				}
			}
			return false
		})
	}
	return owner
}

// clientWrites returns the selectors c.field and x.c.field that f writes,
// itself or through one of its own fields (c.field.sub).
func clientWrites(f *ast.File) []*ast.SelectorExpr {
	var out []*ast.SelectorExpr
	add := func(e ast.Expr) {
		for ix, ok := e.(*ast.IndexExpr); ok; ix, ok = e.(*ast.IndexExpr) {
			e = ix.X // c.field[k] = v writes c.field
		}
		for s, ok := e.(*ast.SelectorExpr); ok; s, ok = s.X.(*ast.SelectorExpr) {
			if isClient(s.X) { // c.field, or c.field.sub...
				out = append(out, s)
				return
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				add(l)
			}
		case *ast.IncDecStmt:
			add(n.X)
		case *ast.UnaryExpr:
			if n.Op == token.AND {
				add(n.X)
			}
		case *ast.CallExpr:
			if s, ok := n.Fun.(*ast.SelectorExpr); ok && slices.Contains([]string{"Store", "Add", "Swap", "CompareAndSwap"}, s.Sel.Name) {
				add(s.X)
			}
			if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "delete" || id.Name == "close") && len(n.Args) > 0 {
				add(n.Args[0])
			}
		}
		return true
	})
	return out
}

// recvName is the type name of a method's receiver, T or *T.
func recvName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// isClient reports whether e is c or x.c.
func isClient(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name == "c"
	case *ast.SelectorExpr:
		return e.Sel.Name == "c"
	}
	return false
}
