package zklock

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Revoke asks the holder of the lock node at nodePath (relative to the
// Client's namespace, as [Mutex.Participants] returns it) to release it, by
// writing Curator's revocation message into the node. Holders that called
// [Mutex.MakeRevocable], in Go or Java, are told; revocation is cooperative.
// Revoking a node that no longer exists is not an error.
func Revoke(ctx context.Context, c *Client, nodePath string) error {
	if c == nil || ctx == nil {
		return fmt.Errorf("zklock: revoke %s: nil Client or context: %w", nodePath, ErrInvalidArgument)
	}
	if err := c.usable(); err != nil {
		return fmt.Errorf("zklock: revoke %s: %w", nodePath, err)
	}
	if err := validatePath(nodePath); err != nil {
		return err
	}
	p := c.fullPath(nodePath)
	_, err := retry(c, ctx, func() (*zk.Stat, error) {
		return c.conn.Set(p, revokeMessage, -1)
	})
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("zklock: revoke %s: %w", nodePath, err)
	}
	return nil
}
