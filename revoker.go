package zklock

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"
)

// Revoke asks the holder of the lock node at nodePath (relative to the
// Client's namespace, as [Mutex.Participants] returns it) to release it, by
// writing Curator's revocation message into the node. Holders that called
// [Mutex.MakeRevocable], in Go or Java, are told; revocation is cooperative.
// Revoking a node that no longer exists is not an error (its holder has
// released meanwhile), as in Curator. A node that is not ephemeral, such as
// a lock's base path, is not a lock node: Revoke leaves it alone and
// returns an error wrapping ErrInvalidArgument.
func Revoke(ctx context.Context, c *Client, nodePath string) error {
	if c == nil || ctx == nil {
		return wrapf(ErrInvalidArgument, "revoke %s: nil Client or context", nodePath)
	}
	if err := c.usable(); err != nil {
		return wrapf(err, "revoke %s", nodePath)
	}
	if err := validateLockPath(nodePath); err != nil {
		return err
	}
	p := c.fullPath(nodePath)
	st, err := c.stat(ctx, p)
	switch {
	case err != nil:
		return opErr(ctx, "revoke", nodePath, err)
	case st == nil:
		return nil
	case st.EphemeralOwner == 0:
		return wrapf(ErrInvalidArgument, "revoke %s: not a lock node (not ephemeral)", nodePath)
	}
	// Conditional on the version seen, so that the write cannot land on a
	// node created later under the same name; a newer version means another
	// request, or our own retried write, got there first.
	_, err = retry(c, ctx, func() (*zk.Stat, error) {
		return c.zc.Set(ctx, p, revokeMessage, st.Version)
	})
	if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
		return opErr(ctx, "revoke", nodePath, err)
	}
	return nil
}
