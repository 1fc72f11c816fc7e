package zktest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// cfgLines parses zoo.cfg contents into a map, failing on duplicates.
func cfgLines(t *testing.T, s string) map[string]string {
	t.Helper()
	m := make(map[string]string)
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("bad zoo.cfg line %q", line)
		}
		if _, dup := m[k]; dup {
			t.Fatalf("duplicate zoo.cfg key %q", k)
		}
		m[k] = v
	}
	return m
}

func TestConfigDefaults(t *testing.T) {
	got := Config{}.WithDefaults()
	want := Config{Size: 1, TickTime: 200 * time.Millisecond, MinSessionTimeout: 400 * time.Millisecond, MaxSessionTimeout: 60 * time.Second, SyncLimit: 5}
	if got != want {
		t.Errorf("Config{}.WithDefaults() = %+v, want %+v", got, want)
	}
	got = Config{Size: 3, TickTime: time.Second}.WithDefaults()
	if got.MinSessionTimeout != 2*time.Second || got.Size != 3 {
		t.Errorf("WithDefaults with TickTime 1s = %+v", got)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{Size: -1},
		{TickTime: -time.Second},
		{MinSessionTimeout: 2 * time.Minute},
		{ContainerCheckInterval: -1},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v.Validate() = nil, want an error", c)
		}
	}
	if err := (Config{Size: 3, ContainerCheckInterval: time.Millisecond}).Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if _, err := Start(context.Background(), Config{Size: -1}); err == nil {
		t.Errorf("Start with Size -1: no error")
	}
}

func TestZooCfgSingleServer(t *testing.T) {
	s, err := ZooCfg(Config{}, "/data", 1, []int{2181}, []int{2888}, []int{3888}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := cfgLines(t, s)
	want := map[string]string{
		"tickTime":               "200",
		"initLimit":              "10",
		"syncLimit":              "5",
		"dataDir":                "/data",
		"clientPort":             "2181",
		"minSessionTimeout":      "400",
		"maxSessionTimeout":      "60000",
		"maxClientCnxns":         "0",
		"admin.enableServer":     "false",
		"4lw.commands.whitelist": "*",
		"reconfigEnabled":        "false",
		"forceSync":              "no",
		"preAllocSize":           "4096",
		"standaloneEnabled":      "false",
		"server.1":               "127.0.0.1:2888:3888",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected key %s=%s in single-server zoo.cfg", k, got[k])
		}
	}
}

func TestZooCfgEnsemble(t *testing.T) {
	cfg := Config{Size: 3, TickTime: 100 * time.Millisecond, MaxSessionTimeout: 30 * time.Second}
	s, err := ZooCfg(cfg, "/d2", 2, []int{1, 2, 3}, []int{11, 12, 13}, []int{21, 22, 23}, []string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	got := cfgLines(t, s)
	for k, v := range map[string]string{
		"tickTime":          "100",
		"minSessionTimeout": "200",
		"maxSessionTimeout": "30000",
		"clientPort":        "2",
		"dataDir":           "/d2",
		"standaloneEnabled": "false",
		"server.1":          "a:11:21",
		"server.2":          "b:12:22",
		"server.3":          "c:13:23",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	s, err = ZooCfg(Config{Size: 2}, "/d", 1, []int{1, 2}, []int{3, 4}, []int{5, 6}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfgLines(t, s); got["server.2"] != "127.0.0.1:4:6" {
		t.Errorf("server.2 = %q, want 127.0.0.1:4:6", got["server.2"])
	}
}

// Local sessions and a syncLimit of the caller's: the settings of an
// ensemble whose follower may lag.
func TestZooCfgLocalSessionsAndSyncLimit(t *testing.T) {
	cfg := Config{Size: 3, LocalSessions: true, SyncLimit: 40}
	s, err := ZooCfg(cfg, "/d", 1, []int{1, 2, 3}, []int{11, 12, 13}, []int{21, 22, 23}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := cfgLines(t, s)
	for k, v := range map[string]string{
		"syncLimit":                     "40",
		"localSessionsEnabled":          "true",
		"localSessionsUpgradingEnabled": "true",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	s, err = ZooCfg(Config{Size: 3}, "/d", 1, []int{1, 2, 3}, []int{11, 12, 13}, []int{21, 22, 23}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got = cfgLines(t, s)
	if _, ok := got["localSessionsEnabled"]; ok {
		t.Errorf("localSessionsEnabled set without LocalSessions")
	}
	if got["syncLimit"] != "5" {
		t.Errorf("default syncLimit = %q, want 5", got["syncLimit"])
	}
}

func TestZooCfgErrors(t *testing.T) {
	one := []int{1}
	for name, f := range map[string]func() (string, error){
		"no ports":      func() (string, error) { return ZooCfg(Config{}, "/d", 1, nil, nil, nil, nil) },
		"size mismatch": func() (string, error) { return ZooCfg(Config{Size: 3}, "/d", 1, one, one, one, nil) },
		"myid 0":        func() (string, error) { return ZooCfg(Config{}, "/d", 0, one, one, one, nil) },
		"myid too big": func() (string, error) {
			return ZooCfg(Config{Size: 2}, "/d", 3, []int{1, 2}, []int{3, 4}, []int{5, 6}, nil)
		},
		"missing quorum": func() (string, error) { return ZooCfg(Config{}, "/d", 1, one, nil, one, nil) },
		"short election": func() (string, error) {
			return ZooCfg(Config{Size: 2}, "/d", 1, []int{1, 2}, []int{3, 4}, []int{5}, nil)
		},
		"hosts mismatch": func() (string, error) {
			return ZooCfg(Config{Size: 2}, "/d", 1, []int{1, 2}, []int{3, 4}, []int{5, 6}, []string{"a"})
		},
		"empty data dir": func() (string, error) { return ZooCfg(Config{}, "", 1, one, one, one, nil) },
		"invalid config": func() (string, error) { return ZooCfg(Config{Size: -1}, "/d", 1, one, one, one, nil) },
		"min above max": func() (string, error) {
			return ZooCfg(Config{MaxSessionTimeout: time.Millisecond}, "/d", 1, one, one, one, nil)
		},
	} {
		if s, err := f(); err == nil {
			t.Errorf("%s: no error; got\n%s", name, s)
		}
	}
}

func TestJVMFlags(t *testing.T) {
	flags := JVMFlags(Config{})
	if !slices.Contains(flags, "-Dzookeeper.admin.enableServer=false") {
		t.Errorf("JVMFlags(Config{}) = %v, want the admin server disabled", flags)
	}
	for _, f := range flags {
		if strings.Contains(f, "znode.container") {
			t.Errorf("JVMFlags(Config{}) has %s, want the server default", f)
		}
	}
	flags = JVMFlags(Config{ContainerCheckInterval: 1500 * time.Microsecond})
	for _, want := range []string{"-Dznode.container.checkIntervalMs=2", "-Dznode.container.maxPerMinute=100000"} {
		if !slices.Contains(flags, want) {
			t.Errorf("JVMFlags = %v, want %s", flags, want)
		}
	}
}

func TestFindInstallErrors(t *testing.T) {
	old := debianJavaDir
	debianJavaDir = t.TempDir()
	t.Cleanup(func() { debianJavaDir = old })

	t.Setenv("ZOOKEEPER_HOME", "")
	_, err := findInstall()
	if !errors.Is(err, errNoZooKeeper) {
		t.Fatalf("findInstall without ZooKeeper = %v, want errNoZooKeeper", err)
	}
	const want = "install Debian's zookeeper package (apt-get install zookeeper) or set ZOOKEEPER_HOME or ZK_SERVERS"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}

	home := t.TempDir()
	t.Setenv("ZOOKEEPER_HOME", home)
	if _, err := findInstall(); err == nil || !strings.Contains(err.Error(), "no jars") {
		t.Errorf("findInstall with empty ZOOKEEPER_HOME = %v, want a 'no jars' error", err)
	}

	if err := os.MkdirAll(filepath.Join(home, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"lib/b.jar", "lib/a.jar", "zookeeper-3.8.4.jar"} {
		if err := os.WriteFile(filepath.Join(home, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("JAVA_HOME", "")
	inst, err := findInstall()
	if err != nil {
		t.Skipf("no java here: %v", err)
	}
	want2 := []string{filepath.Join(home, "lib/a.jar"), filepath.Join(home, "lib/b.jar"), filepath.Join(home, "zookeeper-3.8.4.jar")}
	if !slices.Equal(inst.classpath, want2) {
		t.Errorf("classpath = %v, want %v", inst.classpath, want2)
	}
}

func TestMillis(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		0:                       1,
		time.Microsecond:        1,
		time.Millisecond:        1,
		1001 * time.Microsecond: 2,
		200 * time.Millisecond:  200,
	} {
		if got := millis(d); got != want {
			t.Errorf("millis(%v) = %d, want %d", d, got, want)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got, want := oneLine("a: b\n--- tail ---\n  x y\n"), "a: b | --- tail --- | x y"; got != want {
		t.Errorf("oneLine = %q, want %q", got, want)
	}
}
