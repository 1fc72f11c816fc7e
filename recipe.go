package zklock

import "context"

// recipe is one of the package's recipes, as a call on it is checked
// before it runs (see valid).
type recipe interface {
	// site returns the recipe's Client and path, or a nil Client for a
	// recipe not made by its constructor (a nil pointer included); notMade
	// says, in either case, which constructor makes it.
	site() (c *Client, path, notMade string)
}

// valid is the one rule every recipe's call checks first: the recipe was
// made by its constructor, and ctx is not nil. Its errors wrap
// ErrInvalidArgument and name the call, what, and the recipe's path once
// it has one.
func valid(ctx context.Context, r recipe, what string) error {
	c, path, notMade := r.site()
	switch {
	case c == nil:
		return wrapf(ErrInvalidArgument, "%s: %s", what, notMade)
	case ctx == nil:
		return wrapf(ErrInvalidArgument, "%s %s: nil context", what, path)
	}
	return nil
}

// usable is valid, and returns an error wrapping ErrClosed once the
// recipe's Client has begun to close, for a call that would otherwise
// begin work on it.
func usable(ctx context.Context, r recipe, what string) error {
	if err := valid(ctx, r, what); err != nil {
		return err
	}
	c, path, _ := r.site()
	if err := c.usable(); err != nil {
		return wrapf(err, "%s %s", what, path)
	}
	return nil
}
