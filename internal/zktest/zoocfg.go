package zktest

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// containerMaxPerMinute is znode.container.maxPerMinute when a
// ContainerCheckInterval is set: high enough that reaping is never
// throttled in tests.
const containerMaxPerMinute = 100000

// ZooCfg returns the contents of zoo.cfg for server myID of an ensemble
// described by cfg.
//
// The ensemble has N = len(clientPorts) servers; server i (0-based) has
// myid i+1, client port clientPorts[i], quorum port quorumPorts[i] and
// election port electionPorts[i], on address hosts[i] (the address the
// other servers reach it at; nil hosts means 127.0.0.1 for all). N must
// equal cfg.Size after defaults, and myID must be in [1, N]. The caller
// must also write the myid file ("<myID>\n" in dataDir/myid).
//
// Even a single server (N == 1) is configured as an ensemble of one
// (standaloneEnabled=false), which reports Mode "leader", not a standalone
// server: ZooKeeper 3.8.0's standalone server accepts client connections
// before it has loaded its database, and a connection arriving in that
// window is answered (or refused) but never closed, because closing it
// throws a NullPointerException (ZooKeeperServer.removeCnxn with a null
// zkDb). A go-zk client reconnecting while the server restarts then hangs
// in its handshake for ten times its read timeout (over a minute for a
// 10s session). An ensemble member loads its database first.
//
// The client port listens on every interface; append
// "clientPortAddress=..." to restrict it. Settings ZooKeeper only reads as
// Java system properties (such as the container reaping interval) are not
// in zoo.cfg: pass JVMFlags(cfg) to the JVM as well.
func ZooCfg(cfg Config, dataDir string, myID int, clientPorts, quorumPorts, electionPorts []int, hosts []string) (string, error) {
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	cfg = cfg.WithDefaults()
	n := len(clientPorts)
	switch {
	case n == 0:
		return "", fmt.Errorf("zktest: zoo.cfg: no client ports")
	case n != cfg.Size:
		return "", fmt.Errorf("zktest: zoo.cfg: %d client ports for a %d-server ensemble", n, cfg.Size)
	case myID < 1 || myID > n:
		return "", fmt.Errorf("zktest: zoo.cfg: myid %d outside [1, %d]", myID, n)
	case dataDir == "":
		return "", fmt.Errorf("zktest: zoo.cfg: empty dataDir")
	case len(quorumPorts) != n || len(electionPorts) != n:
		return "", fmt.Errorf("zktest: zoo.cfg: %d servers need %d quorum and election ports, got %d and %d",
			n, n, len(quorumPorts), len(electionPorts))
	case hosts != nil && len(hosts) != n:
		return "", fmt.Errorf("zktest: zoo.cfg: %d servers need %d hosts, got %d", n, n, len(hosts))
	}

	var b strings.Builder
	kv := func(k string, v any) { fmt.Fprintf(&b, "%s=%v\n", k, v) }
	kv("tickTime", millis(cfg.TickTime))
	kv("initLimit", 10)
	kv("syncLimit", cfg.SyncLimit)
	kv("dataDir", dataDir)
	kv("clientPort", clientPorts[myID-1])
	kv("minSessionTimeout", millis(cfg.MinSessionTimeout))
	kv("maxSessionTimeout", millis(cfg.MaxSessionTimeout))
	kv("maxClientCnxns", 0)
	kv("admin.enableServer", false)
	kv("4lw.commands.whitelist", "*")
	kv("reconfigEnabled", false)
	kv("forceSync", "no")
	kv("preAllocSize", 4096)
	kv("standaloneEnabled", false)
	if cfg.LocalSessions {
		kv("localSessionsEnabled", true)
		kv("localSessionsUpgradingEnabled", true)
	}
	for i := 0; i < n; i++ {
		host := "127.0.0.1"
		if hosts != nil {
			host = hosts[i]
		}
		kv("server."+strconv.Itoa(i+1), fmt.Sprintf("%s:%d:%d", host, quorumPorts[i], electionPorts[i]))
	}
	return b.String(), nil
}

// JVMFlags returns the -D options a ZooKeeper server JVM needs for cfg in
// addition to zoo.cfg (ZooKeeper reads these only as system properties):
// the admin server disabled, prompt leader election, and the container
// reaping settings when cfg.ContainerCheckInterval is set. A container
// backend passes them through JVMFLAGS or SERVER_JVMFLAGS.
func JVMFlags(cfg Config) []string {
	cfg = cfg.WithDefaults()
	flags := []string{
		"-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-Dzookeeper.snapshot.trust.empty=true",
		"-Dzookeeper.fastleader.maxNotificationInterval=1000",
	}
	if cfg.ContainerCheckInterval > 0 {
		flags = append(flags,
			"-Dznode.container.checkIntervalMs="+strconv.FormatInt(millis(cfg.ContainerCheckInterval), 10),
			"-Dznode.container.maxPerMinute="+strconv.Itoa(containerMaxPerMinute),
		)
	}
	return flags
}

// millis converts d to whole milliseconds, rounding up, at least 1.
func millis(d time.Duration) int64 {
	ms := int64((d + time.Millisecond - 1) / time.Millisecond)
	if ms < 1 {
		ms = 1
	}
	return ms
}

// log4jProperties configures log4j 1.x (Debian's ZooKeeper, through
// slf4j-log4j12) to log to stdout, which the process backend sends to the
// server's log file.
const log4jProperties = `log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.Target=System.out
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n
`

// logbackXML does the same for logback (upstream ZooKeeper 3.8+).
const logbackXML = `<configuration>
  <appender name="CONSOLE" class="ch.qos.logback.core.ConsoleAppender">
    <target>System.out</target>
    <encoder>
      <pattern>%d{ISO8601} %-5level [%thread:%logger{0}@%line] - %msg%n</pattern>
    </encoder>
  </appender>
  <root level="INFO">
    <appender-ref ref="CONSOLE"/>
  </root>
</configuration>
`
