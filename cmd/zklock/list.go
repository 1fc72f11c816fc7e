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
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/layout"
)

const listUsage = `Usage: zklock list [flags] PREFIX

Lists the locks under PREFIX (PREFIX itself included), walking its whole
subtree: one line per lock that has participants, with its path, recipe
(mutex, rwlock, semaphore or latch: the layouts 'zklock inspect' knows; a
Selector's is a mutex's; kazoo's kazoo-lock, an Election's too,
kazoo-rwlock and kazoo-semaphore; mixed for a path with two layouts'
nodes, shown as mixed:mutex+kazoo-lock, whose holders are all counted),
number of holders and of waiters, how long its holder has held (the
oldest holder's, from its node's creation time), and the holders'
owners. A free lock whose empty node remains is not listed. The walk
goes into every child that is not a lock's own node, below a semaphore
too; a child named leases or locks is a semaphore's only if it holds a
semaphore's lease or lock nodes (see 'zklock help inspect').
A lock that cannot be read, or a node that cannot be listed (recipe
unknown), as when an ACL refuses this session, is listed with the error,
whatever the filters; the walk goes on around it, and list exits 1 after
the listing.

  -waiting         list only the locks that have waiters
  -older-than D    list only the locks whose holder has held longer than D
                   (such as 10m): a stuck holder
  -json            print one JSON array of {"path", "recipe", "holders",
                   "waiters", "age_ms", "held_since", "owners", "error",
                   "readings"} ("readings": a mixed path's recipes)
`

// listFlags are list's command line.
type listFlags struct {
	*common
	json      bool
	waiting   bool
	olderThan time.Duration
}

func newListFlags() *listFlags {
	f := &listFlags{common: newCommon("list", listUsage)}
	f.fs.BoolVar(&f.json, "json", false, "print JSON")
	f.fs.BoolVar(&f.waiting, "waiting", false, "list only the locks that have waiters")
	f.fs.DurationVar(&f.olderThan, "older-than", 0, "list only the locks whose holder has held longer than `D`")
	f.check = func() error {
		if f.olderThan < 0 {
			return fmt.Errorf("%w: -older-than %v: want a duration of 0 or more", errUsage, f.olderThan)
		}
		return nil
	}
	return f
}

// lockSummary is one line of list; its JSON form is documented in the
// usage text.
type lockSummary struct {
	Path    string `json:"path"`
	Recipe  string `json:"recipe"`
	Holders int    `json:"holders"`
	Waiters int    `json:"waiters"`
	// The oldest holder's age, in milliseconds (0 without a holder), and
	// its node's creation time.
	AgeMS     int64      `json:"age_ms"`
	HeldSince *time.Time `json:"held_since,omitempty"`
	Owners    []string   `json:"owners"`          // the holders' owners, in queue order
	Error     string     `json:"error,omitempty"` // why the lock could not be read
	// Readings are a mixed path's recipes, one per reading.
	Readings []string `json:"readings,omitempty"`
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
	w := &walker{c: client, common: f.common, keep: f.keep, locks: []lockSummary{}, counted: map[string]bool{}}
	if err := w.walk(ctx, root, true); err != nil {
		return err
	}
	if err := f.print(stdout, root, w.locks); err != nil {
		return err
	}
	if w.failed > 0 {
		return fmt.Errorf("%s under %s could not be read", plural(w.failed, "path"), root)
	}
	return nil
}

// walker finds the locks of a subtree.
type walker struct {
	c      *zklock.Client
	common *common
	keep   func(lockSummary) bool // whether a lock read is listed
	locks  []lockSummary          // found so far, in depth-first order of sorted names
	failed int                    // locks and paths that could not be read
	// counted are the kazoo Semaphores' locks (PATH-__lock__) whose
	// acquirers the Semaphore's row counts: the walk reaches them after
	// the Semaphore, and does not list them again.
	counted map[string]bool
}

// walk adds the locks at and under p. top says p is the prefix given,
// whose absence, or a failure to list it, is an error. Any other node
// that cannot be listed is recorded as such and the walk goes on around
// it; only a lost connection (or ctx's end) ends the walk.
func (w *walker) walk(ctx context.Context, p string, top bool) error {
	if p == "/zookeeper" || ctx.Err() != nil {
		return ctx.Err()
	}
	in := &inspector{c: w.c, common: w.common, path: p}
	l, err := in.list(ctx)
	switch {
	case err != nil && ((top && l == nil) || lost(err)):
		return err
	case err != nil && l == nil:
		w.fail(p, recipeUnknown, err)
		return nil
	case !l.exists && top:
		return noNode("no node %s", p)
	case !l.exists:
		return nil // gone meanwhile
	}
	// An err left here is a failure to list p's leases or locks node: p
	// is then read as no Semaphore's, and the walk records the failure
	// when it reaches that node.
	below := l.children
	rs, _ := readings(l)
	switch recipe := recipeOf(rs); {
	case recipe == recipeKazooLock && w.counted[p]:
		// A kazoo Semaphore's lock, whose contenders are its acquirers:
		// counted in the Semaphore's row.
		below = slices.DeleteFunc(slices.Clone(below), isKazooContender)
	case isLock(recipe):
		below = w.add(ctx, in, l, recipe)
	}
	for _, ch := range below {
		if err := w.walk(ctx, path.Join(p, ch), false); err != nil {
			return err
		}
	}
	return nil
}

// lost reports whether err says that the session or its connection is
// gone, so that nothing more can be read.
func lost(err error) bool {
	return slices.ContainsFunc([]error{zk.ErrSessionExpired, zk.ErrNoServer, zk.ErrConnectionClosed, zk.ErrClosing,
		zklock.ErrClosed, context.Canceled, context.DeadlineExceeded}, func(e error) bool { return errors.Is(err, e) })
}

// fail records that the node at p, where the walk found a lock of recipe
// (unknown if p could not be listed), could not be read.
func (w *walker) fail(p, recipe string, err error) {
	w.failed++
	w.locks = append(w.locks, lockSummary{Path: p, Recipe: recipe, Owners: []string{}, Error: err.Error()})
}

// add reads the lock of recipe at in.path, listed in l, and records it
// if it has participants and passes the filters (w.keep), or if it cannot
// be read. It returns the nodes to walk further, relative to the lock
// path: those that are not the lock's own nodes (for a Semaphore, those
// beside its leases and lock nodes too), read or, if the lock could not
// be read, told by their names.
func (w *walker) add(ctx context.Context, in *inspector, l *listing, recipe string) []string {
	v, err := in.view(ctx, l)
	if err != nil {
		w.fail(in.path, recipe, err)
		return append(l.beside(), l.mayBeMutex()...)
	}
	if s := summary(v); len(v.Nodes) > 0 && w.keep(s) {
		w.locks = append(w.locks, s)
	}
	if slices.Contains(append([]string{v.Recipe}, v.Readings...), recipeKazooSemaphore) {
		w.counted[layout.KazooSemaphoreLock(in.path)] = true
	}
	return append(slices.Clone(v.Others), l.mayBeMutex()...)
}

// summary sums up the lock v.
func summary(v *queueView) lockSummary {
	s := lockSummary{Path: v.Path, Recipe: v.Recipe, Holders: v.Holders, Waiters: v.Waiters, Owners: []string{}, Readings: v.Readings}
	for _, n := range v.Nodes {
		if n.Role != roleHolder {
			continue
		}
		s.Owners = append(s.Owners, n.Owner)
		if s.HeldSince == nil || n.Created.Before(*s.HeldSince) {
			s.HeldSince, s.AgeMS = &n.Created, n.AgeMS
		}
	}
	return s
}

// keep reports whether the lock s passes the filters.
func (f *listFlags) keep(s lockSummary) bool {
	switch {
	case f.waiting && s.Waiters == 0:
		return false
	case f.isSet("older-than") && (s.HeldSince == nil || s.AgeMS <= f.olderThan.Milliseconds()):
		return false
	}
	return true
}

// filters describes the filters given, for the line that says no lock
// passed them: "with waiters, held longer than 10m0s".
func (f *listFlags) filters() string {
	var fs []string
	if f.waiting {
		fs = append(fs, "with waiters")
	}
	if f.isSet("older-than") {
		fs = append(fs, "held longer than "+f.olderThan.String())
	}
	return strings.Join(fs, ", ")
}

// print writes the locks found as a table, or as JSON.
func (f *listFlags) print(w io.Writer, prefix string, locks []lockSummary) error {
	if f.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(locks)
	}
	if len(locks) == 0 && f.filters() != "" {
		fmt.Fprintf(w, "no locks under %s %s\n", prefix, f.filters())
		return nil
	}
	if len(locks) == 0 {
		fmt.Fprintf(w, "no locks with participants under %s\n", prefix)
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PATH\tRECIPE\tHOLDERS\tWAITERS\tAGE\tOWNERS")
	for _, l := range locks {
		held := "-"
		if l.HeldSince != nil {
			held = age(time.Duration(l.AgeMS) * time.Millisecond)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", l.Path, recipeText(l), l.Holders, l.Waiters, held, ownersText(l))
	}
	return tw.Flush()
}

// recipeText is the RECIPE column: a mixed path's shows its readings
// ("mixed:mutex+kazoo-lock").
func recipeText(l lockSummary) string {
	if len(l.Readings) == 0 {
		return l.Recipe
	}
	return l.Recipe + ":" + strings.Join(l.Readings, "+")
}

// ownersText is the OWNERS column: the holders' owners, or the error.
func ownersText(l lockSummary) string {
	if l.Error != "" {
		return "error: " + l.Error
	}
	shown := make([]string, len(l.Owners))
	for i, o := range l.Owners {
		shown[i] = shownOwner(o)
	}
	return clip(strings.Join(shown, ","), 48)
}
