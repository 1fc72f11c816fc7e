package zklock

// turn lets one goroutine at a time do a piece of work that others ask
// for but do not wait on, such as setting a watch or opening a session:
// the first to ask takes the turn and does the work; one who asks while
// the turn is taken leaves the work to its holder, or (ask) has the
// holder do it once more when it is done. The zero value is free. A turn
// has no lock of its own: the mutex of the struct it is in guards it, as
// it guards what the work decides.
type turn struct {
	taken bool // a goroutine does the work
	again bool // asked for while taken: the work is to be done once more
}

// take takes the turn if it is free, and reports whether it did: the
// caller then does the work, and ends it with done.
func (t *turn) take() bool {
	if t.taken {
		return false
	}
	t.taken = true
	return true
}

// ask takes the turn if it is free, as take does. If it is taken, ask
// has its holder do the work once more (its done reports true), and
// reports false.
func (t *turn) ask() bool {
	if t.take() {
		return true
	}
	t.again = true
	return false
}

// done ends a round of the work. It reports whether the work was asked
// for meanwhile: then the turn stays taken, and its holder does the work
// once more.
func (t *turn) done() (again bool) {
	again, t.again = t.again, false
	t.taken = again
	return again
}

// busy reports whether the turn is taken.
func (t *turn) busy() bool { return t.taken }
