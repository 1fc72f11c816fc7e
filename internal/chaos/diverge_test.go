package main

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/zklock/zklock/internal/zktest"
	"go.uber.org/goleak"
)

func TestJudge(t *testing.T) {
	yes, no, down := presence{has: true}, presence{}, presence{err: errors.New("down")}
	for _, tc := range []struct {
		name string
		ps   []presence
		want fate
	}{
		{"on every server", []presence{yes, yes, yes}, orphan},
		{"on a majority", []presence{yes, yes, no}, orphan},
		{"on one, two answered no", []presence{yes, no, no}, diverged},
		{"on one of five, three answered no", []presence{yes, yes, no, no, no}, diverged},
		{"on none", []presence{no, no, no}, gone},
		{"on one, the others down", []presence{yes, down, down}, orphan},
		{"on one, one answered no, one down", []presence{yes, no, down}, orphan},
		{"on none that answered, two down", []presence{no, down, down}, orphan},
		{"no server answered", []presence{down, down, down}, orphan},
		{"on none, one down", []presence{no, no, down}, gone},
	} {
		assert.Equal(t, tc.want, judge(tc.ps), tc.name)
	}
}

func TestMerge(t *testing.T) {
	a := []string{"/a (session 1)", "/b (session 2)"}
	got := merge(a, []string{"/b (another account of it)", "/c (on servers ...)"})
	assert.Equal(t, []string{"/a (session 1)", "/b (session 2)", "/c (on servers ...)"}, got)
}

// TestSortLeft asks real servers: two ZooKeepers of their own stand for
// an ensemble's members, one that holds a node and others that do not,
// since ZooKeeper's divergence cannot be made on demand.
func TestSortLeft(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // after the servers stopped
	has, hasnt := zktest.StartT(t, zktest.Config{}).Servers()[0], zktest.StartT(t, zktest.Config{}).Servers()[0]
	conn, _, err := zk.Connect([]string{has}, 10*time.Second, zk.WithLogger(quiet{}))
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Create("/left", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	dead := zktest.ClosedAddr(t)

	line := func(n, answers string) string { return fmt.Sprintf("%s %s", n, answers) }
	for _, tc := range []struct {
		name            string
		servers         []string
		orphans, diverg int
	}{
		{"held by a majority", []string{has, has, hasnt}, 1, 0},
		{"held by a minority", []string{has, hasnt, hasnt}, 0, 1},
		{"held by one, the others unreachable", []string{has, dead, dead}, 1, 0},
		{"held by none", []string{hasnt, hasnt, hasnt}, 0, 0},
	} {
		orphans, div := sortLeft(tc.servers, []string{"/left"}, line)
		assert.Len(t, orphans, tc.orphans, "%s: orphans %q", tc.name, orphans)
		assert.Len(t, div, tc.diverg, "%s: divergence %q", tc.name, div)
	}
}
