package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// A node left behind is zklock's orphan only if the ensemble holds it.
// ZooKeeper 3.8 can leave a node on a minority of its servers after a
// leader is partitioned or killed while a create is in flight (a stale
// ephemeral that the leader and the other followers do not have; see
// ZOOKEEPER-5010 and ZOOKEEPER-2832 in research/election.md): no client
// can delete it, because a delete through the quorum answers that it does
// not exist. Such a node is reported as the ensemble's divergence, apart
// from the orphans that fail a run.

// presence is one server's answer to "does node n exist?", read after a
// sync so that a server that merely lags answers as the leader would.
type presence struct {
	has   bool
	mzxid int64
	err   error
}

func (p presence) String() string {
	if p.err != nil {
		return fmt.Sprintf("error %v", p.err)
	}
	return fmt.Sprintf("%v(mzxid 0x%x)", p.has, p.mzxid)
}

// census asks every server on its own whether node n exists.
func census(servers []string, n string) []presence {
	out := make([]presence, len(servers))
	for i, srv := range servers {
		out[i] = ask(srv, n)
	}
	return out
}

func ask(srv, n string) presence {
	conn, _, err := zk.Connect([]string{srv}, 10*time.Second, zk.WithLogger(quiet{}))
	if err != nil {
		return presence{err: err}
	}
	defer conn.Close()
	if _, err := conn.Sync(n); err != nil && err != zk.ErrNoNode {
		return presence{err: fmt.Errorf("sync: %w", err)}
	}
	ok, st, err := conn.Exists(n)
	if err != nil {
		return presence{err: err}
	}
	return presence{has: ok, mzxid: st.Mzxid}
}

// fate is what the servers' answers make of a node one server listed as
// left behind.
type fate int

const (
	orphan   fate = iota // the ensemble holds it, or cannot be read enough to say
	diverged             // a minority of the servers hold it, a majority answered it does not exist
	gone                 // no server holds it (deleted since it was listed)
)

// judge reads the servers' answers. A server that did not answer counts
// for neither side, so an ensemble that cannot be read never turns an
// orphan into divergence, nor makes it vanish.
func judge(ps []presence) fate {
	has, absent := 0, 0
	for _, p := range ps {
		switch {
		case p.err != nil:
		case p.has:
			has++
		default:
			absent++
		}
	}
	switch {
	case absent <= len(ps)/2:
		return orphan
	case has == 0:
		return gone
	default:
		return diverged
	}
}

// describe lists the servers' answers: "0:true(mzxid 0x1f) 1:false(...)".
func describe(ps []presence) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprintf("%d:%v", i, p)
	}
	return strings.Join(out, " ")
}

// sortLeft splits the nodes one server showed as left behind into the
// orphans (held by the ensemble) and the ensemble's divergence (held by a
// minority of its servers only), each described by line, given the node
// and every server's answer; nodes deleted since they were listed are
// dropped.
func sortLeft(servers, nodes []string, line func(n, answers string) string) (orphans, divergence []string) {
	for _, n := range nodes {
		ps := census(servers, n)
		switch judge(ps) {
		case orphan:
			orphans = append(orphans, line(n, describe(ps)))
		case diverged:
			divergence = append(divergence, line(n, describe(ps)))
		}
	}
	return orphans, divergence
}

// merge appends to a the lines of b about nodes a does not name yet (each
// line starts with its node's path).
func merge(a, b []string) []string {
	named := make(map[string]bool, len(a))
	for _, l := range a {
		named[strings.Fields(l)[0]] = true
	}
	for _, l := range b {
		if !named[strings.Fields(l)[0]] {
			a = append(a, l)
		}
	}
	return a
}
