package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/zklock/zklock"
)

// Defaults of the common flags. The session timeout is the library's
// default (zklock.WithSessionTimeout).
const (
	defaultSessionTimeout = 30 * time.Second
	defaultConnectTimeout = 10 * time.Second
)

// errUsage marks an error in the command line: exit code 2.
var errUsage = errors.New("usage")

// errNoNode marks an error reporting that a path or node given on the
// command line does not exist: exit code 4. It is wrapped by the tool's
// own messages (see noNode); zk.ErrNoNode met along the way is not.
var errNoNode = errors.New("no such node")

// common are the flags every command takes.
type common struct {
	fs             *flag.FlagSet
	name, usage    string // the command's name, and its synopsis and description
	servers        string
	namespace      string
	auth           string
	sessionTimeout time.Duration
	connectTimeout time.Duration

	extra []zklock.Option // the command's own Client options, set while checking its flags
	check func() error    // the command's own checks of its flags, if any: see pathAndClient
}

// newCommon makes a command's flag set with the common flags. usage is the
// command's synopsis and description, printed before the flags.
func newCommon(name, usage string) *common {
	c := &common{fs: flag.NewFlagSet(name, flag.ContinueOnError), name: name, usage: usage}
	c.fs.SetOutput(io.Discard) // errors and usage are printed by exitFor
	// Not os.Getenv's value as the default: the flag's help would print
	// that default after its own "(default $ZK_SERVERS)". parse reads it.
	c.fs.StringVar(&c.servers, "servers", "", "ZooKeeper servers, `host:port,...` (default $ZK_SERVERS)")
	c.fs.StringVar(&c.namespace, "namespace", "", "namespace: every path lives under /`ns`")
	c.fs.StringVar(&c.auth, "auth", "", "digest authentication, `user:password`")
	// No default of the flag's own either, which the help would print
	// after the text's: parse sets it.
	c.fs.DurationVar(&c.sessionTimeout, "session-timeout", 0,
		fmt.Sprintf("ZooKeeper session timeout (default %v, as the library's)", defaultSessionTimeout))
	c.fs.DurationVar(&c.connectTimeout, "connect-timeout", defaultConnectTimeout, "give up if no ZooKeeper session is made within this long")
	return c
}

// printUsage prints the command's usage, flags and exit codes to w.
func (c *common) printUsage(w io.Writer) {
	fmt.Fprint(w, c.usage, "\nFlags:\n")
	c.fs.SetOutput(w)
	c.fs.PrintDefaults()
	c.fs.SetOutput(io.Discard)
	fmt.Fprint(w, "\n", exitCodesText)
}

// Positional arguments, named as the error for a missing one names them.
const (
	argPath = "PATH (the lock's path)"
	argNode = "NODE (a node of the lock: its name as 'zklock inspect' shows it, or its sequence number)"
)

// parse parses args, whose flags may come before, between or after the
// positional arguments, one per entry of want: each a name and what it is,
// as argPath, which the usage error for a missing one quotes. It returns
// the positional arguments and what follows them (after a "--", if any).
// flag.ErrHelp is returned as is. Without -servers, the servers are
// $ZK_SERVERS; without -session-timeout, the timeout is the library's
// default.
func (c *common) parse(args []string, want ...string) (pos, rest []string, err error) {
	return c.parseSome(args, len(want), want...)
}

// parseSome is parse for a command line whose first required positional
// arguments must be there and whose others may be missing.
func (c *common) parseSome(args []string, required int, want ...string) (pos, rest []string, err error) {
	n := len(want)
	rest = args
	for {
		if err := c.fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, nil, err
			}
			return nil, nil, fmt.Errorf("%w: %w", errUsage, err)
		}
		rest = c.fs.Args()
		if len(pos) == n || len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		rest = rest[1:]
		if len(pos) == n && (len(rest) == 0 || !strings.HasPrefix(rest[0], "-")) {
			break
		}
	}
	if len(pos) < required {
		return nil, nil, fmt.Errorf("%w: missing %s", errUsage, strings.Join(want[len(pos):required], " and "))
	}
	if !c.isSet("servers") {
		c.servers = os.Getenv("ZK_SERVERS")
	}
	if !c.isSet("session-timeout") {
		c.sessionTimeout = defaultSessionTimeout
	}
	return pos, rest, nil
}

// isSet reports whether the flag name was given on the command line.
func (c *common) isSet(name string) bool {
	set := false
	c.fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	return set
}

// pathAndClient parses a command line of one path, named and described
// by what (as argPath), and no command, checks the path and, with c.check,
// the command's flags, and connects.
func (c *common) pathAndClient(args []string, what string) (string, *zklock.Client, error) {
	pos, rest, err := c.parse(args, what)
	if err != nil {
		return "", nil, err
	}
	if len(rest) > 0 {
		return "", nil, fmt.Errorf("%w: unexpected argument %q", errUsage, rest[0])
	}
	if err := checkPath(pos[0]); err != nil {
		return "", nil, err
	}
	if c.check != nil {
		if err := c.check(); err != nil {
			return "", nil, err
		}
	}
	client, err := c.connect()
	return pos[0], client, err
}

// connect connects a Client as the common flags say.
func (c *common) connect() (*zklock.Client, error) {
	if c.servers == "" {
		return nil, fmt.Errorf("%w: no ZooKeeper servers: set -servers or ZK_SERVERS", errUsage)
	}
	opts := []zklock.Option{
		zklock.WithSessionTimeout(c.sessionTimeout),
		zklock.WithConnectTimeout(c.connectTimeout),
		zklock.WithNamespace(c.namespace),
	}
	opts = append(opts, c.extra...)
	if c.auth != "" {
		if !strings.Contains(c.auth, ":") {
			return nil, fmt.Errorf("%w: -auth %q: want user:password", errUsage, c.auth)
		}
		opts = append(opts, zklock.WithAuth("digest", []byte(c.auth)))
	}
	servers := strings.Split(c.servers, ",")
	client, err := zklock.Connect(servers, opts...)
	if errors.Is(err, zklock.ErrInvalidArgument) {
		return nil, fmt.Errorf("%w: %w", errUsage, err)
	}
	if err != nil {
		return nil, connectError(c.servers, c.connectTimeout, err)
	}
	return client, nil
}

// full maps p, relative to the namespace, to its ZooKeeper path.
func (c *common) full(p string) string {
	ns := strings.Trim(c.namespace, "/")
	if ns == "" {
		return p
	}
	return path.Join("/"+ns, p)
}

// checkPath returns a usage error for a lock path ZooKeeper refuses.
func checkPath(p string) error {
	if !strings.HasPrefix(p, "/") || (len(p) > 1 && strings.HasSuffix(p, "/")) || strings.Contains(p, "//") || path.Clean(p) != p {
		return fmt.Errorf("%w: path %q: want an absolute ZooKeeper path such as /locks/job", errUsage, p)
	}
	return nil
}

// exitFor reports err on stderr, prefixed with the command's name, and
// returns its exit code: 0 for -h (usage on stdout), 2 for usage errors
// (with a hint), 4 for a missing path or node, 1 otherwise.
func (c *common) exitFor(err error, stdout, stderr io.Writer) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		c.printUsage(stdout)
		return exitOK
	case errors.Is(err, errUsage):
		msg := strings.TrimPrefix(err.Error(), errUsage.Error()+": ")
		fmt.Fprintf(stderr, "zklock %s: %s\nRun 'zklock help %s' for usage.\n", c.name, msg, c.name)
		return exitUsage
	}
	fmt.Fprintf(stderr, "zklock %s: %v\n", c.name, err)
	if errors.Is(err, errNoNode) {
		return exitNoNode
	}
	return exitError
}
