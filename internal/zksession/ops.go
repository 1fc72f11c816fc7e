package zksession

import (
	"context"
	"errors"
	"fmt"

	"github.com/zklock/zklock/internal/zkwire"
)

// This file is the operations, one method each. Every one blocks until
// the server answers, the session ends, or ctx ends; it returns an *Error
// (matching ErrNoNode, ErrConnectionLoss... with errors.Is), or one
// wrapping ctx.Err(). A request refused locally (a frame over
// Config.MaxFrame) is never sent.

// OpenACL is the ACL that lets anyone do anything (world:anyone, all).
var OpenACL = []zkwire.ACL{{Perms: zkwire.PermAll, ID: zkwire.Id{Scheme: "world", ID: "anyone"}}}

// Do sends a request of type op with body req and decodes the reply's
// body into resp (nil for a reply with none), for the operations that
// have no method. A request with its watch flag set sets a server watch
// that no Watch hears: use the methods ending in W.
func (s *Session) Do(ctx context.Context, op zkwire.OpCode, path string, req zkwire.Encodable, resp zkwire.Decodable) error {
	r, err := newRequest(op, path, 0, req, resp, s.cfg.MaxFrame)
	if err != nil {
		return err
	}
	return s.call(ctx, r)
}

// Create creates the node path with data, acl and mode and returns its
// name (with its sequence number, if sequential).
func (s *Session) Create(ctx context.Context, path string, data []byte, acl []zkwire.ACL, mode zkwire.CreateMode) (string, error) {
	var resp zkwire.CreateResponse
	err := s.Do(ctx, zkwire.OpCreate, path, zkwire.CreateRequest{Path: path, Data: data, ACL: acl, Flags: mode}, &resp)
	return resp.Path, err
}

// Delete deletes the node path if its version is version (-1: any).
func (s *Session) Delete(ctx context.Context, path string, version int32) error {
	return s.Do(ctx, zkwire.OpDelete, path, zkwire.DeleteRequest{Path: path, Version: version}, nil)
}

// SetData sets the data of path if its version is version (-1: any),
// and returns its Stat after the change.
func (s *Session) SetData(ctx context.Context, path string, data []byte, version int32) (zkwire.Stat, error) {
	var resp zkwire.SetDataResponse
	err := s.Do(ctx, zkwire.OpSetData, path, zkwire.SetDataRequest{Path: path, Data: data, Version: version}, &resp)
	return resp.Stat, err
}

// GetData returns the data and Stat of path.
func (s *Session) GetData(ctx context.Context, path string) ([]byte, zkwire.Stat, error) {
	var resp zkwire.GetDataResponse
	err := s.Do(ctx, zkwire.OpGetData, path, zkwire.GetDataRequest{Path: path}, &resp)
	return resp.Data, resp.Stat, err
}

// Exists returns the Stat of path, or an error matching ErrNoNode.
func (s *Session) Exists(ctx context.Context, path string) (zkwire.Stat, error) {
	var resp zkwire.ExistsResponse
	err := s.Do(ctx, zkwire.OpExists, path, zkwire.ExistsRequest{Path: path}, &resp)
	return resp.Stat, err
}

// GetChildren2 returns the names of path's children and its Stat.
func (s *Session) GetChildren2(ctx context.Context, path string) ([]string, zkwire.Stat, error) {
	var resp zkwire.GetChildren2Response
	err := s.Do(ctx, zkwire.OpGetChildren2, path, zkwire.GetChildren2Request{Path: path}, &resp)
	return resp.Children, resp.Stat, err
}

// Sync makes the server catch up with the leader on path before it
// answers this and later requests.
func (s *Session) Sync(ctx context.Context, path string) error {
	return s.Do(ctx, zkwire.OpSync, path, zkwire.SyncRequest{Path: path}, &zkwire.SyncResponse{})
}

// Multi applies ops as one transaction and returns one result each.
// When the transaction fails it returns the results (every one an
// OpError, see zkwire.MultiResult) and an *Error whose Code, Index and
// Path are the failing operation's.
func (s *Session) Multi(ctx context.Context, ops ...zkwire.MultiOp) ([]zkwire.MultiResult, error) {
	var resp zkwire.MultiResponse
	if err := s.Do(ctx, zkwire.OpMulti, "", zkwire.MultiRequest{Ops: ops}, &resp); err != nil {
		return nil, err
	}
	if i, code := resp.FirstError(); code != zkwire.CodeOK {
		e := &Error{Op: zkwire.OpMulti, Code: code, Index: i}
		if i < len(ops) {
			e.Path = opPath(ops[i].Req)
		}
		return resp.Results, e
	}
	return resp.Results, nil
}

// opPath returns the path of a multi operation's record.
func opPath(req zkwire.Encodable) string {
	switch q := req.(type) {
	case zkwire.CreateRequest:
		return q.Path
	case *zkwire.CreateRequest:
		return q.Path
	case zkwire.DeleteRequest:
		return q.Path
	case *zkwire.DeleteRequest:
		return q.Path
	case zkwire.SetDataRequest:
		return q.Path
	case *zkwire.SetDataRequest:
		return q.Path
	case zkwire.CheckVersionRequest:
		return q.Path
	case *zkwire.CheckVersionRequest:
		return q.Path
	}
	return ""
}

// watched sends a request that sets a watch of type t on path and
// returns its Watch, or nil if the server set none.
func (s *Session) watched(ctx context.Context, op zkwire.OpCode, path string, t zkwire.WatcherType, req zkwire.Encodable, resp zkwire.Decodable) (*Watch, error) {
	r, err := newRequest(op, path, 0, req, resp, s.cfg.MaxFrame)
	if err != nil {
		return nil, err
	}
	f, _ := ctx.Value(notifyKey{}).(func(Event))
	r.wtype, r.watch = t, newWatch(path, f)
	err = s.call(ctx, r)
	if !r.registered {
		return nil, err
	}
	if t, ok := ctx.Value(tentativeKey{}).(*Tentative); ok {
		t.add(s, r.watch)
	}
	return r.watch, err
}

// GetDataW is GetData with a watch on path's data: it returns a Watch
// if the node exists (it fires when its data changes or it is deleted).
func (s *Session) GetDataW(ctx context.Context, path string) ([]byte, zkwire.Stat, *Watch, error) {
	var resp zkwire.GetDataResponse
	w, err := s.watched(ctx, zkwire.OpGetData, path, zkwire.WatcherData, zkwire.GetDataRequest{Path: path, Watch: true}, &resp)
	return resp.Data, resp.Stat, w, err
}

// ExistsW is Exists with a watch: it returns a Watch whether or not the
// node exists (it fires when the node is created, changed or deleted),
// with an error matching ErrNoNode when it does not.
func (s *Session) ExistsW(ctx context.Context, path string) (zkwire.Stat, *Watch, error) {
	var resp zkwire.ExistsResponse
	w, err := s.watched(ctx, zkwire.OpExists, path, zkwire.WatcherData, zkwire.ExistsRequest{Path: path, Watch: true}, &resp)
	return resp.Stat, w, err
}

// GetChildren2W is GetChildren2 with a watch on path's children: it
// returns a Watch if the node exists (it fires when a child is created
// or deleted, or the node is deleted).
func (s *Session) GetChildren2W(ctx context.Context, path string) ([]string, zkwire.Stat, *Watch, error) {
	var resp zkwire.GetChildren2Response
	w, err := s.watched(ctx, zkwire.OpGetChildren2, path, zkwire.WatcherChildren, zkwire.GetChildren2Request{Path: path, Watch: true}, &resp)
	return resp.Children, resp.Stat, w, err
}

// RemoveWatch removes w: its channel gets an event of type
// EventDataWatchRemoved or EventChildWatchRemoved, unless it has
// already fired (or been removed), and RemoveWatch then does nothing.
// When w was the last watch of its type on its path, with no request
// setting one in flight, the server's watch is removed too
// (removeWatches); a server that no longer has it (it fired meanwhile)
// is not an error.
func (s *Session) RemoveWatch(ctx context.Context, w *Watch) error {
	r := s.unwatch(w)
	if r == nil {
		return nil
	}
	err := r.wait(ctx)
	if CodeOf(err) == zkwire.CodeNoWatcher {
		return nil
	}
	return err
}

// unwatch takes w out of the set and, if it was the last watch of its
// type on its path, with no request that sets one in flight, queues the
// request that removes the server's watch, and returns it (nil if none).
// Both happen under s.mu, as a call's count of its watch and its queueing
// do (see call): a request that sets the watch again is either counted
// before (then the server's watch stays) or goes on the wire after the
// removal.
func (s *Session) unwatch(w *Watch) *request {
	s.mu.Lock()
	defer s.mu.Unlock()
	found, last, t := s.watches.remove(w)
	if !found || !last {
		return nil
	}
	return s.queueRemoval(w.path, t)
}

// queueRemoval queues the request that removes the server's watch of
// type t on path, and returns it; nil once the session has ended. s.mu
// must be held, from the moment the session's watches showed that none
// needs it: a request that sets the watch again is queued after it.
func (s *Session) queueRemoval(path string, t zkwire.WatcherType) *request {
	if s.end != nil {
		return nil
	}
	r, err := newRequest(zkwire.OpRemoveWatches, path, 0, zkwire.RemoveWatchesRequest{Path: path, Type: t}, nil, s.cfg.MaxFrame)
	if err != nil { // the request that set the watch, with the same path, was not over the limit
		return nil
	}
	s.queue = append(s.queue, r)
	s.kick()
	return r
}

// removeWatches removes the session's server watches of type t on path;
// a server that has none is not an error.
func (s *Session) removeWatches(ctx context.Context, path string, t zkwire.WatcherType) error {
	err := s.Do(ctx, zkwire.OpRemoveWatches, path, zkwire.RemoveWatchesRequest{Path: path, Type: t}, nil)
	if CodeOf(err) == zkwire.CodeNoWatcher {
		return nil
	}
	return err
}

// errNoOnEvent refuses a persistent watch that nobody would hear.
var errNoOnEvent = errors.New("zksession: a persistent watch needs Config.OnEvent, which alone hears its events")

// AddWatch sets a persistent watch on path (ZooKeeper 3.6 and later),
// which fires again and again until removed. With mode
// zkwire.AddWatchPersistent it fires when path is created, changed or
// deleted and when its children change; with AddWatchPersistentRecursive,
// when path or any node below it is created, changed or deleted. Its
// events reach Config.OnEvent only (no Watch carries them): without
// OnEvent, or with another mode, AddWatch returns an *Error and sends
// nothing. The watch outlives connection losses (SetWatches2 sets it
// again), but a change made while the session was disconnected is not
// reported: read again after OnEvent hears StateSyncConnected (a
// request sent then is answered after the watches are set again). The
// session records the watch when the server's answer says it is set,
// even if ctx ended first (then RemovePersistentWatch removes it).
//
// Servers before 3.9 keep one watch per session and path, whatever its
// mode (ZOOKEEPER-4466): a one-shot watch set on a path (GetDataW,
// ExistsW, GetChildren2W) turns its persistent watch there into a
// one-shot one. Do not mix the two on one path.
func (s *Session) AddWatch(ctx context.Context, path string, mode zkwire.AddWatchMode) error {
	switch {
	case mode != zkwire.AddWatchPersistent && mode != zkwire.AddWatchPersistentRecursive:
		return &Error{Op: zkwire.OpAddWatch, Path: path, Err: fmt.Errorf("zksession: unknown AddWatchMode %d", mode)}
	case s.cfg.OnEvent == nil:
		return &Error{Op: zkwire.OpAddWatch, Path: path, Err: errNoOnEvent}
	}
	r, err := newRequest(zkwire.OpAddWatch, path, 0, zkwire.AddWatchRequest{Path: path, Mode: mode}, &zkwire.ErrorResponse{}, s.cfg.MaxFrame)
	if err != nil {
		return err
	}
	r.mode = mode
	return s.call(ctx, r)
}

// errMixedWatches refuses to remove a persistent watch from a server
// before 3.9, which would remove the one-shot watches on its path too.
var errMixedWatches = errors.New("zksession: this server (before 3.9) cannot remove a persistent watch without the one-shot watches on its path; it ends with the connection")

// RemovePersistentWatch removes the persistent watch of mode on path:
// the session forgets it at once (no reconnection sets it again), then
// asks the server to remove it (removeWatches); a server that no longer
// has it is not an error. A server before 3.9 knows no removal of one
// watch mode alone: there, a session has at most one watch per path,
// whatever its mode, and RemovePersistentWatch removes it, unless the
// session also holds a one-shot watch on path: it then returns an
// *Error, and the server's watch lasts until the connection ends. If
// the request fails, the server may likewise keep sending its events
// until the connection ends.
func (s *Session) RemovePersistentWatch(ctx context.Context, path string, mode zkwire.AddWatchMode) error {
	if !s.watches.removePersistent(path, mode) {
		return nil
	}
	t, before39 := zkwire.WatcherPersistent, zkwire.WatcherAny // a persistent watch is both a data and a child watch
	if mode == zkwire.AddWatchPersistentRecursive {
		t, before39 = zkwire.WatcherPersistentRecursive, zkwire.WatcherData
	}
	err := s.removeWatches(ctx, path, t)
	if CodeOf(err) != zkwire.CodeMarshallingError { // how a server before 3.9 refuses type t
		return err
	}
	if s.watches.oneShot(path) {
		return &Error{Op: zkwire.OpRemoveWatches, Path: path, Err: errMixedWatches}
	}
	return s.removeWatches(ctx, path, before39)
}
