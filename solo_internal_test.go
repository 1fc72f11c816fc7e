package zklock

import (
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
)

// soloCase sets up a solo whose last node, number 1, was listed alone in
// the parent with creation zxid 100 and deleted, with the parent's watch
// set on connection 7, then breaks one thing; the next create, number 2,
// proves alone only if nothing was broken.
type soloCase struct {
	name                 string
	want                 bool
	children             int    // listed beside node 1
	cversion             int32  // the listing's parent cversion; 0: consistent
	standing             bool   // node 1 not deleted
	watchCzxid           int64  // 0: 100
	watchConn            uint64 // 0: 7
	fired                bool   // the parent's watch fired before the reply
	seq                  int64  // 0: 2
	connBefore, connNext uint64 // the connection around the create; 0: 7
}

func (tc soloCase) proves() bool {
	node := func(n int64) string { return fmt.Sprintf("_c_7b1b6c8e-1b1b-4b1b-8b1b-1b1b1b1b1b1b-lock-%010d", n) }
	parent := func(seq int64) *zk.Stat { // one child, created last, numbered seq
		return &zk.Stat{Czxid: 100, NumChildren: 1, Cversion: int32(2*seq + 1)}
	}
	s := &solo{}
	s.created(node(0), 0, 0)
	s.listed(node(0), []string{node(0)}, parent(0))
	s.deleted(node(0))
	ch := make(chan zk.Event, 1)
	s.armed(ch, &zk.Stat{Czxid: or(tc.watchCzxid, 100)}, or(tc.watchConn, 7))

	s.created(node(1), 0, 0)
	listing, st := []string{node(1)}, parent(1)
	for i := range tc.children {
		listing = append(listing, node(int64(10+i)))
		st.NumChildren++
	}
	if tc.cversion != 0 {
		st.Cversion = tc.cversion
	}
	s.listed(node(1), listing, st)
	if !tc.standing {
		s.deleted(node(1))
	}
	if tc.fired {
		ch <- zk.Event{Type: zk.EventNodeDeleted}
	}
	return s.created(node(or(tc.seq, 2)), or(tc.connBefore, 7), or(tc.connNext, 7))
}

// or returns v, or def if v is zero.
func or[T int64 | uint64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// The solo path's proof (solo.go), condition by condition: each case
// breaks one, and the node must not count as alone.
func TestSoloProof(t *testing.T) {
	for _, tc := range []soloCase{
		{name: "alone", want: true},
		{name: "another node was created meanwhile", seq: 3},
		{name: "the parent's watch fired", fired: true},
		{name: "the watch was set on an earlier connection", watchConn: 6},
		{name: "the create went on a later connection", connBefore: 8, connNext: 8},
		{name: "a new connection during the create", connNext: 8},
		{name: "the watch is on another parent", watchCzxid: 90},
		{name: "the last node stands", standing: true},
		{name: "the last node was not alone", children: 1},
		{name: "the parent's counts do not match the numbering", cversion: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.proves(), "proved alone: %s", tc.name)
		})
	}
}

// seqOf reads ZooKeeper's ten-digit suffix, and nothing else.
func TestSeqOf(t *testing.T) {
	n, ok := seqOf("_c_x-lock-0000000042")
	assert.True(t, ok)
	assert.Equal(t, int64(42), n)
	for _, bad := range []string{"", "lock-", "lock-00000000x1", "lock--000000001"} {
		_, ok := seqOf(bad)
		assert.False(t, ok, bad)
	}
}

// A Client's soloTable gives every Mutex of a lock the same solo, and
// holds at most maxSolos locks.
func TestSoloTableBounded(t *testing.T) {
	var tab soloTable
	a := tab.of(lockID{path: "/a", lockName: "lock-"})
	assert.Same(t, a, tab.of(lockID{path: "/a", lockName: "lock-"}))
	assert.NotSame(t, a, tab.of(lockID{path: "/a", lockName: "__READ__"}), "each side of a read/write lock has its own")
	for i := range maxSolos + 10 {
		tab.of(lockID{path: fmt.Sprintf("/many/%d", i), lockName: "lock-"})
	}
	assert.Len(t, tab.m, maxSolos)
}
