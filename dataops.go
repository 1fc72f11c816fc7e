package zklock

import (
	"context"

	"github.com/go-zookeeper/zk"
)

// The data operations below read and write nodes on the Client's own
// session, for what the recipes do not cover: a holder's records, a
// configuration beside a lock. They work on every Client, whichever
// transport it runs on, and replace Conn's calls on a Client made by
// Connect, whose Conn is nil. Their paths are relative to the Client's
// namespace (see "Paths" in the package doc), and so are the paths they
// return. Each returns when ctx ends, with an error wrapping ctx.Err().
//
// Reads (Get, Exists, Children) that fail with a connection loss are
// retried under the retry policy, as the recipes' reads are. Writes
// (Create, Set, Delete) are sent once: one that fails with a connection
// loss (an error wrapping zk.ErrConnectionClosed) may or may not have been
// applied. ZooKeeper's own errors come as go-zookeeper's sentinels
// (zk.ErrNoNode, zk.ErrNodeExists, zk.ErrBadVersion, zk.ErrNoAuth...),
// wrapped with the operation and the path; a bad path gets
// ErrInvalidPath, a closed Client ErrClosed.

// Get returns the data and Stat of the node at path.
func (c *Client) Get(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	full, err := c.dataOp(ctx, "get", path)
	if err != nil {
		return nil, nil, err
	}
	type got struct {
		data []byte
		st   *zk.Stat
	}
	g, err := retry(c, ctx, func() (got, error) {
		data, st, err := c.zc.Get(ctx, full)
		return got{data, st}, err
	})
	if err != nil {
		return nil, nil, wrapf(closedErr(err), "get %s", path)
	}
	return g.data, g.st, nil
}

// Exists reports whether the node at path exists, and its Stat if so.
func (c *Client) Exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	full, err := c.dataOp(ctx, "exists", path)
	if err != nil {
		return false, nil, err
	}
	st, err := c.stat(ctx, full)
	if err != nil {
		return false, nil, wrapf(closedErr(err), "exists %s", path)
	}
	return st != nil, st, nil
}

// Children returns the names of the children of the node at path, in no
// particular order, and its Stat.
func (c *Client) Children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	full, err := c.dataOp(ctx, "children", path)
	if err != nil {
		return nil, nil, err
	}
	type got struct {
		children []string
		st       *zk.Stat
	}
	g, err := retry(c, ctx, func() (got, error) {
		children, st, err := c.zc.Children(ctx, full)
		return got{children, st}, err
	})
	if err != nil {
		return nil, nil, wrapf(closedErr(err), "children %s", path)
	}
	return g.children, g.st, nil
}

// Create creates the node at path with data, flags (zk.FlagEphemeral,
// zk.FlagSequence, both, or 0 for a persistent node) and the Client's ACL
// (see [WithACL]), and returns its path: with its sequence number, if
// sequential. Its parent must exist ([Client.EnsurePath] makes it). An
// ephemeral node lives as long as the Client's session.
func (c *Client) Create(ctx context.Context, path string, data []byte, flags int32) (string, error) {
	full, err := c.dataOp(ctx, "create", path)
	if err != nil {
		return "", err
	}
	if _, err := modeOf(path, flags); err != nil {
		return "", errorf(ErrInvalidArgument, "create %s: flags %d: want 0, zk.FlagEphemeral, zk.FlagSequence or both", path, flags)
	}
	if path == "/" {
		// The root exists; a sequential node under it needs a name to
		// follow ("/n-"): under a namespace, "/" would make a sibling of
		// the namespace's node, outside it.
		return "", errorf(ErrInvalidPath, "create /: the root exists (a sequential node needs a name, such as /n-)")
	}
	acl, err := c.aclFor(full)
	if err != nil {
		return "", wrapf(err, "create %s", path)
	}
	name, err := await(c, ctx, func() (string, error) { return c.zc.Create(ctx, full, data, flags, acl) }, nil)
	if err != nil {
		return "", wrapf(closedErr(err), "create %s", path)
	}
	return c.relPath(name), nil
}

// Set sets the data of the node at path if its version is version (-1:
// whatever its version), and returns its Stat after the change.
func (c *Client) Set(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	full, err := c.dataOp(ctx, "set", path)
	if err != nil {
		return nil, err
	}
	st, err := await(c, ctx, func() (*zk.Stat, error) { return c.zc.Set(ctx, full, data, version) }, nil)
	if err != nil {
		return nil, wrapf(closedErr(err), "set %s", path)
	}
	return st, nil
}

// Delete deletes the node at path if its version is version (-1: whatever
// its version). A node with children is not deleted (zk.ErrNotEmpty).
func (c *Client) Delete(ctx context.Context, path string, version int32) error {
	full, err := c.dataOp(ctx, "delete", path)
	if err != nil {
		return err
	}
	if _, err := await(c, ctx, func() (struct{}, error) { return struct{}{}, c.zc.Delete(ctx, full, version) }, nil); err != nil {
		return wrapf(closedErr(err), "delete %s", path)
	}
	return nil
}

// dataOp checks a data operation's arguments and the Client, and returns
// the operation's full path.
func (c *Client) dataOp(ctx context.Context, op, path string) (string, error) {
	switch {
	case c.zero():
		return "", errZeroClient
	case ctx == nil:
		return "", errorf(ErrInvalidArgument, "%s %s: nil context", op, quotePath(path))
	}
	if err := validatePath(path); err != nil {
		return "", wrapf(err, "%s", op)
	}
	if err := c.usable(); err != nil {
		return "", wrapf(err, "%s %s", op, path)
	}
	return c.fullPath(path), nil
}
