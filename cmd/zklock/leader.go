package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

const leaderUsage = `Usage: zklock leader [flags] PATH

Prints who leads the election at PATH: the leader's id (its node's data)
and its node. PATH is a leader latch (zklock's Election, Curator's
LeaderLatch; nodes ..latch-<seq>) or a Selector (zklock's Selector,
Curator's LeaderSelector; nodes ..lock-<seq>, a mutex's layout, whose
holder leads) or a kazoo Election (a kazoo Lock's layout, nodes
<hex>__lock__<seq>: recipe kazoo-election). The leader is the first
participant, in queue order, whose node exists when read; a leader may
change right after.

leader exits 0 when there is a leader; 1 when PATH exists but no
participant leads ("no leader": none takes part), or when PATH holds
another recipe (a rwlock, a semaphore: "not an election"), or the nodes
of two layouts (Curator's and kazoo's: two holders, no one leader); 4
when PATH does not exist.

  -json    print one JSON object: {"path", "recipe", "exists",
           "participants", "leader", "node"}; "node" is the leader's node
           as in inspect's "nodes"; "leader" and "node" are omitted with
           no leader (the object is printed then too)
`

// leaderFlags are leader's command line.
type leaderFlags struct {
	*common
	json bool
}

func newLeaderFlags() *leaderFlags {
	f := &leaderFlags{common: newCommon("leader", leaderUsage)}
	f.fs.BoolVar(&f.json, "json", false, "print JSON")
	return f
}

// leaderView is what leader shows; its JSON form is documented in the
// usage text and the package documentation.
type leaderView struct {
	Path         string    `json:"path"`
	Recipe       string    `json:"recipe"` // latch | selector | kazoo-election | none
	Exists       bool      `json:"exists"`
	Participants int       `json:"participants"`
	Leader       *string   `json:"leader,omitempty"` // the leader's id
	Node         *nodeView `json:"node,omitempty"`   // the leader's node
}

// runLeader is the leader command.
func runLeader(args []string, stdout, stderr io.Writer) int {
	f := newLeaderFlags()
	return f.exitFor(f.leader(args, stdout), stdout, stderr)
}

func (f *leaderFlags) leader(args []string, stdout io.Writer) error {
	p, client, err := f.pathAndClient(args, "PATH (the election's path)")
	if err != nil {
		return err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	in := &inspector{c: client, common: f.common, path: p, selector: true}
	v, _, err := in.read(ctx)
	if err != nil {
		return err
	}
	lv := &leaderView{Path: v.Path, Recipe: v.Recipe, Exists: v.Exists, Participants: len(v.Nodes), Leader: v.Leader}
	if v.Leader != nil {
		lv.Node = &v.Nodes[0]
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(lv); err != nil {
			return err
		}
	}
	switch {
	case !v.Exists:
		return in.missing(ctx)
	case v.Leader == nil && len(v.Nodes) == 0:
		return fmt.Errorf("no leader: %s has no participants", p)
	case v.Leader == nil:
		return fmt.Errorf("no leader: none of the %s of %s leads", plural(len(v.Nodes), "participant"), p)
	case !f.json:
		printLeader(stdout, lv)
	}
	return nil
}

// printLeader writes lv, which has a leader, for people.
func printLeader(w io.Writer, lv *leaderView) {
	n := lv.Node
	fmt.Fprintf(w, "leader: %s (%s, %s)\n", leaderText(*lv.Leader), lv.Recipe, plural(lv.Participants, "participant"))
	fmt.Fprintf(w, "node: %s (session %s, age %s, token %d)\n",
		n.Path, n.Session, age(time.Duration(n.AgeMS)*time.Millisecond), n.Token)
}
