package zktest

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// serversEnv names the environment variable listing an external ensemble.
const serversEnv = "ZK_SERVERS"

// externalServers returns the addresses in ZK_SERVERS, or nil.
func externalServers() []string {
	var servers []string
	for _, s := range strings.Split(os.Getenv(serversEnv), ",") {
		if s = strings.TrimSpace(s); s != "" {
			servers = append(servers, s)
		}
	}
	return servers
}

// externalCluster is an ensemble the harness does not manage.
type externalCluster struct {
	servers []string
}

func startExternal(ctx context.Context, cfg Config, servers []string) (Cluster, error) {
	if cfg.Size > 1 {
		return nil, fmt.Errorf("zktest: %s is set: a %d-server ensemble cannot be started: %w",
			serversEnv, cfg.Size, ErrUnsupported)
	}
	if cfg.ContainerCheckInterval != 0 {
		return nil, fmt.Errorf("zktest: %s is set: ContainerCheckInterval needs server settings: %w",
			serversEnv, ErrUnsupported)
	}
	if cfg.DataDir != "" {
		return nil, fmt.Errorf("zktest: %s is set: DataDir needs servers the harness starts: %w",
			serversEnv, ErrUnsupported)
	}
	if cfg.Isolatable {
		return nil, fmt.Errorf("zktest: %s is set: Isolatable needs servers the harness starts: %w",
			serversEnv, ErrUnsupported)
	}
	if cfg.Laggable {
		return nil, fmt.Errorf("zktest: %s is set: Laggable needs servers the harness starts: %w",
			serversEnv, ErrUnsupported)
	}
	if cfg.LocalSessions || cfg.SyncLimit != 0 {
		return nil, fmt.Errorf("zktest: %s is set: LocalSessions and SyncLimit need server settings: %w",
			serversEnv, ErrUnsupported)
	}
	if cfg.Port != 0 {
		return nil, fmt.Errorf("zktest: %s is set: Port needs servers the harness starts: %w",
			serversEnv, ErrUnsupported)
	}
	if cfg.TLS != nil {
		return nil, fmt.Errorf("zktest: %s is set: TLS needs servers the harness starts: %w",
			serversEnv, ErrUnsupported)
	}
	for _, s := range servers {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return nil, fmt.Errorf("zktest: %s: bad address %q: %w", serversEnv, s, err)
		}
		d := net.Dialer{Timeout: 5 * time.Second}
		conn, err := d.DialContext(ctx, "tcp", s)
		if err != nil {
			return nil, fmt.Errorf("zktest: %s: server %s unreachable: %w", serversEnv, s, err)
		}
		conn.Close()
	}
	return &externalCluster{servers: servers}, nil
}

func (c *externalCluster) Servers() []string { return append([]string(nil), c.servers...) }

func (c *externalCluster) Stop(i int) error {
	return fmt.Errorf("zktest: stop server %d of %s: %w", i, serversEnv, ErrUnsupported)
}

func (c *externalCluster) Start(i int) error {
	return fmt.Errorf("zktest: start server %d of %s: %w", i, serversEnv, ErrUnsupported)
}

func (c *externalCluster) Kill(i int) error {
	return fmt.Errorf("zktest: kill server %d of %s: %w", i, serversEnv, ErrUnsupported)
}

func (c *externalCluster) Close() error { return nil }

func (c *externalCluster) Backend() string { return "external" }
