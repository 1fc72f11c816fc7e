package main

import (
	"bytes"
	"errors"
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock"
)

func TestParsePositionalAndFlags(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		pos, rest []string
		wantErr   bool
	}{
		{"flags first", []string{"-servers", "h:1", "/a", "--", "x"}, []string{"/a"}, []string{"x"}, false},
		{"flags after", []string{"/a", "-servers", "h:1", "--", "x", "-y"}, []string{"/a"}, []string{"x", "-y"}, false},
		{"no dashes", []string{"-servers=h:1", "/a", "sh", "-c", "true"}, []string{"/a"}, []string{"sh", "-c", "true"}, false},
		{"missing", []string{"-servers", "h:1"}, nil, nil, true},
		{"unknown flag", []string{"-bogus", "/a"}, nil, nil, true},
		{"bad duration", []string{"-session-timeout", "soon", "/a"}, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCommon("test", "")
			pos, rest, err := c.parse(tc.args, argPath)
			if tc.wantErr {
				assert.ErrorIs(t, err, errUsage)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.pos, pos)
			assert.Equal(t, tc.rest, rest)
			assert.Equal(t, "h:1", c.servers)
		})
	}
}

func TestCheckPath(t *testing.T) {
	for _, p := range []string{"/", "/a", "/a/b-c"} {
		assert.NoError(t, checkPath(p), p)
	}
	for _, p := range []string{"", "a", "/a/", "//a", "/a/../b", "/a/./b"} {
		assert.ErrorIs(t, checkPath(p), errUsage, p)
	}
}

// Invalid exec command lines are usage errors, exit 2, found before any
// connection is made.
func TestExecFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"/a"},
		{"/a", "--"},
		{"-read", "-write", "/a", "--", "true"},
		{"-n", "-1", "/a", "--", "true"},
		{"-n", "0", "/a", "--", "true"},
		{"-revocable", "-n", "2", "/a", "--", "true"},
		{"-n", "2", "-write", "/a", "--", "true"},
		{"-try", "-timeout", "1s", "/a", "--", "true"},
		{"-timeout", "-1s", "/a", "--", "true"},
		{"-kill-after", "0s", "/a", "--", "true"},
		{"-signal", "BOGUS", "/a", "--", "true"},
		{"-policy", "eventual", "/a", "--", "true"},
		{"rel", "--", "true"},
	} {
		f := newExecFlags()
		_, _, err := f.parseExec(args)
		assert.ErrorIs(t, err, errUsage, "%v", args)
		var stdout, stderr bytes.Buffer
		assert.Equal(t, exitUsage, f.exitFor(err, &stdout, &stderr), "%v", args)
		assert.Regexp(t, `^zklock exec: .+\nRun 'zklock help exec' for usage.\n$`, stderr.String(), "%v", args)
	}
}

func TestExecFlagsPolicyAndSignal(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want zklock.ErrorPolicy
	}{{"standard", zklock.StandardPolicy}, {"session", zklock.SessionPolicy}, {"SESSION", zklock.SessionPolicy}} {
		got, err := parsePolicy(tc.arg)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, tc.arg)
	}
	f := newExecFlags()
	_, argv, err := f.parseExec([]string{"-signal", "usr1", "/a", "--", "true"})
	require.NoError(t, err)
	assert.Equal(t, []string{"true"}, argv)
	assert.Equal(t, "user defined signal 1", f.sig.String())
	assert.Equal(t, "standard", f.policy, "the default")
	assert.Len(t, f.extra, 1, "the policy's Client option")
	for _, s := range []string{"SIGTERM", "TERM", "15"} {
		sig, err := parseSignal(s)
		require.NoError(t, err)
		assert.Equal(t, 15, int(sig), s)
	}
}

// Connect's own checks come before any dialling: usage errors.
func TestConnectFlagErrors(t *testing.T) {
	c := newCommon("test", "")
	_, err := c.connect()
	assert.ErrorIs(t, err, errUsage, "no servers")
	c.servers, c.auth = "127.0.0.1:1", "nocolon"
	_, err = c.connect()
	assert.ErrorIs(t, err, errUsage, "-auth without a colon")
	c.auth, c.sessionTimeout = "", -1
	_, err = c.connect()
	assert.ErrorIs(t, err, errUsage, "a negative session timeout")
}

func TestExitFor(t *testing.T) {
	c := newCommon("test", "Usage: zklock test\n")
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitOK, c.exitFor(nil, &stdout, &stderr))
	assert.Equal(t, exitOK, c.exitFor(flag.ErrHelp, &stdout, &stderr))
	assert.Contains(t, stdout.String(), "Usage: zklock test")
	assert.Contains(t, stdout.String(), "Exit codes:")
	assert.Equal(t, exitError, c.exitFor(errors.New("boom"), &stdout, &stderr))
	assert.Equal(t, "zklock test: boom\n", stderr.String())
}
