package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// offline is an env for runs of the binary that fail, or print help,
// before connecting: no ZooKeeper, and ZK_SERVERS set to an address that
// nothing is asked at.
func offline(t *testing.T) *env {
	return &env{t: t, servers: []string{"127.0.0.1:22181"}}
}

// With ZK_SERVERS set, each command's help gives -servers one default,
// $ZK_SERVERS, not also the variable's value; and -session-timeout one,
// not "(the library's default) (default 30s)".
func TestHelpServersDefaultOnce(t *testing.T) {
	e := offline(t)
	for _, name := range []string{"inspect", "list", "revoke", "break", "exec", "leader"} {
		r := e.run("help", name)
		assert.Equal(t, 0, r.code, "%s: %s", name, r.stderr)
		line := regexp.MustCompile(`(?m)^\s+ZooKeeper servers.*$`).FindString(r.stdout)
		assert.Equal(t, "ZooKeeper servers, host:port,... (default $ZK_SERVERS)", strings.TrimSpace(line), name)
		line = regexp.MustCompile(`(?m)^\s+ZooKeeper session timeout.*$`).FindString(r.stdout)
		assert.Equal(t, "ZooKeeper session timeout (default 30s, as the library's)", strings.TrimSpace(line), name)
	}
}

// A missing argument is named, with what it is, and the usage hint.
func TestMissingArguments(t *testing.T) {
	e := offline(t)
	const node = "NODE (a node of the lock: its name as 'zklock inspect' shows it, or its sequence number)"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"inspect"}, "missing PATH (the lock's path)"},
		{[]string{"inspect", "-json"}, "missing PATH (the lock's path)"},
		{[]string{"list"}, "missing PREFIX (the path whose locks to list, such as /)"},
		{[]string{"revoke"}, "missing PATH (the lock's path) and " + node},
		{[]string{"revoke", "/a"}, "missing " + node},
		{[]string{"break", "-force", "/a"}, "missing NODE (the node to delete: its name as 'zklock inspect' shows it, or its sequence number; or -holder)"},
		{[]string{"exec"}, "missing PATH (the lock's path)"},
		{[]string{"exec", "/a"}, "missing CMD (the command to run): want PATH -- CMD [ARGS...]"},
		{[]string{"leader"}, "missing PATH (the election's path)"},
	} {
		r := e.run(tc.args...)
		assert.Equal(t, 2, r.code, "%v: %s", tc.args, r.stderr)
		assert.Equal(t, "zklock "+tc.args[0]+": "+tc.want+"\nRun 'zklock help "+tc.args[0]+"' for usage.\n", r.stderr, tc.args)
		assert.Empty(t, r.stdout, tc.args)
	}
}
