package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock"
)

const listUsage = `Usage: zklock list [flags] PREFIX

Lists the locks under PREFIX (PREFIX itself included), walking its whole
subtree: one line per lock that has participants, with its path, recipe
(mutex, rwlock, semaphore: the layouts 'zklock inspect' knows), number of
holders and of waiters, and the holders' owners. A free lock whose empty
node remains is not listed. A lock that cannot be read (an ACL refuses
this session) is listed with the error, and list exits 1 after the listing.

  -json    print one JSON array of {"path", "recipe", "holders", "waiters",
           "owners", "error"}
`

// listFlags are list's command line.
type listFlags struct {
	*common
	json bool
}

func newListFlags() *listFlags {
	f := &listFlags{common: newCommon("list", listUsage)}
	f.fs.BoolVar(&f.json, "json", false, "print JSON")
	return f
}

// lockSummary is one line of list; its JSON form is documented in the
// usage text.
type lockSummary struct {
	Path    string   `json:"path"`
	Recipe  string   `json:"recipe"`
	Holders int      `json:"holders"`
	Waiters int      `json:"waiters"`
	Owners  []string `json:"owners"`          // the holders' owners, in queue order
	Error   string   `json:"error,omitempty"` // why the lock could not be read
}

// runList is the list command.
func runList(args []string, stdout, stderr io.Writer) int {
	f := newListFlags()
	return f.exitFor(f.list(args, stdout), stdout, stderr)
}

func (f *listFlags) list(args []string, stdout io.Writer) error {
	root, client, err := f.pathAndClient(args, "PREFIX (the path whose locks to list, such as /)")
	if err != nil {
		return err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	w := &walker{c: client, common: f.common, locks: []lockSummary{}}
	if err := w.walk(ctx, root, true); err != nil {
		return err
	}
	if err := f.print(stdout, root, w.locks); err != nil {
		return err
	}
	if w.failed > 0 {
		return fmt.Errorf("%s under %s could not be read", plural(w.failed, "lock"), root)
	}
	return nil
}

// walker finds the locks of a subtree.
type walker struct {
	c      *zklock.Client
	common *common
	locks  []lockSummary // found so far, in depth-first order of sorted names
	failed int           // locks that could not be read
}

// walk adds the locks at and under p. top says p is the prefix given,
// whose absence is an error.
func (w *walker) walk(ctx context.Context, p string, top bool) error {
	if p == "/zookeeper" || ctx.Err() != nil {
		return ctx.Err()
	}
	children, _, err := w.c.Conn().Children(w.common.full(p))
	switch {
	case errors.Is(err, zk.ErrNoNode) && top:
		return noNode("no node %s", p)
	case errors.Is(err, zk.ErrNoNode):
		return nil // gone meanwhile
	case err != nil:
		return opError("list", p, err)
	}
	slices.Sort(children)
	below := children
	if recipe := detect(children); recipe == recipeMutex || recipe == recipeLatch || recipe == recipeRWLock || recipe == recipeSemaphore {
		below = w.add(ctx, p, children)
	}
	for _, ch := range below {
		if err := w.walk(ctx, path.Join(p, ch), false); err != nil {
			return err
		}
	}
	return nil
}

// add reads the lock at p, whose children are given, and records it if
// it has participants. It returns the children to walk further: those
// that are not the lock's own nodes.
func (w *walker) add(ctx context.Context, p string, children []string) []string {
	in := &inspector{c: w.c, common: w.common, path: p}
	v, err := in.view(ctx, children, true)
	if err != nil {
		w.failed++
		w.locks = append(w.locks, lockSummary{Path: p, Recipe: detect(children), Owners: []string{}, Error: err.Error()})
		return nil
	}
	if len(v.Nodes) > 0 {
		s := lockSummary{Path: p, Recipe: v.Recipe, Holders: v.Holders, Waiters: v.Waiters, Owners: []string{}}
		for _, n := range v.Nodes {
			if n.Role == roleHolder {
				s.Owners = append(s.Owners, n.Owner)
			}
		}
		w.locks = append(w.locks, s)
	}
	if v.Recipe == recipeSemaphore {
		return nil // its leases and locks nodes hold its own nodes only
	}
	return v.Others
}

// print writes the locks found as a table, or as JSON.
func (f *listFlags) print(w io.Writer, prefix string, locks []lockSummary) error {
	if f.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(locks)
	}
	if len(locks) == 0 {
		fmt.Fprintf(w, "no locks with participants under %s\n", prefix)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tRECIPE\tHOLDERS\tWAITERS\tOWNERS")
	for _, l := range locks {
		owners := clip(strings.Join(l.Owners, ","), 48)
		if l.Error != "" {
			owners = "error: " + l.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", l.Path, l.Recipe, l.Holders, l.Waiters, owners)
	}
	return tw.Flush()
}
