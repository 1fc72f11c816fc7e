// Package mutants holds the deliberately broken variants of the zklock
// library that its self-tests must catch (the root package's
// TestFaultTeeth and the chaos suite's TestChaosTeeth), and builds them.
//
// The library's source has no seam for them: each variant is a table
// entry of textual edits to the production source, applied at build time
// through the go command's -overlay flag. All edits go into one build,
// each guarded by mutant("name"), which reads ZKLOCK_MUTANT: one test
// binary serves every variant, one at a time, and a run without
// ZKLOCK_MUTANT is the library as released. An edit whose text is no
// longer in its file, or is there twice, fails the build of the overlay
// with the variant and the file named (TestTableApplies, in every go
// test): a refactor cannot disarm a variant silently.
package mutants

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// An Edit replaces the text From, which must occur exactly once in the
// library's file File (after the edits before it in All), with To.
type Edit struct {
	File     string
	From, To string
}

// A Mutant is one broken variant: its ZKLOCK_MUTANT name, what it
// breaks (and the Curator bug it models, if any), and its edits.
type Mutant struct {
	Name   string
	Breaks string
	Edits  []Edit
}

// Names returns the names of All, in order, each once.
func Names() []string {
	var names []string
	for _, m := range All {
		names = append(names, m.Name)
	}
	return names
}

// selector is the file the overlay adds to the library: mutant, which the
// edits call, and the variant ZKLOCK_MUTANT names.
const selector = `package zklock

import "os"

// mutantName is the broken variant this build runs, from ZKLOCK_MUTANT
// (see internal/mutants). Never release a build with this file.
var mutantName = os.Getenv("ZKLOCK_MUTANT")

// mutant reports whether the broken variant called name is on.
func mutant(name string) bool { return mutantName == name }
`

// selectorFile names the added file; no file of the library has it.
const selectorFile = "zz_mutants_overlay.go"

// Overlay writes, under dir, the library's files that All edits, with
// every edit applied, and the selector file, and returns the path of an
// overlay file for the go command's -overlay flag. root is the library's
// directory (the module's root). It fails, naming the variant and the
// file, if an edit's text is not found exactly once.
func Overlay(root, dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	files := map[string]string{}
	var order []string
	for _, m := range All {
		for _, e := range m.Edits {
			src, ok := files[e.File]
			if !ok {
				b, err := os.ReadFile(filepath.Join(root, e.File))
				if err != nil {
					return "", fmt.Errorf("mutant %s: %w", m.Name, err)
				}
				src = string(b)
				order = append(order, e.File)
			}
			if n := strings.Count(src, e.From); n != 1 {
				return "", fmt.Errorf("mutant %s: its text is in %s %d times, not once; update internal/mutants to the code:\n%s", m.Name, e.File, n, e.From)
			}
			files[e.File] = strings.Replace(src, e.From, e.To, 1)
		}
	}
	if _, err := os.Stat(filepath.Join(root, selectorFile)); err == nil {
		return "", fmt.Errorf("mutants: %s exists in %s: the overlay would hide it", selectorFile, root)
	}
	files[selectorFile] = selector
	order = append(order, selectorFile)
	replace := map[string]string{}
	for i, f := range order {
		out := filepath.Join(dir, fmt.Sprintf("%02d-%s", i, f))
		if err := os.WriteFile(out, []byte(files[f]), 0o644); err != nil {
			return "", err
		}
		abs, err := filepath.Abs(filepath.Join(root, f))
		if err != nil {
			return "", err
		}
		replace[abs] = out
	}
	b, err := json.Marshal(struct{ Replace map[string]string }{replace})
	if err != nil {
		return "", err
	}
	overlay := filepath.Join(dir, "overlay.json")
	return overlay, os.WriteFile(overlay, b, 0o644)
}

// All is every broken variant, in the order their edits apply.
var All = []Mutant{
	{
		Name:   "oldsession",
		Breaks: "an elected leader's listed node is granted unchecked, whatever session owns it (CURATOR-696)",
		Edits: []Edit{
			{File: "election.go",
				From: `		case owner == node.session && node.session == c.zc.SessionID():
`,
				To: `		case mutant("oldsession"):
			return node, snap, nil
		case owner == node.session && node.session == c.zc.SessionID():
`},
		},
	},
	{
		Name:   "parentblind",
		Breaks: "a hold granted at once trusts its parent's child watch, and never hears it fire",
		Edits: []Edit{
			{File: "holdwatch.go",
				From: `func (w *holdWatch) childEvent(parent string) {
`,
				To: `func (w *holdWatch) childEvent(parent string) {
	if mutant("parentblind") {
		return
	}
`},
		},
	},
	{
		Name:   "orphans",
		Breaks: "an acquire that is cancelled leaves its node behind",
		Edits: []Edit{
			{File: "internals.go",
				From: `		// a vanished node may be an old session's node that is still dying.
		c.deleteGivenUp(ctx, n)
`,
				To: `		// a vanished node may be an old session's node that is still dying.
		if !mutant("orphans") || ctx.Err() == nil {
			c.deleteGivenUp(ctx, n)
		}
`},
		},
	},
	{
		Name:   "presession",
		Breaks: "an acquire creates its node whatever the connection, and records it under the session from before its create",
		Edits: []Edit{
			{File: "internals.go",
				From: `func (li *lockInternals) awaitUp(ctx context.Context, try bool) error {
`,
				To: `func (li *lockInternals) awaitUp(ctx context.Context, try bool) error {
	if mutant("presession") {
		return nil
	}
`},
			{File: "internals.go",
				From: `	c := li.c
	if n.session, err = c.createdIn(`,
				To: `	c := li.c
	if mutant("presession") {
		return pre, false, nil
	}
	if n.session, err = c.createdIn(`},
		},
	},
	{
		Name:   "twoholders",
		Breaks: "the second in a lock's queue is granted too",
		Edits: []Edit{
			{File: "internals.go",
				From: `	res, err := li.driver.GetsTheLock(children, n.name, li.maxLeases)
`,
				To: `	res, err := li.driver.GetsTheLock(children, n.name, li.maxLeases)
	res.Acquired = res.Acquired || mutant("twoholders") && len(children) == 2
`},
		},
	},
	{
		Name:   "resetstorm",
		Breaks: "a waiter queues again when the node before it goes: it deletes its node and creates a new one (CURATOR-644/645)",
		Edits: []Edit{
			{File: "internals.go",
				From: `	case ev := <-v.watch:
`,
				To: `	case ev := <-v.watch:
		if mutant("resetstorm") && ev.Type == zk.EventNodeDeleted {
			return false, errNodeGone
		}
`},
		},
	},
	{
		Name:   "norequeue",
		Breaks: "Selector.Run ends after a lost term (CURATOR-518/671)",
		Edits: []Edit{
			{File: "selector.go",
				From: `if err == nil || errors.Is(hd.Err(), ErrLockLost) {
`,
				To: `if err == nil || errors.Is(hd.Err(), ErrLockLost) && !mutant("norequeue") {
`},
		},
	},
	{
		Name:   "extralease",
		Breaks: "a Semaphore grants one lease too many",
		Edits: []Edit{
			{File: "semaphore.go",
				From: `	return len(children) <= s.maxLeases, nil
`,
				To: `	return len(children) <= s.maxLeases || mutant("extralease") && len(children) == s.maxLeases+1, nil
`},
		},
	},
	{
		Name:   "holdlost",
		Breaks: "a hold never learns that its session is gone",
		Edits: []Edit{
			{File: "session.go",
				From: `	switch {
	case f.state == StateClosed:
`,
				To: `	switch {
	case mutant("holdlost"):
		return nil
	case f.state == StateClosed:
`},
		},
	},
	{
		Name:   "soloblind",
		Breaks: "the solo path trusts the parent's watch after it fired",
		Edits: []Edit{
			{File: "solo.go",
				From: `if s.parent != nil && fired(s.parent) {
`,
				To: `if s.parent != nil && fired(s.parent) && !mutant("soloblind") {
`},
		},
	},
	{
		Name:   "soloanyconn",
		Breaks: "the solo path takes a parent's watch set on another connection as proof",
		Edits: []Edit{
			{File: "solo.go",
				From: `conn == s.conn &&
`,
				To: `(conn == s.conn || mutant("soloanyconn")) &&
`},
		},
	},
	{
		Name:   "soloczxid",
		Breaks: "the solo path takes a watch on another parent (another creation zxid) as proof",
		Edits: []Edit{
			{File: "solo.go",
				From: `s.czxid == s.lczxid
`,
				To: `(s.czxid == s.lczxid || mutant("soloczxid"))
`},
		},
	},
	{
		Name:   "solonoseq",
		Breaks: "the solo path takes any sequence number as proof",
		Edits: []Edit{
			{File: "solo.go",
				From: `next := ok && s.last != "" && seq == s.seq+1
`,
				To: `next := ok && s.last != "" && (seq == s.seq+1 || mutant("solonoseq"))
`},
		},
	},
	{
		Name:   "solostanding",
		Breaks: "the solo path counts our last node as gone while it stands",
		Edits: []Edit{
			{File: "solo.go",
				From: `return s.alone && s.gone
`,
				To: `return s.alone && (s.gone || mutant("solostanding"))
`},
		},
	},
	{
		Name:   "noprotect",
		Breaks: "a create whose reply was lost is sent again, without looking for the node it may have made (CURATOR-498's unprotected create)",
		Edits: []Edit{
			{File: "zkops.go",
				From: `if pc.unknown {
`,
				To: `if pc.unknown && !mutant("noprotect") {
`},
		},
	},
	{
		Name:   "norecreate",
		Breaks: "a missing parent (a deleted lock or election path) is never created again (CURATOR-724)",
		Edits: []Edit{
			{File: "zkops.go",
				From: `case errors.Is(err, zk.ErrNoNode) && pc.missingParentTries < missingParentTries:
`,
				To: `case errors.Is(err, zk.ErrNoNode) && pc.missingParentTries < missingParentTries && !mutant("norecreate"):
`},
		},
	},
	{
		Name:   "dyingnode",
		Breaks: "a node found by its protection prefix is adopted whatever session owns it (CURATOR-498)",
		Edits: []Edit{
			{File: "zkops.go",
				From: `if pc.flags&zk.FlagEphemeral == 0 || owner == c.zc.SessionID() {
`,
				To: `if pc.flags&zk.FlagEphemeral == 0 || owner == c.zc.SessionID() || mutant("dyingnode") {
`},
		},
	},
}
