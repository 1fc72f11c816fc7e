package zklock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Multi runs ops in one ZooKeeper transaction behind a check of the hold's
// node (every member's node, for a [MultiLock]), so that the transaction
// commits only while the hold exists: the guarded write of fencing. The
// ops are *zk.CreateRequest, *zk.SetDataRequest, *zk.DeleteRequest and
// *zk.CheckVersionRequest, with paths relative to the Client's namespace
// (see "Paths" in the package doc); a check made by [Hold.CheckOp],
// [Mutex.CheckOp] or [Lease.CheckOp], of this hold or of another, whose
// path is the node's full path, is taken as it is.
// A create with no ACL gets the Client's (see [WithACL]). Multi returns
// one response per op, paths relative to the namespace.
//
// When the check fails, because the hold's node is gone, Multi returns an
// error wrapping ErrLockLost, and nothing is written. When an op fails, it
// returns that op's own error (such as zk.ErrNoNode for data that does not
// exist), naming the op, and nothing is written. Multi returns an error
// wrapping ErrNotHeld after the Hold's last Release, ErrLockLost after a
// loss, and ErrInvalidArgument for an op of another type or a nil ctx,
// ErrInvalidPath for a bad path. Multi is not retried: when the
// connection drops or ctx ends before the reply, the transaction may or
// may not have committed, and the error (wrapping zk.ErrConnectionClosed,
// or ctx.Err()) says so.
func (hd *Hold) Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	c, nodes, err := hd.guard(ctx)
	if err != nil {
		return nil, err
	}
	req := make([]any, 0, len(nodes)+len(ops))
	for _, n := range nodes {
		req = append(req, &zk.CheckVersionRequest{Path: n.path, Version: -1})
	}
	for i, op := range ops {
		if lockCheck(c, op) { // from a CheckOp: its path is full already
			req = append(req, op)
			continue
		}
		full, err := c.inNamespace(op)
		if err != nil {
			return nil, wrapf(err, "multi %s: op %d", hd.path, i)
		}
		req = append(req, full)
	}
	res, err := await(c, ctx, func() ([]zk.MultiResponse, error) { return c.zc.Multi(ctx, req...) }, nil)
	if err == nil {
		res = res[len(nodes):]
		for i := range res {
			res[i].String = c.relPath(res[i].String)
		}
		return res, nil
	}
	return nil, hd.multiErr(ctx, ops, nodes, res, err)
}

// lockCheck reports whether op is a check of a lock node by its full
// path, as the CheckOp methods make them for Conn().Multi: a check whose
// path lies in c's namespace and names a protected node ("_c_<uuid>-...",
// the names zklock and Curator give lock nodes). No path that a caller
// means relative to the namespace has that shape: it would name a lock
// node under a copy of the namespace inside itself.
func lockCheck(c *Client, op any) bool {
	check, ok := op.(*zk.CheckVersionRequest)
	ns := c.opts.namespace
	if !ok || check == nil || ns == "" || !strings.HasPrefix(check.Path, ns+"/") {
		return false
	}
	return isProtected(path.Base(check.Path))
}

// guard returns the Client and the nodes that a guarded write checks, or
// why there is none to check.
func (hd *Hold) guard(ctx context.Context) (*Client, []*lockNode, error) {
	switch {
	case hd == nil || hd.h == nil:
		return nil, nil, errZeroHold
	case ctx == nil:
		return nil, nil, wrapf(ErrInvalidArgument, "multi %s: nil context", hd.path)
	}
	if err := hd.h.check("multi", hd.path); err != nil {
		return nil, nil, err
	}
	c, nodes, err := hd.h.nodes()
	if err != nil {
		return nil, nil, wrapf(err, "multi %s", hd.path)
	}
	return c, nodes, nil
}

// multiErr explains why a guarded transaction failed: the check (the hold
// is gone), one of the caller's ops, or the connection (outcome unknown).
func (hd *Hold) multiErr(ctx context.Context, ops []any, nodes []*lockNode, res []zk.MultiResponse, err error) error {
	if len(res) == len(nodes)+len(ops) {
		for i, n := range nodes {
			if res[i].Error != nil {
				return cmp.Or(hd.h.check("multi", hd.path),
					errorf(ErrLockLost, "multi %s: lock lost: node %s is gone", hd.path, hd.h.relPath(n.path)))
			}
		}
		for i, r := range res[len(nodes):] {
			if r.Error != nil {
				return wrapf(r.Error, "multi %s: op %d (%s)", hd.path, i, opName(ops[i]))
			}
		}
	}
	if retryable(err) || errors.Is(err, ctx.Err()) {
		return opErr(ctx, "multi", hd.path, fmt.Errorf("outcome unknown: %w", err))
	}
	return wrapf(err, "multi %s", hd.path)
}

// opName names a transaction op and its path, for errors.
func opName(op any) string {
	switch o := op.(type) {
	case *zk.CreateRequest:
		return "create " + o.Path
	case *zk.SetDataRequest:
		return "set " + o.Path
	case *zk.DeleteRequest:
		return "delete " + o.Path
	case *zk.CheckVersionRequest:
		return "check " + o.Path
	}
	return fmt.Sprintf("%T", op)
}

// inNamespace returns a copy of a transaction op with its path in the
// Client's namespace (and, for a create without an ACL, the Client's ACL).
func (c *Client) inNamespace(op any) (any, error) {
	var p *string
	switch o := op.(type) {
	case *zk.CreateRequest:
		if o != nil {
			cp := *o
			if err := c.fillACL(&cp); err != nil {
				return nil, err
			}
			op, p = &cp, &cp.Path
		}
	case *zk.SetDataRequest:
		if o != nil {
			cp := *o
			op, p = &cp, &cp.Path
		}
	case *zk.DeleteRequest:
		if o != nil {
			cp := *o
			op, p = &cp, &cp.Path
		}
	case *zk.CheckVersionRequest:
		if o != nil {
			cp := *o
			op, p = &cp, &cp.Path
		}
	}
	if p == nil {
		return nil, fmt.Errorf("%T is not a create, set, delete or check request: %w", op, ErrInvalidArgument)
	}
	if err := validatePath(*p); err != nil {
		return nil, err
	}
	*p = c.fullPath(*p)
	return op, nil
}

// fillACL gives a create without an ACL the Client's ACL for its path.
func (c *Client) fillACL(req *zk.CreateRequest) error {
	if len(req.Acl) > 0 {
		return nil
	}
	acl, err := c.aclFor(c.fullPath(req.Path))
	req.Acl = acl
	return err
}
