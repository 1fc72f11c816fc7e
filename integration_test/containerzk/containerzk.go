// Package containerzk is a zktest.Backend, named "container", that runs
// ZooKeeper servers in Docker containers with testcontainers-go.
//
// No image registry is reachable where these tests run, so the image
// (zklock/zookeeper:3.8-local by default) is built locally, from a root
// filesystem made with Debian's packages, by integration_test/image/build.sh.
// Available runs that script, at most once per process, when the image is
// missing.
//
// A standalone server is one container; an ensemble of N servers is N
// containers on a user-defined Docker network created for the cluster
// (aliases zk1..zkN, quorum port 2888, election port 3888). Each server's
// client port 2181 is published on 127.0.0.1 at a host port chosen before
// the container is created and fixed in its port binding, so that it stays
// the same when the container is stopped and started again and a client's
// server list stays valid.
//
// # Ryuk
//
// testcontainers-go normally starts a "Ryuk" reaper container, whose image
// would have to be pulled from a registry. Importing this package therefore
// sets TESTCONTAINERS_RYUK_DISABLED=true (with os.Setenv, in init, before
// testcontainers reads its configuration) unless the variable is already
// set. Without Ryuk, containers are removed by Cluster.Close; those left
// behind by a test binary that died are removed by the next Available call
// on the same host (they are labelled with the owning process id).
//
// # Environment
//
//	ZK_IMAGE               image to run (default zklock/zookeeper:3.8-local);
//	                       also read by build.sh
//	ZK_IMAGE_BUILD=0       never run build.sh: without the image, the backend
//	                       is unavailable
//	ZK_IMAGE_BUILD_SCRIPT  path of build.sh (default: found next to this
//	                       package's source, or from the working directory)
//	ZK_CONTAINER=0         disable the backend (Available fails)
//	ZK_CONTAINER_VERBOSE=1 keep testcontainers' log output and echo build.sh's
//	                       output to stderr
//
// DOCKER_HOST, DOCKER_API_VERSION and the other Docker client variables
// are honoured by testcontainers' client.
package containerzk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/zklock/zklock/internal/zktest"
)

// BackendName is the name of the backend (zktest.Backend.Name and
// zktest.Cluster.Backend).
const BackendName = "container"

// DefaultImage is the image run when ZK_IMAGE is not set.
const DefaultImage = "zklock/zookeeper:3.8-local"

// Environment variables read by this package.
const (
	EnvImage       = "ZK_IMAGE"
	EnvBuild       = "ZK_IMAGE_BUILD"
	EnvBuildScript = "ZK_IMAGE_BUILD_SCRIPT"
	EnvDisable     = "ZK_CONTAINER"
	EnvVerbose     = "ZK_CONTAINER_VERBOSE"

	// EnvRyukDisabled is testcontainers' switch for its reaper container.
	EnvRyukDisabled = "TESTCONTAINERS_RYUK_DISABLED"
)

// Time limits.
const (
	pingTimeout  = 5 * time.Second
	buildTimeout = 20 * time.Minute
)

// Labels put on every container and network this package creates.
const (
	labelOwner = "org.zklock.zktest"       // value: BackendName
	labelPID   = "org.zklock.zktest.pid"   // process id of the test binary
	labelHost  = "org.zklock.zktest.host"  // host name of the test binary
	labelRole  = "org.zklock.zktest.myid"  // myid of the server
	labelAlias = "org.zklock.zktest.alias" // network alias of the server
)

func init() {
	// The Ryuk reaper's image cannot be pulled here (no registry); see the
	// package documentation. This must happen before testcontainers reads
	// its configuration, which it does once, on first use.
	if _, ok := os.LookupEnv(EnvRyukDisabled); !ok {
		os.Setenv(EnvRyukDisabled, "true")
	}
	if !verbose() {
		// testcontainers logs a banner and every container event to
		// stderr by default.
		tclog.SetDefault(tclog.NewNoopLogger())
	}
}

func verbose() bool { return envTrue(EnvVerbose) }

func envTrue(name string) bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(name))) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

func envFalse(name string) bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv(name))) {
	case "0", "false", "no", "off":
		return true
	}
	return false
}

// Errors wrapped by Available, to tell why the backend cannot be used.
var (
	// ErrNoDocker: no Docker engine answers (or the backend is disabled).
	ErrNoDocker = errors.New("containerzk: no usable Docker engine")
	// ErrNoImage: the engine answers but the image is missing and could
	// not be built.
	ErrNoImage = errors.New("containerzk: ZooKeeper image unavailable")
)

// Backend starts ZooKeeper clusters in Docker containers. Create it with
// New; it is safe for concurrent use.
type Backend struct {
	image  string
	script string // build.sh, or "" if not found

	mu    sync.Mutex
	cli   *testcontainers.DockerClient
	build *buildState // non-nil once a build was started
	swept bool        // stale containers of dead test binaries removed
}

type buildState struct {
	done chan struct{}
	err  error
}

var _ zktest.Backend = (*Backend)(nil)

// New returns the container backend, configured from the environment (see
// the package documentation).
func New() *Backend {
	image := strings.TrimSpace(os.Getenv(EnvImage))
	if image == "" {
		image = DefaultImage
	}
	return &Backend{image: image, script: findBuildScript()}
}

// Register creates the backend with New and registers it with
// zktest.RegisterBackend.
func Register() *Backend {
	b := New()
	zktest.RegisterBackend(b)
	return b
}

// Name returns BackendName.
func (b *Backend) Name() string { return BackendName }

// Image returns the image the backend runs.
func (b *Backend) Image() string { return b.image }

// BuildScript returns the path of build.sh, or "" if it was not found.
func (b *Backend) BuildScript() string { return b.script }

// Available returns nil if the Docker engine answers a ping and the image
// exists, building it with build.sh first if needed. The build runs at most
// once per process, in the background: if ctx ends first, Available returns
// an error and a later call waits for the same build. A failed build is not
// retried.
func (b *Backend) Available(ctx context.Context) error {
	if envFalse(EnvDisable) {
		return fmt.Errorf("%w: disabled by %s=%s", ErrNoDocker, EnvDisable, os.Getenv(EnvDisable))
	}
	cli, err := b.client(ctx)
	if err != nil {
		return err
	}
	defer cli.Close() // idle connections only; the client stays usable
	b.sweepStale(ctx, cli)

	_, err = cli.ImageInspect(ctx, b.image)
	switch {
	case err == nil:
		return nil
	case !cerrdefs.IsNotFound(err):
		return fmt.Errorf("%w: inspect image %s: %w", ErrNoImage, b.image, err)
	}
	if err := b.ensureImage(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrNoImage, err)
	}
	if _, err := cli.ImageInspect(ctx, b.image); err != nil {
		return fmt.Errorf("%w: image %s still missing after %s: %w", ErrNoImage, b.image, b.script, err)
	}
	return nil
}

// client returns the backend's Docker client, connecting on first use, after
// checking that the engine answers a ping.
func (b *Backend) client(ctx context.Context) (*testcontainers.DockerClient, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if b.cli == nil {
		cli, err := testcontainers.NewDockerClientWithOpts(pctx)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNoDocker, err)
		}
		b.cli = cli
	}
	if _, err := b.cli.Ping(pctx, client.PingOptions{}); err != nil {
		b.cli.Close()
		return nil, fmt.Errorf("%w: ping: %w", ErrNoDocker, err)
	}
	return b.cli, nil
}

// ensureImage runs build.sh once per process and waits for it (or ctx).
func (b *Backend) ensureImage(ctx context.Context) error {
	b.mu.Lock()
	st := b.build
	if st == nil {
		switch {
		case envFalse(EnvBuild):
			b.mu.Unlock()
			return fmt.Errorf("containerzk: image %s not found and %s=%s forbids building it",
				b.image, EnvBuild, os.Getenv(EnvBuild))
		case b.script == "":
			b.mu.Unlock()
			return fmt.Errorf("containerzk: image %s not found and build.sh not found (set %s)",
				b.image, EnvBuildScript)
		}
		st = &buildState{done: make(chan struct{})}
		b.build = st
		go func() {
			defer close(st.done)
			st.err = runBuild(b.script, b.image)
		}()
	}
	b.mu.Unlock()
	select {
	case <-st.done:
		return st.err
	case <-ctx.Done():
		return fmt.Errorf("containerzk: image %s is still being built by %s: %w", b.image, b.script, ctx.Err())
	}
}

// runBuild runs build.sh for image and returns an error with the tail of
// its output if it fails.
func runBuild(script, image string) error {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	start := time.Now()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = append(os.Environ(), EnvImage+"="+image)
	var w io.Writer = &out
	if verbose() {
		w = io.MultiWriter(&out, os.Stderr)
	}
	cmd.Stdout, cmd.Stderr = w, w
	// On timeout, SIGTERM the script's process group: its trap stops
	// debootstrap and removes the temporary root filesystem.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	fmt.Fprintf(os.Stderr, "containerzk: image %s not found; building it with %s (takes about a minute)\n", image, script)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("containerzk: %s failed after %v: %w\n%s", script,
			time.Since(start).Round(time.Second), err, tail(out.String(), 30))
	}
	fmt.Fprintf(os.Stderr, "containerzk: built image %s in %v\n", image, time.Since(start).Round(time.Second))
	return nil
}

// findBuildScript locates image/build.sh: $ZK_IMAGE_BUILD_SCRIPT, else next
// to this source file (the module root is its parent directory), else from
// the working directory upwards (for binaries built with -trimpath).
func findBuildScript() string {
	if s := os.Getenv(EnvBuildScript); s != "" {
		if abs, err := filepath.Abs(s); err == nil {
			return abs
		}
		return s
	}
	var candidates []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		candidates = append(candidates, filepath.Join(filepath.Dir(file), "..", "image", "build.sh"))
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			candidates = append(candidates,
				filepath.Join(dir, "image", "build.sh"),
				filepath.Join(dir, "integration_test", "image", "build.sh"))
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() {
			return filepath.Clean(c)
		}
	}
	return ""
}

// labels returns the labels of the containers and networks of this process.
func labels(extra ...string) map[string]string {
	host, _ := os.Hostname()
	l := map[string]string{
		labelOwner: BackendName,
		labelPID:   strconv.Itoa(os.Getpid()),
		labelHost:  host,
	}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return l
}

// sweepStale removes, once per process, the containers and networks left
// behind on this host by test binaries that are no longer running (without
// Ryuk nothing else removes them). Errors are ignored.
func (b *Backend) sweepStale(ctx context.Context, cli *testcontainers.DockerClient) {
	b.mu.Lock()
	if b.swept {
		b.mu.Unlock()
		return
	}
	b.swept = true
	b.mu.Unlock()

	host, _ := os.Hostname()
	stale := func(l map[string]string) bool {
		if l[labelOwner] != BackendName || l[labelHost] != host {
			return false
		}
		pid, err := strconv.Atoi(l[labelPID])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			return false
		}
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	f := client.Filters{}.Add("label", labelOwner+"="+BackendName)
	if res, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f}); err == nil {
		for _, c := range res.Items {
			if stale(c.Labels) {
				_, _ = cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			}
		}
	}
	if res, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f}); err == nil {
		for _, n := range res.Items {
			if stale(n.Labels) {
				_, _ = cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{})
			}
		}
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
