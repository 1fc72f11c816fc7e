// Command withzk runs a command with ZK_SERVERS naming a ZooKeeper to use:
// the ensemble ZK_SERVERS already names, or else a server withzk starts
// for the command (the public test kit's Start: one server on a free port
// of 127.0.0.1, from ZOOKEEPER_HOME or Debian's zookeeper package) and
// stops, removing its data, when the command ends, whichever way it ends.
// A SIGINT or SIGTERM that withzk receives is passed on to the command,
// and withzk waits for it before stopping the server. The Makefile's
// example and demo targets run the examples through it.
//
//	go run ./internal/tools/withzk command [arg...]
//
// It exits with the command's status (128+n if signal n ended it), 1 if
// the server did not start or did not stop cleanly, and 2 without a
// command.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/zklock/zklock/zktest"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run runs the command args with stdin, stdout and stderr, and returns
// withzk's exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: withzk command [arg...]")
		return 2
	}
	// Registered first, and for the whole run: no signal that arrives
	// while the server starts or the command runs can kill withzk before
	// it has stopped the server.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)

	env := os.Environ()
	if os.Getenv("ZK_SERVERS") == "" {
		cluster, err := start(stderr)
		if err != nil {
			fmt.Fprintf(stderr, "withzk: %v\n", err)
			return 1
		}
		env = append(env, "ZK_SERVERS="+cluster.ConnectString())
		code := command(args, env, stdin, stdout, stderr, signals)
		if err := cluster.Close(); err != nil {
			fmt.Fprintf(stderr, "withzk: stop ZooKeeper: %v\n", err)
			code = max(code, 1)
		}
		return code
	}
	return command(args, env, stdin, stdout, stderr, signals)
}

// start starts a ZooKeeper server, giving up on a SIGINT or SIGTERM.
func start(stderr io.Writer) (*zktest.Cluster, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintln(stderr, "withzk: ZK_SERVERS is unset: starting a ZooKeeper server...")
	cluster, err := zktest.Start(ctx, zktest.Config{})
	if err != nil && ctx.Err() != nil {
		return nil, errors.New("interrupted while starting ZooKeeper")
	}
	if err != nil {
		return nil, fmt.Errorf("start ZooKeeper (make deps installs it): %w", err)
	}
	fmt.Fprintf(stderr, "withzk: ZooKeeper at %s until the command ends\n", cluster.ConnectString())
	return cluster, nil
}

// command runs args with env, passes it the signals that arrive meanwhile,
// and returns its exit status once it has exited.
func command(args, env []string, stdin io.Reader, stdout, stderr io.Writer, signals <-chan os.Signal) int {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = env, stdin, stdout, stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "withzk: %v\n", err)
		return 127
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for {
		select {
		case sig := <-signals:
			_ = cmd.Process.Signal(sig) // it may have exited meanwhile
		case err := <-exited:
			return status(err, stderr)
		}
	}
}

// status returns the exit status of a command that ended with err, as a
// shell gives it.
func status(err error, stderr io.Writer) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case !errors.As(err, &exit):
		fmt.Fprintf(stderr, "withzk: %v\n", err)
		return 1
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return exit.ExitCode()
}
