package zklock_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// engineFiles are the engine's: the queue, the decision step and the
// waiter (internals.go), the acquire alone (solo.go), the hold and what
// follows it (hold.go, holdwatch.go), and Curator's order (sort.go).
var engineFiles = []string{"internals.go", "solo.go", "hold.go", "holdwatch.go", "sort.go"}

// recipeNames are the recipes' types and the built-in drivers, which the
// engine must not name: it asks a Driver what it allows (ShortcutDriver)
// and an owner what its holds' key is (lockKeyer), never which one it was
// given.
var recipeNames = []string{
	"Mutex", "SemaphoreMutex", "Semaphore", "Lease", "ReadWriteLock", "MultiLock",
	"Election", "Selector", "Revoker",
	"StandardDriver", "readDriver", "rwDriver", "kazooDriver",
	"kazooLock", "kazooWrite", "kazooRead",
}

// The engine names no recipe and no built-in driver: an identifier of the
// package's in an engine file is never one of recipeNames. A qualified
// name (sync.Mutex) is another package's, and comments do not count.
func TestEngineNamesNoRecipe(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	for _, name := range engineFiles {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		for _, hit := range recipeIdents(f) {
			t.Errorf("%s names %s: the engine must ask a Driver or an owner through an interface, not name a recipe or driver",
				fset.Position(hit.Pos()), hit.Name)
		}
	}
}

// recipeIdents returns the unqualified identifiers of f that are among
// recipeNames: the selector of a qualified name (sync.Mutex, x.Mutex) is
// skipped, its package or value is checked as any identifier.
func recipeIdents(f *ast.File) []*ast.Ident {
	sels := map[*ast.Ident]bool{}
	var hits []*ast.Ident
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			sels[n.Sel] = true
		case *ast.Ident:
			if !sels[n] && slices.Contains(recipeNames, n.Name) {
				hits = append(hits, n)
			}
		}
		return true
	})
	return hits
}

// The scan finds what it looks for: a switch on drivers and a recipe's
// type, as the engine once wrote them, and not sync.Mutex.
func TestEngineNamesNoRecipe_Finds(t *testing.T) {
	t.Parallel()
	src := `package zklock
import "sync"
var mu sync.Mutex
func shortcuts(d Driver) bool {
	switch d.(type) {
	case StandardDriver, readDriver:
		return true
	}
	return false
}
func keyOf(owner any) any {
	if m, ok := owner.(*Mutex); ok {
		return m.key
	}
	return owner
}
`
	f, err := parser.ParseFile(token.NewFileSet(), "old.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, id := range recipeIdents(f) {
		got = append(got, id.Name)
	}
	if want := "StandardDriver readDriver Mutex"; strings.Join(got, " ") != want {
		t.Fatalf("found %q, want %q", got, want)
	}
}

// layerImports is, for each package of the module's layers from the
// bottom up, the module's packages its non-test files may import:
// a lower layer never imports a higher one (see CONTRIBUTING.md,
// Layers).
var layerImports = map[string][]string{
	"internal/zkwire":    nil,
	"internal/layout":    nil,
	"internal/zksession": {"internal/zkwire"},
	".":                  {"internal/zkwire", "internal/zksession", "internal/layout"},
	"internal/zktest":    nil,
	"zktest":             {"internal/zktest"},
	"cmd/zklock":         {".", "internal/layout", "zktest"},
}

// Each layer imports only the layers below it: the wire records nothing,
// the session the wire, the library those two and the layout rules, the
// tool the library's public API and the layout rules (never the session
// or the wire). Test files may reach further (a test kit, fakes).
func TestLayersImportOnlyBelow(t *testing.T) {
	t.Parallel()
	const module = "github.com/zklock/zklock"
	for dir, allowed := range layerImports {
		pkgs, err := parser.ParseDir(token.NewFileSet(), dir, func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.ImportsOnly)
		if err != nil {
			t.Fatalf("parse %s: %v", dir, err)
		}
		for _, pkg := range pkgs {
			for name, f := range pkg.Files {
				for _, imp := range f.Imports {
					p := strings.Trim(imp.Path.Value, `"`)
					if p != module && !strings.HasPrefix(p, module+"/") {
						continue
					}
					rel := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
					if rel == "" {
						rel = "."
					}
					if !slices.Contains(allowed, rel) {
						t.Errorf("%s imports %s: a layer may import only those below it (%v)", name, rel, allowed)
					}
				}
			}
		}
	}
}
