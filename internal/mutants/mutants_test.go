package mutants

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the library's directory, from this package's.
const root = "../.."

// TestTableApplies: every edit's text is in its file once, the library
// builds with all of them, and each variant is reachable by its name.
func TestTableApplies(t *testing.T) {
	overlay, err := Overlay(root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-overlay", overlay, ".")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -overlay: %v\n%s", err, out)
	}
	seen := map[string]bool{}
	for _, m := range All {
		if seen[m.Name] {
			t.Errorf("mutant %s: named twice", m.Name)
		}
		if m.Name == "" || m.Breaks == "" || len(m.Edits) == 0 {
			t.Errorf("mutant %q: a name, what it breaks and its edits are required", m.Name)
		}
		for _, e := range m.Edits {
			if !strings.Contains(e.To, `mutant("`+m.Name+`")`) {
				t.Errorf("mutant %s: an edit of %s does not call mutant(%q): it would be on in every run", m.Name, e.File, m.Name)
			}
		}
		seen[m.Name] = true
	}
}

// TestOverlayRefusesStaleText: an edit whose text the code no longer has
// fails, naming the variant and the file.
func TestOverlayRefusesStaleText(t *testing.T) {
	saved := All
	defer func() { All = saved }()
	All = []Mutant{{Name: "gone", Breaks: "nothing", Edits: []Edit{{File: "mutex.go", From: "no such text\n", To: `mutant("gone")`}}}}
	_, err := Overlay(root, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "mutant gone: its text is in mutex.go 0 times") {
		t.Fatalf("Overlay with a stale edit: %v", err)
	}
}

// TestNoSeamInTheLibrary: no source of the module but this package's
// names a broken variant: no mutant call, no ZKLOCK_MUTANT, no build tag
// for one (in any case). Tests may (the teeth tests run the variants).
func TestNoSeamInTheLibrary(t *testing.T) {
	seam := regexp.MustCompile(`(?i)\bmutant\(|zklock_mutant|mutantName`)
	self, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if abs, _ := filepath.Abs(p); abs == self || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if loc := seam.FindIndex(b); loc != nil {
			t.Errorf("%s names a broken variant (%q): variants live in internal/mutants", p, b[loc[0]:loc[1]])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
