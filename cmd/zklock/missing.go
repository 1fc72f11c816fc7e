package main

import (
	"context"
	"path"
	"strings"

	"github.com/zklock/zklock"
)

// maxTopLevel bounds how many top-level nodes missing looks under for the
// lock path, so that a mistyped path costs a few reads, not a scan.
const maxTopLevel = 32

// missing reports that the lock path does not exist (exit code 4), with
// a hint when a namespace is the likely reason: without -namespace, the
// path's first segment does not exist at the root, or the path exists
// under a top-level node (the namespace of the Client that made it).
func (in *inspector) missing(ctx context.Context) error {
	if in.common.namespace != "" {
		return noNode("no node %s (-namespace %s: %s)", in.path, in.common.namespace, in.common.full(in.path))
	}
	if found := underTopLevel(ctx, in.c, in.path); len(found) > 0 {
		return noNode("no node %s; it exists under %s: pass -namespace %s",
			in.path, strings.Join(found, ", "), strings.TrimPrefix(found[0], "/"))
	}
	first := "/" + strings.SplitN(in.path[1:], "/", 2)[0]
	if ok, _, err := in.c.Exists(ctx, first); err == nil && !ok && first != "/" {
		return noNode("no node %s; if the lock's Client uses a namespace, pass -namespace", in.path)
	}
	return noNode("no node %s: the lock was never used, or its empty node was removed", in.path)
}

// underTopLevel returns the top-level nodes /t under which p exists, as
// /t/p would if /t were a Client's namespace. A failed read counts as not
// found: this is only a hint. c has no namespace: its paths are full.
func underTopLevel(ctx context.Context, c *zklock.Client, p string) []string {
	tops, _, err := c.Children(ctx, "/")
	if err != nil || p == "/" {
		return nil
	}
	var found []string
	for i, t := range tops {
		if i == maxTopLevel {
			break
		}
		if t == "zookeeper" {
			continue
		}
		ok, _, err := c.Exists(ctx, path.Join("/"+t, p))
		if err == nil && ok {
			found = append(found, "/"+t)
		}
	}
	return found
}
