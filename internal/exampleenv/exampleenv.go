// Package exampleenv gives the commands under examples/ their ZooKeeper:
// the ensemble in ZK_SERVERS, or a throwaway server of their own.
package exampleenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zklock/zklock/internal/zktest"
	kit "github.com/zklock/zklock/zktest"
)

// Servers returns the servers in ZK_SERVERS (comma-separated host:port)
// and a no-op stop function, or, when ZK_SERVERS is unset, starts a
// ZooKeeper server (with the public test kit's Start), says so on out, and returns its
// address and a function that stops it and removes its data.
func Servers(ctx context.Context, out io.Writer) (servers []string, stop func(), err error) {
	if s := os.Getenv("ZK_SERVERS"); s != "" {
		return strings.Split(s, ","), func() {}, nil
	}
	fmt.Fprintln(out, "ZK_SERVERS is unset: starting a ZooKeeper server...")
	cluster, err := kit.Start(ctx, kit.Config{}) // the public test kit, as a user's program would
	if err != nil {
		return nil, nil, fmt.Errorf("start ZooKeeper (run `make deps` to install it): %w", err)
	}
	fmt.Fprintf(out, "ZooKeeper at %s\n", cluster.ConnectString())
	return cluster.Servers(), func() { cluster.Close() }, nil
}

// Main runs an example: it finds or starts ZooKeeper, calls run with
// os.Stdout and the servers, stops the server it started, and exits with
// status 1, after printing the error on stderr, if anything failed.
func Main(run func(ctx context.Context, out io.Writer, servers []string) error) {
	ctx := context.Background()
	servers, stop, err := Servers(ctx, os.Stdout)
	if err == nil {
		err = run(ctx, os.Stdout, servers)
		stop()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// Put sets the node at p to value, creating it and its missing ancestors
// (as persistent nodes with an open ACL) if needed.
func Put(conn *zk.Conn, p, value string) error {
	_, err := conn.Set(p, []byte(value), -1)
	if !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	if err := zktest.CreatePath(conn, path.Dir(p)); err != nil {
		return err
	}
	_, err = conn.Create(p, []byte(value), 0, zk.WorldACL(zk.PermAll))
	return err
}

// Cleanup deletes root and everything under it, then each ancestor of root
// that is left empty, so that an example leaves nothing behind. It returns
// the first error other than an ancestor that is not empty.
func Cleanup(conn *zk.Conn, root string) error {
	if err := zktest.DeleteTree(conn, root); err != nil {
		return err
	}
	for p := path.Dir(root); p != "/"; p = path.Dir(p) {
		err := conn.Delete(p, -1)
		switch {
		case errors.Is(err, zk.ErrNotEmpty):
			return nil
		case err != nil && !errors.Is(err, zk.ErrNoNode):
			return err
		}
	}
	return nil
}

// RunT runs an example's run function against the test package's shared
// ZooKeeper server (the public test kit's Shared), fails t if it returns
// an error, logs what it printed and returns it. If root is not "", it
// also checks that the example deleted root, and everything under it, on
// its way out.
func RunT(t testing.TB, run func(ctx context.Context, out io.Writer, servers []string) error, root string) string {
	t.Helper()
	servers := kit.Shared(t).Servers()
	var out bytes.Buffer
	err := run(context.Background(), &out, servers)
	t.Log(out.String())
	if err != nil {
		t.Fatalf("example: %v", err)
	}
	if root != "" {
		conn, _, err := zk.Connect(servers, 10*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)))
		if err != nil {
			t.Fatalf("connect to %v: %v", servers, err)
		}
		defer conn.Close()
		exists, _, err := conn.Exists(root)
		if err != nil || exists {
			t.Errorf("the example left %s behind (exists %v, err %v)", root, exists, err)
		}
	}
	return out.String()
}
