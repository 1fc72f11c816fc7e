package main

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestVersion(t *testing.T) {
	e := setup(t)
	for _, args := range [][]string{{"version"}, {"-version"}} {
		r := e.run(args...)
		assert.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		// A test binary is built from the source tree: no module version.
		assert.Regexp(t, `^zklock \(devel\)( \(commit [0-9a-f]+(, modified)?\))?, `+runtime.Version()+` `+runtime.GOOS+`/`+runtime.GOARCH+`\n$`, r.stdout, args)
	}
	r := e.run("version", "extra")
	assert.Equal(t, 2, r.code, r.stderr)
	r = e.run("help", "version")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Usage: zklock version")
}
