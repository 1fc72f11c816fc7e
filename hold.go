package zklock

import (
	"context"
	"errors"
	"fmt"
)

// hold is one participant's ownership of a Mutex.
type hold struct {
	node   *lockNode               // written once before the hold is published
	ctx    context.Context         // the hold context; carries the hold
	cancel context.CancelCauseFunc // ends ctx
	stop   chan struct{}           // closed when the hold ends; stops the monitor

	count int   // guarded by Mutex.mu; Releases still owed
	lost  error // guarded by Mutex.mu; why the hold was lost, nil while it stands
}

// holdKey finds a Mutex's hold in a context.
type holdKey struct{ m *Mutex }

// monitor watches a held node until stop is closed, and calls onLost once
// if the hold ends otherwise: the node is deleted, the session is lost, or
// (under StandardPolicy) the connection is suspended.
func (li *lockInternals) monitor(n *lockNode, snap snapshot, stop <-chan struct{}, onLost func(error), onRevoke func()) {
	c := li.c
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
		case <-ctx.Done():
		}
		cancel()
	}()
	for {
		stateCh := c.stateChanged()
		if err := c.holdLost(snap); err != nil {
			onLost(err)
			return
		}
		select {
		case ev := <-n.own:
			if err := li.ownEvent(ctx, n, ev, onRevoke); err != nil {
				if ctx.Err() != nil {
					return // released while we looked
				}
				if errors.Is(err, errNodeGone) {
					err = fmt.Errorf("%w: node %s deleted", ErrLockLost, c.relPath(n.path))
				} else if errors.Is(err, ErrClosed) {
					err = fmt.Errorf("%w: %w", ErrLockLost, ErrClosed)
				} else {
					err = fmt.Errorf("%w: %w", ErrLockLost, err)
				}
				onLost(err)
				return
			}
		case <-stateCh:
		case <-stop:
			return
		case <-c.closing:
			onLost(fmt.Errorf("%w: %w", ErrLockLost, ErrClosed))
			return
		}
	}
}
