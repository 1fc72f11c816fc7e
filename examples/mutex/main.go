// Command mutex shows two ZooKeeper sessions taking turns on one zklock
// Mutex. It uses the ensemble in ZK_SERVERS (comma-separated host:port), or
// starts a throwaway ZooKeeper server when ZK_SERVERS is unset.
//
//	go run ./examples/mutex
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/internal/zktest"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx := context.Background()
	servers := strings.Split(os.Getenv("ZK_SERVERS"), ",")
	if os.Getenv("ZK_SERVERS") == "" {
		fmt.Println("ZK_SERVERS is unset: starting a ZooKeeper server...")
		cluster, err := zktest.Start(ctx, zktest.Config{})
		if err != nil {
			return err
		}
		defer cluster.Close()
		servers = cluster.Servers()
		fmt.Printf("ZooKeeper (%s) at %s\n", cluster.Backend(), strings.Join(servers, ","))
	}

	var wg sync.WaitGroup
	for _, name := range []string{"alice", "bob"} {
		// Each worker is its own session, as two processes would be.
		client, err := zklock.Connect(servers, zklock.WithSessionTimeout(10*time.Second))
		if err != nil {
			return err
		}
		defer client.Close()
		m, err := zklock.NewMutex(client, "/examples/mutex")
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for turn := 1; turn <= 3; turn++ {
				err := m.Do(ctx, func(ctx context.Context) error {
					token, err := m.Token(ctx)
					if err != nil {
						return err
					}
					fmt.Printf("%-5s holds the lock (turn %d, fencing token %d)\n", name, turn, token)
					time.Sleep(200 * time.Millisecond) // the critical section
					fmt.Printf("%-5s releases\n", name)
					return nil
				})
				if err != nil {
					log.Printf("%s: %v", name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	fmt.Println("done: the two sessions took turns")
	return nil
}
