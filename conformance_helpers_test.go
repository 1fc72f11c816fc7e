package zklock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock/internal/zksession"
	"github.com/zklock/zklock/internal/zktest"
)

// The conformance suite's vocabulary: a transport opens zkConns of one
// kind; a case runs on a confEnv, asserting each outcome and noting it
// in a transcript; the suite then asks the two transcripts to be equal.

const (
	transportGo   = "go-zookeeper"
	transportSess = "zksession"
	// confWait bounds every wait of the suite: an event, a close.
	confWait = 10 * time.Second
	// confUser and confPassword are the digest credentials of the ACL
	// cases; the admin connection authenticates as them, to clean up.
	confUser, confPassword = "conf", "pw"
)

// confOpts say how to open a connection.
type confOpts struct {
	auth   []string // digest credentials, "user:password"
	dialer func(network, address string, timeout time.Duration) (net.Conn, error)
	// onSession, if set, hears each time the connection's session is
	// granted or resumed on a new TCP connection; it must not block.
	onSession func()
}

// confTransport opens connections of one kind, closed when the test ends;
// the function it returns closes one before (idempotent; for zksession it
// also waits for the watch followers).
type confTransport struct {
	name string
	open func(t *testing.T, servers []string, o confOpts) (zkConn, func())
}

var confTransports = []confTransport{
	{transportGo, openGoConn},
	{transportSess, openSessConn},
}

// openGoConn is NewClient's transport: a go-zookeeper connection whose
// session is established, with o.auth added through AddAuth.
func openGoConn(t *testing.T, servers []string, o confOpts) (zkConn, func()) {
	t.Helper()
	var opts []func(*zk.Conn)
	if o.dialer != nil {
		opts = append(opts, zk.WithDialer(o.dialer))
	}
	if o.onSession != nil {
		opts = append(opts, zk.WithEventCallback(func(ev zk.Event) {
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				o.onSession()
			}
		}))
	}
	conn := zktest.ConnectT(t, servers, opts...)
	for _, a := range o.auth {
		require.NoError(t, conn.AddAuth("digest", []byte(a)))
	}
	return goConn{conn}, conn.Close
}

// openSessConn is Connect's transport: zklock's own session, with o.auth
// in its Config.
func openSessConn(t *testing.T, servers []string, o confOpts) (zkConn, func()) {
	t.Helper()
	cfg := zksession.Config{SessionTimeout: 10 * time.Second, Dialer: o.dialer}
	if o.onSession != nil {
		cfg.OnState = func(s zksession.State) {
			if s == zksession.StateConnected {
				o.onSession()
			}
		}
	}
	for _, a := range o.auth {
		cfg.Auth = append(cfg.Auth, zksession.Auth{Scheme: "digest", Auth: []byte(a)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := zksession.Dial(ctx, servers, cfg)
	require.NoError(t, err)
	var once sync.Once
	closeFn := func() { once.Do(func() { _ = s.Close() }) }
	t.Cleanup(closeFn)
	own := &ownSession{}
	own.session.Store(s)
	return sessConn{own}, closeFn
}

// confEnv is one transport's run of one case: its own root, an admin
// go-zookeeper connection, the transport's connection under test (zc),
// and the transcript the suite compares across transports.
type confEnv struct {
	t       *testing.T
	tr      confTransport
	servers []string
	root    string
	admin   *zk.Conn
	zc      zkConn
	closeZC func()
	log     []string
}

var confUnsafe = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// newConfEnv gives the test a fresh root "/zklock-conformance/<test>"
// (deleted when it ends, after checking that no ephemeral node is left)
// and a connection of transport tr.
func newConfEnv(t *testing.T, tr confTransport, servers []string) *confEnv {
	t.Helper()
	e := &confEnv{t: t, tr: tr, servers: servers}
	e.root = "/zklock-conformance/" + confUnsafe.ReplaceAllString(t.Name(), "_")
	e.admin = zktest.ConnectT(t, servers)
	require.NoError(t, e.admin.AddAuth("digest", []byte(confUser+":"+confPassword)))
	require.NoError(t, zktest.DeleteTree(e.admin, e.root))
	require.NoError(t, zktest.CreatePath(e.admin, e.root))
	t.Cleanup(func() {
		zktest.WaitNoEphemerals(t, e.admin, e.root, confWait)
		require.NoError(t, zktest.DeleteTree(e.admin, e.root))
	})
	e.zc, e.closeZC = tr.open(t, servers, confOpts{})
	return e
}

// open opens another connection of the env's transport.
func (e *confEnv) open(o confOpts) (zkConn, func()) {
	e.t.Helper()
	return e.tr.open(e.t, e.servers, o)
}

// openLinked opens another connection of the env's transport through a
// Link of its own (internal/zktest's Faults: Pause is a blackhole, Cut
// drops the connections), with the session's grants and resumptions on
// the channel it returns, the first one already taken.
func (e *confEnv) openLinked() (zkConn, func(), *zktest.Faults, <-chan struct{}) {
	e.t.Helper()
	link := zktest.NewFaultsT(e.t, e.servers)
	sessions := make(chan struct{}, 16)
	zc, closeZC := e.open(confOpts{dialer: link.Dial, onSession: func() {
		select {
		case sessions <- struct{}{}:
		default:
		}
	}})
	awaitSession(e.t, sessions)
	return zc, closeZC, link, sessions
}

// awaitSession waits for the next session grant or resumption, failing t
// after confWait.
func awaitSession(t *testing.T, sessions <-chan struct{}) {
	t.Helper()
	select {
	case <-sessions:
	case <-time.After(confWait):
		t.Fatalf("no session granted or resumed within %v", confWait)
	}
}

// p is the path rel under the env's root.
func (e *confEnv) p(rel string) string { return e.root + rel }

// note adds a line to the transcript, with the root cut from paths.
func (e *confEnv) note(format string, args ...any) {
	e.log = append(e.log, strings.ReplaceAll(fmt.Sprintf(format, args...), e.root, "<root>"))
}

// expect asserts that err is want (nil for success, else errors.Is) and
// notes the outcome as what's.
func (e *confEnv) expect(what string, err, want error) {
	e.t.Helper()
	e.note("%s: %s", what, errName(err))
	if want == nil {
		if err != nil {
			e.t.Errorf("%s: %v, want success", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		e.t.Errorf("%s: %v, want %v", what, err, want)
	}
}

// expectSomeErr asserts that err is not nil, and notes only that: the
// transports may use different errors (the test logs which).
func (e *confEnv) expectSomeErr(what string, err error) {
	e.t.Helper()
	e.t.Logf("%s: %s returns %v (%s)", what, e.tr.name, err, errName(err))
	if err == nil {
		e.t.Errorf("%s: success, want an error", what)
	}
	e.note("%s: some error", what)
}

// expectStatOnErr asserts that a call that failed returned no Stat, or a
// zero one (go-zookeeper returns a zero Stat, zklock's session nil), and
// notes only that.
func (e *confEnv) expectStatOnErr(what string, st *zk.Stat) {
	e.t.Helper()
	if st != nil && *st != (zk.Stat{}) {
		e.t.Errorf("%s: stat %+v on an error, want nil or zero", what, *st)
	}
	e.note("%s: no stat", what)
}

// confSentinels are the errors a transcript names an error by.
var confSentinels = []struct {
	name string
	err  error
}{
	{"ErrNoNode", zk.ErrNoNode}, {"ErrNodeExists", zk.ErrNodeExists},
	{"ErrBadVersion", zk.ErrBadVersion}, {"ErrNotEmpty", zk.ErrNotEmpty},
	{"ErrNoChildrenForEphemerals", zk.ErrNoChildrenForEphemerals},
	{"ErrNoAuth", zk.ErrNoAuth}, {"ErrInvalidACL", zk.ErrInvalidACL},
	{"ErrAuthFailed", zk.ErrAuthFailed}, {"ErrBadArguments", zk.ErrBadArguments},
	{"ErrInvalidFlags", zk.ErrInvalidFlags}, {"ErrInvalidPath", zk.ErrInvalidPath},
	{"ErrAPIError", zk.ErrAPIError}, {"ErrUnknown", zk.ErrUnknown},
	{"ErrClosing", zk.ErrClosing}, {"ErrConnectionClosed", zk.ErrConnectionClosed},
	{"ErrSessionExpired", zk.ErrSessionExpired}, {"ErrNoServer", zk.ErrNoServer},
	{"context.Canceled", context.Canceled}, {"context.DeadlineExceeded", context.DeadlineExceeded},
}

// errName names err by the first sentinel it matches, else by its text.
func errName(err error) string {
	if err == nil {
		return "nil"
	}
	for _, s := range confSentinels {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return fmt.Sprintf("unmatched %q", err.Error())
}

// statName is a Stat's fields that do not depend on when the case ran.
func statName(st *zk.Stat) string {
	if st == nil {
		return "stat=nil"
	}
	return fmt.Sprintf("stat{version=%d cversion=%d aversion=%d dataLength=%d numChildren=%d owner=%s}",
		st.Version, st.Cversion, st.Aversion, st.DataLength, st.NumChildren, ownerName(st.EphemeralOwner))
}

// ownerName is an EphemeralOwner without the session's id.
func ownerName(o int64) string {
	if o == 0 {
		return "none"
	}
	return "session"
}

// eventName is an Event, as a transcript line.
func eventName(ev zk.Event) string {
	return fmt.Sprintf("event{type=%v state=%v path=%s err=%s server=%q}", ev.Type, ev.State, ev.Path, errName(ev.Err), ev.Server)
}

// nextEvent receives ch's one event, then asserts that ch is closed (every
// receiver wakes), and notes both.
func (e *confEnv) nextEvent(what string, ch <-chan zk.Event) zk.Event {
	e.t.Helper()
	require.NotNil(e.t, ch, "%s: no watch channel", what)
	var ev zk.Event
	select {
	case got, ok := <-ch:
		require.True(e.t, ok, "%s: the channel closed with no event", what)
		ev = got
	case <-time.After(confWait):
		e.t.Fatalf("%s: no event within %v", what, confWait)
	}
	e.note("%s: %s", what, eventName(ev))
	select {
	case extra, ok := <-ch:
		if ok {
			e.t.Errorf("%s: a second event %s, want the channel closed", what, eventName(extra))
		}
		e.note("%s: then closed=%v", what, !ok)
	case <-time.After(confWait):
		e.t.Errorf("%s: the channel is still open %v after its event", what, confWait)
		e.note("%s: then open", what)
	}
	return ev
}

// quiet asserts that ch has no event now (the watch has not fired).
func (e *confEnv) quiet(what string, ch <-chan zk.Event) {
	e.t.Helper()
	select {
	case ev := <-ch:
		e.t.Errorf("%s: early event %s", what, eventName(ev))
	default:
	}
}
