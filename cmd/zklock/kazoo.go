package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
	"github.com/zklock/zklock/internal/layout"
)

// kazoo's layout (Python's kazoo 2.x, kazoo/recipe/lock.py), read with
// the library's own predicates (internal/layout), so that the tool and
// the library never disagree on who holds:
//
//   - a Lock, a WriteLock and an Election queue "<uuid hex>__lock__<seq>"
//     nodes under the lock's path, a ReadLock "<uuid hex>__rlock__<seq>"
//     nodes, each with its identifier as data, in the order of their
//     sequences (as text); a writer waits for any contender before it, a
//     reader for the writers before it only;
//   - a Semaphore keeps a pool node at its path, whose data is its
//     max_leases, with a lease per holder ("<uuid hex>"), and queues its
//     acquirers on a kazoo Lock beside the pool, at PATH-__lock__.

// reading is one recipe's reading of a lock path: the recipe, and the
// path's children that are its nodes (or, for Curator's layout, all
// those that are not kazoo's).
type reading struct {
	recipe string
	names  []string
}

// readings reads the children of the lock path l lists in each layout:
// kazoo's contenders as a kazoo Lock's or ReadLock/WriteLock's; the
// leases of a kazoo Semaphore (see kazooPool); and the other children in
// Curator's layout (detect). The last is a reading only if it finds a
// lock, or if there is no other reading (a free path, a path of no layout
// known); otherwise those children are rest, none of them a lock node. A
// path with more than one reading is a mix-up (two layouts, as a rule,
// whose processes do not see each other's nodes, and where zklock
// refuses to acquire): each reading is kept, Curator's first, so that no
// held lock is hidden.
func readings(l *listing) (rs []reading, rest []string) {
	var kz, leases []string
	for _, ch := range l.children {
		switch {
		case isKazooContender(ch):
			kz = append(kz, ch)
		case l.kazooPool() && layout.IsKazooLease(ch):
			leases = append(leases, ch)
		default:
			rest = append(rest, ch)
		}
	}
	if r := detect(rest, l.sem != nil); isLock(r) || len(kz)+len(leases) == 0 {
		rs, rest = append(rs, reading{r, rest}), nil
	}
	if len(kz) > 0 {
		recipe := recipeKazooLock
		if slices.ContainsFunc(kz, func(n string) bool { k, _, _ := layout.ParseKazoo(n); return k == layout.KazooReadName }) {
			recipe = recipeKazooRWLock
		}
		rs = append(rs, reading{recipe, kz})
	}
	if len(leases) > 0 {
		rs = append(rs, reading{recipeKazooSemaphore, leases})
	}
	return rs, rest
}

// recipeOf is the recipe of a path read as rs: mixed for more than one
// reading.
func recipeOf(rs []reading) string {
	if len(rs) == 1 {
		return rs[0].recipe
	}
	return recipeMixed
}

// layoutOf is the layout of recipe's nodes.
func layoutOf(recipe string) string {
	if strings.HasPrefix(recipe, "kazoo-") {
		return layoutKazoo
	}
	return layoutCurator
}

// isKazooContender reports whether name is a kazoo contender's node, as
// kazoo's pattern finds them.
func isKazooContender(name string) bool {
	_, _, ok := layout.ParseKazoo(name)
	return ok
}

// kazooPool reports whether the lock path is a kazoo Semaphore's pool,
// as far as its listing tells: it has a lease's name, 32 hex digits,
// among its children (see listWith), and the Semaphore's lock,
// PATH-__lock__, exists beside it, or, if that was deleted (an
// operator's cleanup while a lease is out: the lease still holds, and
// must be shown) or cannot be listed, the path's data is a max_leases.
// A name alone is not enough: other software names ephemeral nodes with
// uuid hex too (a service registry's members).
func (l *listing) kazooPool() bool {
	return l.pool
}

// kazooOrder returns kazoo's contenders names in kazoo's order: by
// sequence, as text (a sequence past 2^31 is negative and sorts first);
// by name for a sequence shared (a zklock writer's downgrade).
func kazooOrder(names []string) []string {
	out := slices.Clone(names)
	slices.SortFunc(out, func(a, b string) int {
		_, sa, _ := layout.ParseKazoo(a)
		_, sb, _ := layout.ParseKazoo(b)
		return cmp.Or(strings.Compare(sa, sb), strings.Compare(a, b))
	})
	return out
}

// kazoo fills v with the queue of a kazoo Lock (or Election, or WriteLock
// alone: kind "lock"), or with rw that of a ReadLock and WriteLock (kinds
// "read" and "write"), from its contenders names. Each holds or waits by
// layout.KazooGetsTheLock among the contenders that still exist when
// read, as kazoo decides once it sees the nodes ahead gone: a writer is
// blocked by every contender before it, a reader by the writers before
// it. A contender that is not ephemeral (kazoo's acquire(ephemeral=False))
// takes part, as kazoo counts it.
func (in *inspector) kazoo(ctx context.Context, v *queueView, names []string, rw bool) error {
	start := len(v.Nodes)
	for _, name := range kazooOrder(names) {
		kind, _, _ := layout.ParseKazoo(name)
		shown := "lock"
		switch {
		case kind == layout.KazooReadName:
			shown = "read"
		case rw:
			shown = "write"
		}
		n := nodeSpec{dir: in.path, name: name, queue: "lock", kind: shown, role: roleWaiter, layout: layoutKazoo, persistent: true}
		if err := in.addNode(ctx, v, n); err != nil {
			return err
		}
	}
	read := v.Nodes[start:]
	present := make([]string, len(read))
	for i, n := range read {
		present[i] = n.Name
	}
	for i, n := range read {
		held, _, _ := layout.KazooGetsTheLock(present, n.Name, layout.KazooBlockers(n.Kind == "write")...)
		read[i].Role = roleOf(held)
	}
	return nil
}

// kazooSemaphore fills v with a kazoo Semaphore's leases, every one a
// holder, oldest first, and its acquirers, kazoo's contenders among the
// children of its lock PATH-__lock__ (acquirers), all waiters: the lock's
// holder waits for a lease to go, the others for the lock. Its
// max_leases is its pool's data.
func (in *inspector) kazooSemaphore(ctx context.Context, v *queueView, leases, acquirers []string) error {
	data, _, err := in.c.Get(ctx, in.path)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil // gone meanwhile: so are its leases
	case err != nil:
		return opError("read", in.path, err)
	}
	if n, ok := layout.KazooMaxLeases(data); ok {
		v.MaxLeases = &n
	}
	start := len(v.Nodes)
	for _, name := range leases {
		n := nodeSpec{dir: in.path, name: name, queue: leasesNode, kind: "lease", role: roleHolder, layout: layoutKazoo}
		if err := in.addNode(ctx, v, n); err != nil {
			return err
		}
	}
	added := v.Nodes[start:]
	slices.SortStableFunc(added, func(a, b nodeView) int { return cmp.Compare(a.Token, b.Token) })
	for i := range added {
		added[i].Position = i
	}
	lock := layout.KazooSemaphoreLock(in.path)
	for _, name := range kazooOrder(slices.DeleteFunc(slices.Clone(acquirers), func(n string) bool { return !isKazooContender(n) })) {
		n := nodeSpec{dir: lock, name: name, queue: locksNode, kind: "acquirer", role: roleWaiter, layout: layoutKazoo, persistent: true}
		if err := in.addNode(ctx, v, n); err != nil {
			return err
		}
	}
	return nil
}

// mixed describes the readings of a mixed path: what it holds ("two
// layouts", or "two recipes" of one layout) and the readings' recipes
// ("mutex and kazoo-lock").
func (v *queueView) mixed() (what, readings string) {
	layouts := map[string]bool{}
	for _, r := range v.Readings {
		layouts[layoutOf(r)] = true
	}
	what = fmt.Sprintf("%s recipes", number(len(v.Readings)))
	if len(layouts) == len(v.Readings) {
		what = fmt.Sprintf("%s layouts", number(len(v.Readings)))
	}
	return what, andList(v.Readings)
}

// mixedLine is the line printTable writes for a mixed path: each reading
// with its layout, and what a mix-up means: the processes of each see
// only their own nodes (zklock refuses to acquire a lock whose nodes it
// finds beside another layout's: ErrLayoutMismatch).
func (v *queueView) mixedLine() string {
	what, _ := v.mixed()
	shown := make([]string, len(v.Readings))
	for i, r := range v.Readings {
		shown[i] = fmt.Sprintf("%s (%s)", r, layoutOf(r))
	}
	return fmt.Sprintf("%s on one path: %s, each read by its own rules: they do not exclude each other", what, andList(shown))
}

// number is n in words, for the few readings a path can have.
func number(n int) string {
	if n >= 2 && n <= 3 {
		return [...]string{"two", "three"}[n-2]
	}
	return fmt.Sprint(n)
}

// andList is "a and b", "a, b and c".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
