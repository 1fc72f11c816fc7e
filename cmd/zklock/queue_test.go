package main

import (
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDetectRecipe(t *testing.T) {
	for _, tc := range []struct {
		children  []string
		semaphore bool
		want      string
	}{
		{nil, false, recipeNone},
		{[]string{"_c_a-lock-0000000001", "_c_b-lock-0000000000"}, false, recipeMutex},
		{[]string{"_c_a-__READ__0000000000", "_c_b-__WRIT__0000000001"}, false, recipeRWLock},
		{[]string{"_c_a-__WRIT__0000000000"}, false, recipeRWLock},
		{[]string{"leases", "locks"}, true, recipeSemaphore},
		{[]string{"leases", "locks"}, false, recipeUnknown}, // their names alone say nothing
		{[]string{"locks"}, false, recipeUnknown},
		{[]string{"_c_a-lock-0000000001", "locks"}, false, recipeMutex},
		{[]string{"config", "data"}, false, recipeUnknown},
	} {
		assert.Equal(t, tc.want, detect(tc.children, tc.semaphore), "%v, %v", tc.children, tc.semaphore)
	}
}

// A Semaphore is known by the nodes its leases and locks nodes hold.
func TestSemaphoreLayout(t *testing.T) {
	const (
		lease  = "_c_d4fe49f7-3953-4e8e-ad7b-03bdb58fe36c-lease-0000000000"
		lock   = "_c_8b9cfe55-fd2b-48a3-9e82-72672e13b674-lock-0000000001"
		bare   = "lease-0000000003"
		noSeq  = "_c_d4fe49f7-lease-"
		subdir = "billing"
	)
	none, empty := dir{}, dir{exists: true}
	has := func(names ...string) dir { return dir{true, names} }
	for _, tc := range []struct {
		name          string
		leases, locks dir
		want          bool
	}{
		{"leases held", has(lease), none, true},
		{"leases held, acquirer queued", has(lease, lease), has(lock), true},
		{"a lease without protection", has(bare), empty, true},
		{"a lease beside a lock path", has(subdir, lease), has(subdir), true},
		{"leases empty, acquirer queued", empty, has(lock), true},
		{"idle", empty, empty, true},
		{"no leases node", none, has(lock), false},
		{"no node at all", none, none, false},
		{"empty leases node alone", empty, none, false},
		{"a mutex named leases", has(lock), none, false},
		{"a mutex named leases beside locks", has(lock), empty, false},
		{"lock paths under locks", empty, has(subdir), false},
		{"lock paths under leases", has(subdir), has(lock), false},
		{"a name without a sequence", has(noSeq), none, false},
	} {
		assert.Equal(t, tc.want, semaphoreLayout(tc.leases, tc.locks), tc.name)
	}
}

// A lock that could not be read is walked below through the nodes not
// named as its own.
func TestListingBeside(t *testing.T) {
	l := &listing{children: []string{"_c_a-lock-0000000001", "lock-dir", "sub"}}
	assert.Equal(t, []string{"lock-dir", "sub"}, l.beside(recipeMutex))
	l = &listing{children: []string{"_c_a-__READ__0000000001", "_c_a-__WRIT__0000000002", "sub"}}
	assert.Equal(t, []string{"sub"}, l.beside(recipeRWLock))
	l = &listing{children: []string{"inner", "leases", "locks"}, sem: &semNodes{
		leases: []string{"_c_a-lease-0000000001", "deep"},
		locks:  []string{"_c_b-lock-0000000002", "x"},
	}}
	assert.Equal(t, []string{"inner", "leases/deep", "locks/x"}, l.beside(recipeSemaphore))
}

// inspect -watch lists a lock on the Client and on its watch connection,
// and trusts its watches only when both list the same nodes: those of the
// lock path, and of a semaphore's leases and locks nodes.
func TestListingsAgree(t *testing.T) {
	const lease, lock = "_c_a-lease-0000000001", "_c_b-lock-0000000002"
	tree := func(nodes map[string][]string) lister {
		return func(p string) ([]string, bool, <-chan zk.Event, error) {
			children, ok := nodes[p]
			return children, ok, nil, nil
		}
	}
	sem := map[string][]string{"/s": {"locks", "leases"}, "/s/leases": {lease}, "/s/locks": {lock}}
	for _, tc := range []struct {
		name  string
		other map[string][]string
		want  bool
	}{
		{"the same, listed in another order", map[string][]string{"/s": {"leases", "locks"}, "/s/leases": {lease}, "/s/locks": {lock}}, true},
		{"a lease more", map[string][]string{"/s": {"leases", "locks"}, "/s/leases": {lease, "_c_c-lease-0000000003"}, "/s/locks": {lock}}, false},
		{"an acquirer less", map[string][]string{"/s": {"leases", "locks"}, "/s/leases": {lease}, "/s/locks": {}}, false},
		{"no locks node yet", map[string][]string{"/s": {"leases"}, "/s/leases": {lease}}, false},
		{"gone", map[string][]string{}, false},
	} {
		a, _, err := listWith("/s", tree(sem))
		require.NoError(t, err)
		b, _, err := listWith("/s", tree(tc.other))
		require.NoError(t, err)
		assert.Equal(t, tc.want, a.same(b), tc.name)
		assert.Equal(t, tc.want, b.same(a), tc.name)
	}
	gone, _, err := listWith("/m", tree(nil))
	require.NoError(t, err)
	empty, _, err := listWith("/m", tree(map[string][]string{"/m": nil}))
	require.NoError(t, err)
	assert.False(t, gone.same(empty), "a path created meanwhile")
}

func TestRoleOf(t *testing.T) {
	assert.Equal(t, roleHolder, roleOf(true))
	assert.Equal(t, roleWaiter, roleOf(false))
}

// Readers and writers sort together by sequence, whatever their prefix.
func TestRWOrder(t *testing.T) {
	var o rwOrder
	assert.Equal(t, "0000000007", o.SortKey("_c_zz-__READ__0000000007", ""))
	assert.Equal(t, "0000000003", o.SortKey("_c_aa-__WRIT__0000000003", ""))
}

// A reader with the sequence of its own session's held write node is a
// downgrade: it holds. A reader of another session, or behind another
// sequence, still waits.
func TestMarkDowngrades(t *testing.T) {
	v := &queueView{Nodes: []nodeView{
		{Kind: "write", Role: roleHolder, Name: "_c_a-__WRIT__0000000001", session: 1},
		{Kind: "read", Role: roleWaiter, Name: "_c_a-__READ__0000000001", session: 1},
		{Kind: "read", Role: roleWaiter, Name: "_c_b-__READ__0000000001", session: 2},
		{Kind: "read", Role: roleWaiter, Name: "_c_c-__READ__0000000002", session: 1},
	}}
	markDowngrades(v)
	roles := []string{}
	for _, n := range v.Nodes {
		roles = append(roles, n.Role)
	}
	assert.Equal(t, []string{roleHolder, roleHolder, roleWaiter, roleWaiter}, roles)
}

func TestOwnerText(t *testing.T) {
	assert.Equal(t, "10.0.0.7", ownerText([]byte("10.0.0.7")))
	assert.Equal(t, "", ownerText(nil))
	assert.Equal(t, "0x00ff", ownerText([]byte{0, 0xff}))
	assert.Equal(t, "0x610a", ownerText([]byte("a\n")), "control characters are not printable")
}
