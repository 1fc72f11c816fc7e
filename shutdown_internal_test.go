package zklock

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A Close that ends a Shutdown while holds still count as standing (the
// window between Close's start and the holds' ends, held open here by a
// count of one) makes Shutdown report them with ErrClosed: its ctx has
// not ended, so there is no ctx.Err() to wrap, and the error must not
// read "%!w(<nil>)".
func TestShutdownEndedByCloseWrapsErrClosed(t *testing.T) {
	c := NewClient(nil, nil) // closed: its closing channel is closed
	c.holding.Add(1)
	defer c.holding.Add(-1)
	err := c.Shutdown(context.Background())
	require.Error(t, err)
	require.NotContains(t, err.Error(), "%!")
	require.ErrorIs(t, err, ErrClosed)
}
