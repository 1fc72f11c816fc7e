package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zklock/zklock"
)

// errStale is returned by fencedWrite for a token older than the store's.
var errStale = errors.New("stale fencing token")

// fencedWrite is the store's side of fencing: it accepts value only with a
// token at least as new as the last one it accepted, in a compare-and-set
// on the store node's version. Like any store client, it tries again when
// the connection fails under it (alice's session has only just come back),
// until ctx ends: a write the network dropped is neither accepted nor
// rejected.
func fencedWrite(ctx context.Context, c *zklock.Client, token int64, value string) error {
	for {
		err := casWrite(ctx, c, token, value)
		if !errors.Is(err, zk.ErrNoServer) && !errors.Is(err, zk.ErrConnectionClosed) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("write %q with token %d: %w (last: %w)", value, token, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// casWrite is one try of fencedWrite: it retries only a lost race with
// another writer.
func casWrite(ctx context.Context, c *zklock.Client, token int64, value string) error {
	for {
		data, stat, err := c.Get(ctx, storePath)
		if err != nil {
			return err
		}
		var last int64
		var old string
		if _, err := fmt.Sscanf(string(data), "%d %s", &last, &old); err != nil {
			return fmt.Errorf("store holds %q: %w", data, err)
		}
		if token < last {
			return fmt.Errorf("write %q with token %d: %w (the store has seen %d)", value, token, errStale, last)
		}
		_, err = c.Set(ctx, storePath, fmt.Appendf(nil, "%d %s", token, value), stat.Version)
		if !errors.Is(err, zk.ErrBadVersion) {
			if err == nil {
				return nil
			}
			return fmt.Errorf("write %q with token %d: %w", value, token, err)
		}
	}
}

// report prints the outcome of a fenced write; a rejection is no error of
// the example, any other failure is.
func report(out io.Writer, who string, err error) error {
	switch {
	case err == nil:
		fmt.Fprintf(out, "%-6s write accepted by the store\n", who+":")
	case errors.Is(err, errStale):
		fmt.Fprintf(out, "%-6s fenced write REJECTED by the store: %v\n", who+":", err)
	default:
		return err
	}
	return nil
}

// printStore prints what the store holds at the end.
func printStore(ctx context.Context, out io.Writer, c *zklock.Client) error {
	data, _, err := c.Get(ctx, storePath)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "store: %q\n", data)
	return nil
}
