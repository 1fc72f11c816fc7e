package zklock

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zklock/zklock/internal/zksession"
	"github.com/zklock/zklock/internal/zkwire"
)

// sessConn is zklock's own session seen as a zkConn: every call returns
// when its context ends. It speaks go-zookeeper's types, the engine's
// vocabulary (and that of Hold.Multi's requests): Stats, ACLs, flags,
// events and errors are translated here, and nowhere else.
type sessConn struct{ o *ownSession }

func (a sessConn) Create(ctx context.Context, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if flags == zk.FlagContainer {
		return a.CreateContainer(ctx, p, data, flags, acl)
	}
	if err := checkPath(p, flags&zk.FlagSequence != 0); err != nil {
		return "", err
	}
	mode, err := modeOf(p, flags)
	if err != nil {
		return "", err
	}
	name, err := a.o.cur().Create(ctx, p, data, aclsOf(acl), mode)
	return name, errOf(ctx, err)
}

func (a sessConn) CreateContainer(ctx context.Context, p string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if flags != zk.FlagContainer {
		return "", fmt.Errorf("%w: create %s: flags %d for a container", zk.ErrInvalidFlags, p, flags)
	}
	if err := checkPath(p, false); err != nil {
		return "", err
	}
	var resp zkwire.Create2Response
	req := zkwire.CreateRequest{Path: p, Data: data, ACL: aclsOf(acl), Flags: zkwire.ModeContainer}
	err := a.o.cur().Do(ctx, zkwire.OpCreateContainer, p, req, &resp)
	return resp.Path, errOf(ctx, err)
}

func (a sessConn) Children(ctx context.Context, p string) ([]string, *zk.Stat, error) {
	if err := checkPath(p, false); err != nil {
		return nil, nil, err
	}
	children, st, err := a.o.cur().GetChildren2(ctx, p)
	if err != nil {
		return nil, nil, errOf(ctx, err)
	}
	return children, statOf(st), nil
}

func (a sessConn) ChildrenW(ctx context.Context, p string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	if err := checkPath(p, false); err != nil {
		return nil, nil, nil, err
	}
	wctx, ch := follow(ctx)
	children, st, w, err := a.o.cur().GetChildren2W(wctx, p)
	if err != nil {
		return nil, nil, watchOf(w, ch), errOf(ctx, err)
	}
	return children, statOf(st), watchOf(w, ch), nil
}

func (a sessConn) Get(ctx context.Context, p string) ([]byte, *zk.Stat, error) {
	if err := checkPath(p, false); err != nil {
		return nil, nil, err
	}
	data, st, err := a.o.cur().GetData(ctx, p)
	if err != nil {
		return nil, nil, errOf(ctx, err)
	}
	return data, statOf(st), nil
}

func (a sessConn) GetW(ctx context.Context, p string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	if err := checkPath(p, false); err != nil {
		return nil, nil, nil, err
	}
	wctx, ch := follow(ctx)
	data, st, w, err := a.o.cur().GetDataW(wctx, p)
	if err != nil {
		return nil, nil, watchOf(w, ch), errOf(ctx, err)
	}
	return data, statOf(st), watchOf(w, ch), nil
}

func (a sessConn) Exists(ctx context.Context, p string) (bool, *zk.Stat, error) {
	if err := checkPath(p, false); err != nil {
		return false, nil, err
	}
	st, err := a.o.cur().Exists(ctx, p)
	switch {
	case errors.Is(err, zksession.ErrNoNode):
		return false, nil, nil
	case err != nil:
		return false, nil, errOf(ctx, err)
	}
	return true, statOf(st), nil
}

func (a sessConn) ExistsW(ctx context.Context, p string) (bool, *zk.Stat, <-chan zk.Event, error) {
	if err := checkPath(p, false); err != nil {
		return false, nil, nil, err
	}
	wctx, ch := follow(ctx)
	st, w, err := a.o.cur().ExistsW(wctx, p)
	switch {
	case errors.Is(err, zksession.ErrNoNode):
		return false, nil, watchOf(w, ch), nil
	case err != nil:
		return false, nil, watchOf(w, ch), errOf(ctx, err)
	}
	return true, statOf(st), watchOf(w, ch), nil
}

func (a sessConn) Set(ctx context.Context, p string, data []byte, version int32) (*zk.Stat, error) {
	if err := checkPath(p, false); err != nil {
		return nil, err
	}
	st, err := a.o.cur().SetData(ctx, p, data, version)
	if err != nil {
		return nil, errOf(ctx, err)
	}
	return statOf(st), nil
}

func (a sessConn) Delete(ctx context.Context, p string, version int32) error {
	if err := checkPath(p, false); err != nil {
		return err
	}
	return errOf(ctx, a.o.cur().Delete(ctx, p, version))
}

func (a sessConn) Sync(ctx context.Context, p string) (string, error) {
	if err := checkPath(p, false); err != nil {
		return "", err
	}
	if err := a.o.cur().Sync(ctx, p); err != nil {
		return "", errOf(ctx, err)
	}
	return p, nil
}

func (a sessConn) SessionID() int64 { return a.o.cur().SessionID() }

func (a sessConn) Native() bool { return true }

// Multi runs go-zookeeper's request types as one transaction. As
// go-zookeeper's Multi, it returns one response per operation, each with
// its own error, and an error when the transaction failed.
func (a sessConn) Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	wops := make([]zkwire.MultiOp, len(ops))
	for i, op := range ops {
		var err error
		if wops[i], err = multiOpOf(op); err != nil {
			return nil, err
		}
	}
	res, err := a.o.cur().Multi(ctx, wops...)
	if len(res) == 0 {
		return nil, errOf(ctx, err)
	}
	out := make([]zk.MultiResponse, len(res))
	for i, r := range res {
		out[i] = zk.MultiResponse{String: r.Path, Error: codeErr(r.Err)}
		if r.Type == zkwire.OpSetData {
			out[i].Stat = statOf(r.Stat)
		}
	}
	if err != nil {
		return out, codeErr(zksession.CodeOf(err))
	}
	return out, nil
}

// checkPath refuses, with zk.ErrInvalidPath and before anything is sent,
// a path ZooKeeper would not take as a node's (its PathUtils rules): empty
// or relative, a trailing slash (but for the root, or a sequential
// create's prefix), an empty, "." or ".." segment, or a character
// ZooKeeper forbids (controls, surrogates and specials).
func checkPath(p string, sequential bool) error {
	bad := func(why string) error { return fmt.Errorf("%w: %q: %s", zk.ErrInvalidPath, p, why) }
	switch {
	case p == "":
		return bad("empty")
	case p[0] != '/':
		return bad("not absolute")
	case p == "/":
		return nil
	}
	body := p[1:]
	if sequential {
		body = strings.TrimSuffix(body, "/")
		if body == "" {
			return nil
		}
	}
	for seg := range strings.SplitSeq(body, "/") {
		switch seg {
		case "":
			return bad("an empty name")
		case ".", "..":
			return bad("a relative name")
		}
	}
	for _, r := range p {
		if r == 0 || r > 0 && r < 0x20 || r >= 0x7f && r <= 0x9f || r >= 0xd800 && r <= 0xf8ff || r >= 0xfff0 && r <= 0xffff {
			return bad(fmt.Sprintf("character %U", r))
		}
	}
	return nil
}

// multiOpOf translates one of go-zookeeper's multi requests.
func multiOpOf(op any) (zkwire.MultiOp, error) {
	switch r := op.(type) {
	case *zk.CreateRequest:
		if r.Flags == zk.FlagContainer {
			return zkwire.MultiOp{Type: zkwire.OpCreateContainer, Req: zkwire.CreateRequest{Path: r.Path, Data: r.Data, ACL: aclsOf(r.Acl), Flags: zkwire.ModeContainer}}, nil
		}
		mode, err := modeOf(r.Path, r.Flags)
		if err != nil {
			return zkwire.MultiOp{}, err
		}
		return zkwire.MultiOp{Type: zkwire.OpCreate, Req: zkwire.CreateRequest{Path: r.Path, Data: r.Data, ACL: aclsOf(r.Acl), Flags: mode}}, nil
	case *zk.DeleteRequest:
		return zkwire.MultiOp{Type: zkwire.OpDelete, Req: zkwire.DeleteRequest{Path: r.Path, Version: r.Version}}, nil
	case *zk.SetDataRequest:
		return zkwire.MultiOp{Type: zkwire.OpSetData, Req: zkwire.SetDataRequest{Path: r.Path, Data: r.Data, Version: r.Version}}, nil
	case *zk.CheckVersionRequest:
		return zkwire.MultiOp{Type: zkwire.OpCheck, Req: zkwire.CheckVersionRequest{Path: r.Path, Version: r.Version}}, nil
	}
	return zkwire.MultiOp{}, fmt.Errorf("%w: multi: operation of type %T", zk.ErrBadArguments, op)
}

// modeOf translates go-zookeeper's create flags into a create mode.
func modeOf(p string, flags int32) (zkwire.CreateMode, error) {
	switch flags {
	case 0, zk.FlagEphemeral, zk.FlagSequence, zk.FlagEphemeral | zk.FlagSequence:
		return zkwire.CreateMode(flags), nil
	}
	return 0, fmt.Errorf("%w: create %s: flags %d", zk.ErrInvalidFlags, p, flags)
}

// aclsOf translates go-zookeeper's ACLs.
func aclsOf(acl []zk.ACL) []zkwire.ACL {
	out := make([]zkwire.ACL, len(acl))
	for i, a := range acl {
		out[i] = zkwire.ACL{Perms: a.Perms, ID: zkwire.Id{Scheme: a.Scheme, ID: a.ID}}
	}
	return out
}

// statOf translates a Stat into go-zookeeper's.
func statOf(s zkwire.Stat) *zk.Stat {
	return &zk.Stat{
		Czxid: s.Czxid, Mzxid: s.Mzxid, Ctime: s.Ctime, Mtime: s.Mtime,
		Version: s.Version, Cversion: s.Cversion, Aversion: s.Aversion,
		EphemeralOwner: s.EphemeralOwner, DataLength: s.DataLength,
		NumChildren: s.NumChildren, Pzxid: s.Pzxid,
	}
}

// codeErrs are go-zookeeper's errors for the codes the engine and its
// users test for.
var codeErrs = map[zkwire.Code]error{
	zkwire.CodeConnectionLoss:          zk.ErrConnectionClosed,
	zkwire.CodeAPIError:                zk.ErrAPIError,
	zkwire.CodeNoNode:                  zk.ErrNoNode,
	zkwire.CodeNoAuth:                  zk.ErrNoAuth,
	zkwire.CodeBadVersion:              zk.ErrBadVersion,
	zkwire.CodeNoChildrenForEphemerals: zk.ErrNoChildrenForEphemerals,
	zkwire.CodeNodeExists:              zk.ErrNodeExists,
	zkwire.CodeNotEmpty:                zk.ErrNotEmpty,
	zkwire.CodeSessionExpired:          zk.ErrSessionExpired,
	zkwire.CodeInvalidACL:              zk.ErrInvalidACL,
	zkwire.CodeAuthFailed:              zk.ErrAuthFailed,
	zkwire.CodeSessionMoved:            zk.ErrSessionMoved,
	zkwire.CodeBadArguments:            zk.ErrBadArguments,
	zkwire.CodeReconfigDisabled:        zk.ErrReconfigDisabled,
}

// codeErr is go-zookeeper's error for code: nil for CodeOK, ErrUnknown
// wrapped with the code's name for a code go-zookeeper has no error for.
func codeErr(code zkwire.Code) error {
	if code == zkwire.CodeOK {
		return nil
	}
	if err, ok := codeErrs[code]; ok {
		return err
	}
	return fmt.Errorf("%w: %v", zk.ErrUnknown, code)
}

// errOf translates a session's error into the engine's vocabulary: a
// call ended by its context returns ctx.Err(), one ended by Close
// zk.ErrClosing, a server's code go-zookeeper's error for it, and a
// connection loss zk.ErrConnectionClosed with its cause.
func errOf(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
		return cerr
	}
	if errors.Is(err, zksession.ErrClosed) {
		return zk.ErrClosing
	}
	code := zksession.CodeOf(err)
	if code == zkwire.CodeOK {
		return err // a local failure: a frame over the limit, say
	}
	zerr := codeErr(code)
	if code == zkwire.CodeConnectionLoss {
		var se *zksession.Error
		if errors.As(err, &se) && se.Err != nil {
			return &wrapError{msg: zerr.Error() + ": " + se.Err.Error(), errs: []error{zerr, se.Err}}
		}
	}
	return zerr
}

// follow returns a context under which a watch set hands its one event,
// as a go-zookeeper event, to the returned channel, which is then closed
// (go-zookeeper's contract: every receiver wakes), with no goroutine in
// between.
func follow(ctx context.Context) (context.Context, <-chan zk.Event) {
	if ctx.Value(routedOnlyKey{}) != nil {
		return zksession.WithNotify(ctx, dropEvent), nil
	}
	ch := make(chan zk.Event, 1)
	return zksession.WithNotify(ctx, func(ev zksession.Event) {
		ch <- eventOf(ev)
		close(ch)
	}), ch
}

type routedOnlyKey struct{}

// routedOnly returns a copy of ctx under which a watch set on zklock's
// own session makes no channel: its event reaches the Client only as
// every event of the session does, through its routing (holdWatch), and
// the caller drops the channel the call returns (nil here). A
// go-zookeeper connection ignores it. It saves a hold granted from its
// listing about a third of a kilobyte of heap.
func routedOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, routedOnlyKey{}, true)
}

// dropEvent is the notify of a routedOnly watch.
func dropEvent(zksession.Event) {}

// watchOf is ch if the call set w, else nil.
func watchOf(w *zksession.Watch, ch <-chan zk.Event) <-chan zk.Event {
	if w == nil {
		return nil
	}
	return ch
}

// eventOf translates a Watch's event. The end of the session becomes
// go-zookeeper's EventNotWatching, with the reason as its Err.
func eventOf(ev zksession.Event) zk.Event {
	if ev.Type != zkwire.EventNone {
		if ev.Type == zkwire.EventDataWatchRemoved || ev.Type == zkwire.EventChildWatchRemoved {
			return zk.Event{Type: zk.EventNotWatching, State: zk.StateSyncConnected, Path: ev.Path}
		}
		return zk.Event{Type: zk.EventType(ev.Type), State: zk.StateSyncConnected, Path: ev.Path}
	}
	out := zk.Event{Type: zk.EventNotWatching, State: zk.StateDisconnected, Path: ev.Path, Err: zk.ErrClosing}
	switch ev.State {
	case zkwire.StateExpired:
		out.Err = zk.ErrSessionExpired
	case zkwire.StateAuthFailed:
		out.Err = zk.ErrAuthFailed
	}
	return out
}
