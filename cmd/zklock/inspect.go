package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/go-zookeeper/zk"
)

// inspectFlags are inspect's command line.
type inspectFlags struct {
	*common
	json, watch bool
	selector    bool // read a mutex layout as a Selector's
}

const inspectUsage = `Usage: zklock inspect [flags] PATH

Shows the queue of the lock at PATH, in order: each participant's role
(holder or waiter), session id, owner (the node's data: by default the
host's address; "(revoked)" once 'zklock revoke' has replaced it), age,
fencing token and node name, and which recipe the layout belongs to
(mutex, rwlock, semaphore, latch). Works on zklock's and Apache Curator's
locks alike, and on kazoo's (Python): kazoo-lock (a Lock's, or an
Election's: nodes <hex>__lock__<seq>), kazoo-rwlock (ReadLock and
WriteLock: <hex>__rlock__<seq> and __lock__ nodes), kazoo-semaphore (a
pool of leases <hex>, its max_leases as data, its acquirers queued on the
kazoo lock PATH-__lock__ beside it). A path that holds the nodes of two
layouts (Curator's and kazoo's, which do not see each other's nodes) is
"mixed": each layout's nodes are shown, read by its own rules, so that
both holders show. A semaphore is known by its lease nodes
(PATH/leases/..lease-N), or, with none, by an empty PATH/leases beside a
PATH/locks that holds only acquirers' lock nodes; a child named leases or
locks that holds anything else is a path like any other, listed with the
children that are not lock nodes. For a leader latch (zklock's Election, Curator's LeaderLatch)
the holder is the leader, each owner is a participant id, and the
leader's id is shown first.

A Selector (zklock's Selector, Curator's LeaderSelector) is a mutex on
the election's path: its layout is a mutex's, and inspect cannot tell the
two apart. With -selector, inspect reads a mutex layout as a Selector's:
the recipe shows as "selector" and the holder's owner, the participant
id, as the leader; likewise a kazoo-lock as a kazoo Election's
("kazoo-election"). -selector refuses a rwlock's, a semaphore's or a
mixed path's layout.
'zklock leader PATH' prints the leader alone.

  -json       print JSON (field names in 'go doc github.com/zklock/zklock/cmd/zklock')
  -watch      print again on every change of the queue, until SIGINT or
              SIGTERM (with -json, one JSON object per line)
  -selector   read a mutex layout as a Selector's (Curator's LeaderSelector),
              whose holder leads, a kazoo-lock as a kazoo Election's
`

func newInspectFlags() *inspectFlags {
	f := &inspectFlags{common: newCommon("inspect", inspectUsage)}
	f.fs.BoolVar(&f.json, "json", false, "print JSON")
	f.fs.BoolVar(&f.watch, "watch", false, "print again on every change, until interrupted")
	f.fs.BoolVar(&f.selector, "selector", false, "read a mutex layout as a Selector's, whose holder leads")
	return f
}

// runInspect is the inspect command.
func runInspect(args []string, stdout, stderr io.Writer) int {
	f := newInspectFlags()
	return f.exitFor(f.inspect(args, stdout), stdout, stderr)
}

func (f *inspectFlags) inspect(args []string, stdout io.Writer) error {
	p, client, err := f.pathAndClient(args, argPath)
	if err != nil {
		return err
	}
	defer client.Close()
	in := &inspector{c: client, common: f.common, path: p, selector: f.selector}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if !f.watch {
		return f.once(ctx, in, stdout)
	}
	return f.follow(ctx, in, stdout)
}

// once prints the queue. If the lock path does not exist, it says so on
// stderr (after the JSON, with -json), with a hint if a namespace is the
// likely reason, and the exit code is 4.
func (f *inspectFlags) once(ctx context.Context, in *inspector, stdout io.Writer) error {
	v, _, err := in.read(ctx)
	if err != nil {
		return err
	}
	if v.Exists || f.json {
		if err := f.print(stdout, v); err != nil {
			return err
		}
	}
	if !v.Exists {
		return in.missing(ctx)
	}
	return nil
}

// follow prints the queue, then again after every change, until ctx ends.
// Its watches are set on a connection of their own (see
// common.watchConn).
func (f *inspectFlags) follow(ctx context.Context, in *inspector, stdout io.Writer) error {
	conn, err := f.watchConn()
	if err != nil {
		return err
	}
	defer conn.Close()
	in.watch = conn
	for {
		v, changed, err := in.read(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if err := f.print(stdout, v); err != nil {
			return err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil
		}
	}
}

// print writes v as a table, or as JSON.
func (f *inspectFlags) print(w io.Writer, v *queueView) error {
	if f.json {
		enc := json.NewEncoder(w)
		if !f.watch {
			enc.SetIndent("", "  ")
		}
		return enc.Encode(v)
	}
	if f.watch {
		fmt.Fprintf(w, "--- %s\n", time.Now().Format(time.RFC3339))
	}
	return printTable(w, v)
}

// read reads the queue, on the Client. With a watch connection (-watch),
// changed is closed at the next change of the lock's children (or of its
// leases and locks nodes' children) after the listing read.
func (in *inspector) read(ctx context.Context) (v *queueView, changed <-chan struct{}, err error) {
	l, chans, err := in.listWatched(ctx)
	if err != nil {
		return nil, nil, err
	}
	v, err = in.view(ctx, l)
	if err != nil {
		return nil, nil, fmt.Errorf("inspect %s: %w", in.path, err)
	}
	if in.selector {
		if err := asSelector(v); err != nil {
			return nil, nil, err
		}
	}
	return v, anyOf(ctx, chans), nil
}

// lagPause is how long listWatched waits before it lists again when the
// Client's listing and the watch connection's differ, and no watch fires.
const lagPause = 20 * time.Millisecond

// listWatched lists the lock on the Client and, with a watch connection,
// there too, setting watches. The two are sessions of their own, whose
// servers may be a change apart: when the listings differ, it lists both
// again, after the next change or a short pause, until they agree. The
// watches returned then fire at every change after the Client's listing.
func (in *inspector) listWatched(ctx context.Context) (*listing, []<-chan zk.Event, error) {
	for {
		l, err := in.list(ctx)
		if err != nil || in.watch == nil {
			return l, nil, err
		}
		w, chans, err := listWith(in.path, in.watchChildren, nil) // same compares no pool
		if err != nil {
			return nil, nil, err
		}
		if l.same(w) {
			return l, chans, nil
		}
		wctx, cancel := context.WithTimeout(ctx, lagPause)
		select { // anyOf's goroutines end with wctx
		case <-anyOf(wctx, chans):
		case <-wctx.Done():
		}
		cancel()
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
	}
}

// children lists the children of the node at p on the Client, and says
// whether it exists.
func (in *inspector) children(ctx context.Context, p string) ([]string, bool, error) {
	children, _, err := in.c.Children(ctx, p)
	switch {
	case err == nil:
		return children, true, nil
	case errors.Is(err, zk.ErrNoNode):
		return nil, false, nil
	}
	return nil, false, opError("list", p, err)
}

// watchChildren is a lister on the watch connection: it lists the
// children of the node at p and sets a watch on them, or on p's creation
// if p does not exist.
func (in *inspector) watchChildren(p string) ([]string, bool, <-chan zk.Event, error) {
	conn, full := in.watch, in.common.full(p)
	for {
		children, _, ch, err := conn.ChildrenW(full)
		if err == nil {
			return children, true, ch, nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return nil, false, nil, opError("list", p, err)
		}
		exists, _, ch, err := conn.ExistsW(full)
		if err != nil {
			return nil, false, nil, opError("watch", p, err)
		}
		if !exists {
			return nil, false, ch, nil
		}
		// Created meanwhile: list again.
	}
}

// anyOf returns a channel closed when one of chans delivers. Its
// goroutines end then, or when ctx ends.
func anyOf(ctx context.Context, chans []<-chan zk.Event) <-chan struct{} {
	out := make(chan struct{})
	var once sync.Once
	for _, ch := range chans {
		if ch == nil {
			continue
		}
		go func() {
			select {
			case <-ch:
				once.Do(func() { close(out) })
			case <-out:
			case <-ctx.Done():
			}
		}()
	}
	return out
}

// printTable writes v for people: a summary line, then a table.
func printTable(w io.Writer, v *queueView) error {
	switch {
	case !v.Exists:
		fmt.Fprintf(w, "%s: no such node\n", v.Path)
		return nil
	case len(v.Nodes) == 0:
		fmt.Fprintf(w, "%s: free: no participants\n", v.Path)
		printOthers(w, v)
		return nil
	}
	fmt.Fprintf(w, "%s: %s, %s, %s\n", v.Path, v.Recipe, plural(v.Holders, "holder"), plural(v.Waiters, "waiter"))
	switch {
	case v.Recipe == recipeMixed:
		fmt.Fprintln(w, v.mixedLine())
	case v.Leader != nil:
		fmt.Fprintf(w, "leader: %s\n", leaderText(*v.Leader))
	}
	if v.MaxLeases != nil {
		fmt.Fprintf(w, "max leases: %d\n", *v.MaxLeases)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POS\tKIND\tROLE\tSESSION\tOWNER\tAGE\tTOKEN\tNODE")
	for _, n := range v.Nodes {
		kind := n.Kind
		if v.Recipe == recipeMixed && n.Layout != "" {
			kind = n.Layout + " " + kind // the node's reading
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", n.Position, kind, n.Role, n.Session,
			clip(shownOwner(n.Owner), 32), age(time.Duration(n.AgeMS)*time.Millisecond), n.Token, relName(v.Path, n))
	}
	err := tw.Flush()
	printOthers(w, v)
	return err
}

// leaderText is a leader's id for people: quoted (an empty id shows), or
// "(revoked)".
func leaderText(id string) string {
	if shown := shownOwner(id); shown != id {
		return shown
	}
	return fmt.Sprintf("%q", id)
}

// printOthers lists the children of the lock path that are not lock
// nodes, if any.
func printOthers(w io.Writer, v *queueView) {
	if len(v.Others) > 0 {
		fmt.Fprintf(w, "not lock nodes, not counted: %s\n", strings.Join(v.Others, ", "))
	}
}

// relName is a node's path below the lock path, or its full path if it
// is not below (a kazoo Semaphore's acquirer, under PATH-__lock__).
func relName(lock string, n nodeView) string {
	if rel, ok := strings.CutPrefix(n.Path, strings.TrimSuffix(lock, "/")+"/"); ok {
		return rel
	}
	return n.Path
}

// plural is "1 what" or "n whats".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// clip shortens s to n characters.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-3]) + "..."
}

// age is a duration for people: tenths of seconds under a minute.
func age(d time.Duration) string {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
