package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/zklock/zklock/zktest"
)

const devUsage = `Usage: zklock dev [-servers N] [-port P]

Runs ZooKeeper for local development, in the foreground, as consul agent
-dev does: one server, or an ensemble of N on 127.0.0.1, from
ZOOKEEPER_HOME or Debian's zookeeper package (apt-get install
zookeeper), with its data in a temporary directory. It prints the
connect string on the first line of standard output and a line that
exports it as ZK_SERVERS on the second, then runs until SIGINT (Ctrl-C)
or SIGTERM: it then stops the servers, removes their data, and exits 0.
It always starts servers of its own, whatever ZK_SERVERS says.

Flags:
  -servers N   servers in the ensemble, 1 to 9 (default 1)
  -port P      the first server's client port; server i listens on P+i;
               0 picks free ports (default 2181, ZooKeeper's own)
`

// devPort is the dev server's client port by default: ZooKeeper's own,
// which programs and tools try first.
const devPort = 2181

// maxDevServers bounds the size of a dev ensemble.
const maxDevServers = 9

// runDev is the dev command.
func runDev(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	n := fs.Int("servers", 1, "")
	port := fs.Int("port", devPort, "")
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, devUsage)
		return exitOK
	case err == nil && fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case err == nil && (*n < 1 || *n > maxDevServers):
		err = fmt.Errorf("-servers %d: want 1 to %d", *n, maxDevServers)
	case err == nil && (*port < 0 || *port+*n-1 > 65535):
		err = fmt.Errorf("-port %d: want 0 to %d", *port, 65536-*n)
	}
	if err != nil {
		fmt.Fprintf(stderr, "zklock dev: %v\nRun 'zklock help dev' for usage.\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Unsetenv("ZK_SERVERS") // the kit would use that ensemble instead of starting one
	fmt.Fprintf(stderr, "zklock dev: starting %d ZooKeeper server(s)...\n", *n)
	cluster, err := zktest.Start(ctx, zktest.Config{Servers: *n, Port: *port})
	if err != nil {
		fmt.Fprintf(stderr, "zklock dev: %v\n", err)
		return exitError
	}
	fmt.Fprintln(stdout, cluster.ConnectString())
	fmt.Fprintf(stdout, "export ZK_SERVERS=%s\n", cluster.ConnectString())
	fmt.Fprintln(stderr, "zklock dev: serving; Ctrl-C stops it and removes its data")
	<-ctx.Done()
	fmt.Fprintln(stderr, "zklock dev: stopping")
	if err := cluster.Close(); err != nil {
		fmt.Fprintf(stderr, "zklock dev: %v\n", err)
		return exitError
	}
	return exitOK
}
