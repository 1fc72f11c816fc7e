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
	assert.Equal(t, []string{"lock-dir", "sub"}, l.beside())
	l = &listing{children: []string{"_c_a-__READ__0000000001", "_c_a-__WRIT__0000000002", "sub"}}
	assert.Equal(t, []string{"sub"}, l.beside())
	l = &listing{children: []string{"inner", "leases", "locks"}, sem: &semNodes{
		leases: []string{"_c_a-lease-0000000001", "deep"},
		locks:  []string{"_c_b-lock-0000000002", "x"},
	}}
	assert.Equal(t, []string{"inner", "leases/deep", "locks/x"}, l.beside())
	l = &listing{children: []string{kazooW1, kazooR2, "sub"}}
	assert.Equal(t, []string{"sub"}, l.beside())
	l = &listing{children: []string{"_c_a-lock-0000000001", kazooW1, "sub"}} // mixed
	assert.Equal(t, []string{"sub"}, l.beside())
	l = &listing{children: []string{kazooLease, "sub"}, kazoo: &dir{exists: true}, pool: true}
	assert.Equal(t, []string{"sub"}, l.beside())
}

// kazoo contenders, and leases beside an existing kazoo Semaphore lock.
const (
	kazooW1    = "0123456789abcdef0123456789abcdef__lock__0000000001"
	kazooR2    = "fedcba9876543210fedcba9876543210__rlock__0000000002"
	kazooLease = "00112233445566778899aabbccddeeff"
)

// A path is read in each layout whose nodes it holds: Curator's, a kazoo
// lock's, a kazoo Semaphore's, each apart (a mix-up), so that no held
// lock hides behind another layout's.
func TestReadings(t *testing.T) {
	const mutex, sub = "_c_a-lock-0000000001", "sub"
	pool := &dir{exists: true}
	for _, tc := range []struct {
		name     string
		l        listing
		recipes  []string
		rest     []string
		recipeOf string
	}{
		{"free", listing{}, []string{recipeNone}, nil, recipeNone},
		{"a container", listing{children: []string{sub}}, []string{recipeUnknown}, nil, recipeUnknown},
		{"a Curator mutex", listing{children: []string{mutex, sub}}, []string{recipeMutex}, nil, recipeMutex},
		{"a kazoo Lock", listing{children: []string{kazooW1, sub}}, []string{recipeKazooLock}, []string{sub}, recipeKazooLock},
		{"a kazoo ReadLock", listing{children: []string{kazooR2}}, []string{recipeKazooRWLock}, nil, recipeKazooRWLock},
		{"kazoo readers and writers", listing{children: []string{kazooW1, kazooR2}}, []string{recipeKazooRWLock}, nil, recipeKazooRWLock},
		{"a kazoo Semaphore", listing{children: []string{kazooLease, sub}, kazoo: pool, pool: true}, []string{recipeKazooSemaphore}, []string{sub}, recipeKazooSemaphore},
		{"a lease's name without the Semaphore's lock", listing{children: []string{kazooLease}, kazoo: &dir{}}, []string{recipeUnknown}, nil, recipeUnknown},
		{"Curator's and kazoo's", listing{children: []string{mutex, kazooW1, sub}}, []string{recipeMutex, recipeKazooLock}, nil, recipeMixed},
		{"a Curator Semaphore and kazoo's", listing{children: []string{"leases", "locks", kazooR2}, sem: &semNodes{}},
			[]string{recipeSemaphore, recipeKazooRWLock}, nil, recipeMixed},
	} {
		rs, rest := readings(&tc.l)
		var recipes []string
		for _, r := range rs {
			recipes = append(recipes, r.recipe)
		}
		assert.Equal(t, tc.recipes, recipes, tc.name)
		assert.Equal(t, tc.rest, rest, tc.name)
		assert.Equal(t, tc.recipeOf, recipeOf(rs), tc.name)
	}
}

// kazoo's contenders sort by sequence as text, whatever their prefix and
// kind; past 2^31 a sequence is negative and sorts first.
func TestKazooOrder(t *testing.T) {
	neg := "aa__lock__-2147483648"
	assert.Equal(t, []string{neg, kazooW1, kazooR2}, kazooOrder([]string{kazooR2, kazooW1, neg}))
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
		a, _, err := listWith("/s", tree(sem), nil)
		require.NoError(t, err)
		b, _, err := listWith("/s", tree(tc.other), nil)
		require.NoError(t, err)
		assert.Equal(t, tc.want, a.same(b), tc.name)
		assert.Equal(t, tc.want, b.same(a), tc.name)
	}
	// A kazoo Semaphore's lock, beside the pool, is listed with it.
	pool := map[string][]string{"/p": {kazooLease}, "/p-__lock__": {kazooW1}}
	a, _, err := listWith("/p", tree(pool), nil)
	require.NoError(t, err)
	assert.True(t, a.kazooPool())
	b, _, err := listWith("/p", tree(map[string][]string{"/p": {kazooLease}, "/p-__lock__": {}}), nil)
	require.NoError(t, err)
	assert.False(t, a.same(b), "an acquirer less")
	b, _, err = listWith("/p", tree(map[string][]string{"/p": {kazooLease}}), nil)
	require.NoError(t, err)
	assert.False(t, b.kazooPool(), "no lock beside the pool, and no size in its data")
	sized, _, err := listWith("/p", tree(map[string][]string{"/p": {kazooLease}}), func(p string) bool { return p == "/p" })
	require.NoError(t, err)
	assert.True(t, sized.kazooPool(), "no lock beside the pool, and a size in its data")
	assert.False(t, a.same(b), "no lock beside the pool")

	gone, _, err := listWith("/m", tree(nil), nil)
	require.NoError(t, err)
	empty, _, err := listWith("/m", tree(map[string][]string{"/m": nil}), nil)
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
