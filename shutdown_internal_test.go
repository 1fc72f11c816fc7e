package zklock

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The account of the holds a Close cut short counts every hold, names
// each lock once, sorted, and at most maxNamed of them, then how many
// more.
func TestCutShortNamesLocksOnceInOrder(t *testing.T) {
	var r cutShort
	n, locks := r.read()
	assert.Equal(t, 0, n)
	assert.Equal(t, "", locks)

	for _, p := range []string{"/b", "/a", "/b", "/c"} {
		r.add(p)
	}
	n, locks = r.read()
	assert.Equal(t, 4, n)
	assert.Equal(t, "/a, /b, /c", locks)

	for i := range 12 {
		r.add(fmt.Sprintf("/m%02d", 11-i))
	}
	n, locks = r.read()
	assert.Equal(t, 16, n)
	assert.Equal(t, "/a, /b, /c, /m00, /m01, /m02, /m03, /m04, /m05, /m06 and 5 more", locks)
}

// A Shutdown begun on a Client already closed cut nothing short and
// returns nil, whatever the account of the Close says; it never reads
// "%!w(<nil>)".
func TestShutdownAfterCloseReturnsNil(t *testing.T) {
	c := NewClient(nil, nil) // closed: its closing channel is closed
	c.cut.add("/a")
	assert.NoError(t, c.Shutdown(t.Context()))
}
