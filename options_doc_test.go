package zklock_test

import (
	"context"
	"errors"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
)

// packageDocs returns the doc comment of every exported function of the
// package in this directory, by name.
func packageDocs(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	require.NoError(t, err)
	files := make([]*ast.File, 0)
	for _, f := range pkgs["zklock"].Files {
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/zklock/zklock")
	require.NoError(t, err)
	docs := make(map[string]string)
	for _, f := range p.Funcs {
		docs[f.Name] = f.Doc
	}
	for _, ty := range p.Types {
		for _, f := range ty.Funcs {
			docs[f.Name] = f.Doc
		}
	}
	return docs
}

// The doc of each recipe's constructor names every lock option, taken or
// refused, as the constructor does (or says it takes the options of
// another constructor that does, and takes the same): a new option, such
// as WithMaxHold, must reach every constructor's doc. NewElection said it
// "takes no options today" while it took WithMaxHold.
func TestConstructorDocsNameTheirOptions(t *testing.T) {
	t.Parallel()
	c, err := zklock.Connect(zkServers(), zklock.WithConnectTimeout(20*time.Second))
	require.NoError(t, err)
	defer c.Close()
	options := map[string]zklock.LockOption{
		"WithLockData": zklock.WithLockData([]byte("x")),
		"WithDriver":   zklock.WithDriver(zklock.StandardDriver{}),
		"WithMaxHold":  zklock.WithMaxHold(time.Minute),
		"WithLayout":   zklock.WithLayout(zklock.LayoutKazoo),
	}
	build := map[string]func(zklock.LockOption) error{
		"NewMutex":          func(o zklock.LockOption) error { _, err := zklock.NewMutex(c, "/d", o); return err },
		"NewReadWriteLock":  func(o zklock.LockOption) error { _, err := zklock.NewReadWriteLock(c, "/d", o); return err },
		"NewSemaphore":      func(o zklock.LockOption) error { _, err := zklock.NewSemaphore(c, "/d", 2, o); return err },
		"NewSemaphoreMutex": func(o zklock.LockOption) error { _, err := zklock.NewSemaphoreMutex(c, "/d", o); return err },
		"NewElection":       func(o zklock.LockOption) error { _, err := zklock.NewElection(c, "/d", "id", o); return err },
		"NewSelector":       func(o zklock.LockOption) error { _, err := zklock.NewSelector(c, "/d", "id", o); return err },
	}
	takes := func(ctor, opt string) bool {
		err := build[ctor](options[opt])
		require.True(t, err == nil || errors.Is(err, zklock.ErrInvalidArgument), "%s(%s): %v", ctor, opt, err)
		return err == nil
	}
	docs := packageDocs(t)
	same := regexp.MustCompile(`takes the options (New\w+) takes`)
	for ctor := range build {
		d := strings.Join(strings.Fields(docs[ctor]), " ")
		assert.NotContains(t, d, "no options", ctor)
		for opt := range options {
			if strings.Contains(d, opt) {
				continue
			}
			m := same.FindStringSubmatch(d)
			if assert.NotNil(t, m, "%s's doc does not name %s, which it %s", ctor, opt, map[bool]string{true: "takes", false: "refuses"}[takes(ctor, opt)]) {
				assert.Contains(t, docs[m[1]], opt, "%s refers to %s, whose doc does not name %s", ctor, m[1], opt)
				assert.Equal(t, takes(m[1], opt), takes(ctor, opt), "%s and %s differ on %s", ctor, m[1], opt)
			}
		}
	}
}

// ContextWithMaxHold cannot return an error (it returns a context, as
// context.WithValue does, and never panics): a bound that is not positive
// fails each acquire made with it, at once, with an error that names the
// value given, and leaves no node.
func TestIntegration_ContextWithMaxHoldRefusedAtAcquire(t *testing.T) {
	t.Parallel()
	e := setup(t)
	m := e.mutex(e.client(), "/bounded")
	for _, d := range []time.Duration{0, -time.Second} {
		_, err := m.Lock(zklock.ContextWithMaxHold(context.Background(), d))
		require.ErrorIs(t, err, zklock.ErrInvalidArgument)
		assert.Contains(t, err.Error(), "ContextWithMaxHold("+d.String()+")")
	}
	assert.Empty(t, e.children(e.root+"/bounded"), "no node left")
}
