package zklock

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTurn: one holder at a time; asks while taken make exactly one more
// round, however many came; a turn given up is free again.
func TestTurn(t *testing.T) {
	var tr turn
	assert.False(t, tr.busy())
	assert.True(t, tr.take(), "a free turn is taken")
	assert.False(t, tr.take(), "a taken turn is not taken twice")
	assert.False(t, tr.done(), "no one asked meanwhile")
	assert.False(t, tr.busy(), "done frees it")

	assert.True(t, tr.ask(), "ask takes a free turn")
	assert.False(t, tr.ask())
	assert.False(t, tr.ask())
	assert.True(t, tr.done(), "asked meanwhile: once more")
	assert.True(t, tr.busy(), "the holder keeps it for the round asked for")
	assert.False(t, tr.done(), "two asks make one more round, not two")
	assert.False(t, tr.busy())

	assert.True(t, tr.take())
	assert.False(t, tr.ask())
	assert.True(t, tr.done())
	assert.False(t, tr.take(), "still the holder's")
	assert.False(t, tr.done())
	assert.True(t, tr.take(), "free again")
}
