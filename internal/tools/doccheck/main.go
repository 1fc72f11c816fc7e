// Command doccheck lists the exported identifiers of a Go package that have
// no doc comment, and exits with status 1 if there are any:
//
//	go run ./internal/tools/doccheck [dir]
//
// A function, method (of an exported type), type, constant or variable
// counts as documented if it has a doc comment, or, in a parenthesised
// const, var or type group, a line comment or a doc comment on the group.
// Test files are skipped.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"sort"
	"strings"
)

func main() {
	dir := "."
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	missing, err := check(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "doccheck:", err)
		os.Exit(2)
	}
	for _, m := range missing {
		fmt.Println(m)
	}
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "doccheck: %d exported identifiers without a doc comment\n", len(missing))
		os.Exit(1)
	}
}

// check returns "file:line: name" for every undocumented exported
// identifier of the package in dir.
func check(dir string) ([]string, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var missing []string
	report := func(pos token.Pos, name string) {
		missing = append(missing, fmt.Sprintf("%s: %s", fset.Position(pos), name))
	}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, d := range f.Decls {
				checkDecl(d, report)
			}
		}
	}
	sort.Strings(missing)
	return missing, nil
}

// checkDecl reports the undocumented exported names that d declares.
func checkDecl(d ast.Decl, report func(token.Pos, string)) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		name := d.Name.Name
		if d.Recv != nil {
			recv := receiverType(d.Recv.List[0].Type)
			if !ast.IsExported(recv) {
				return
			}
			name = recv + "." + name
		}
		if d.Name.IsExported() && d.Doc == nil {
			report(d.Pos(), name)
		}
	case *ast.GenDecl:
		for _, spec := range d.Specs {
			documented := d.Doc != nil && (d.Lparen.IsValid() || len(d.Specs) == 1)
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() && !documented && s.Doc == nil && s.Comment == nil {
					report(s.Pos(), s.Name.Name)
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() && !documented && s.Doc == nil && s.Comment == nil {
						report(n.Pos(), n.Name)
					}
				}
			}
		}
	}
}

// receiverType returns the name of a method's receiver type.
func receiverType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return receiverType(t.X)
	case *ast.IndexExpr:
		return receiverType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return ""
}
