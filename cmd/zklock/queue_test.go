package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDetectRecipe(t *testing.T) {
	for _, tc := range []struct {
		children []string
		want     string
	}{
		{nil, recipeNone},
		{[]string{"_c_a-lock-0000000001", "_c_b-lock-0000000000"}, recipeMutex},
		{[]string{"_c_a-__READ__0000000000", "_c_b-__WRIT__0000000001"}, recipeRWLock},
		{[]string{"_c_a-__WRIT__0000000000"}, recipeRWLock},
		{[]string{"leases", "locks"}, recipeSemaphore},
		{[]string{"leases"}, recipeSemaphore},
		{[]string{"config", "data"}, recipeUnknown},
	} {
		assert.Equal(t, tc.want, detect(tc.children), "%v", tc.children)
	}
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
