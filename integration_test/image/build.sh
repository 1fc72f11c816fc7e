#!/bin/bash
# build.sh builds the local ZooKeeper image used by the container backend of
# the zklock integration tests (integration_test/containerzk).
#
# No image registry is reachable from the machines this runs on, so the image
# is built from a root filesystem made with Debian's packages:
#
#   debootstrap --variant=minbase --include=<packages> bookworm <dir> <mirror>
#   tar -C <dir> -c . | docker import --change ... - zklock/zookeeper:3.8-local
#
# The mirror is read at run time from this machine's apt configuration (the
# entry whose Suites include bookworm and Components include main); no mirror
# host name is written down anywhere.
#
# The script is idempotent: if the image already exists it exits 0 at once.
# Concurrent invocations are serialised with flock(1) (on this script) when
# it is available.
#
# Environment:
#   ZK_IMAGE            image tag (default zklock/zookeeper:3.8-local)
#   ZK_IMAGE_SUITE      Debian suite (default bookworm)
#   ZK_IMAGE_PACKAGES   comma-separated packages for --include
#                       (default openjdk-17-jre-headless,libzookeeper-java,
#                       see PACKAGES below)
#   ZK_IMAGE_MIRROR     override the mirror read from apt's configuration
#   ZK_IMAGE_FORCE=1    rebuild even if the image exists
#   ZK_IMAGE_SKIP_CHECK=1  skip the post-build smoke test (docker run + ruok)
#   TMPDIR              where the temporary root filesystem is assembled
#   APT_ETC             apt configuration directory to read (default /etc/apt)
#
# The image's default command is /usr/local/bin/zk-run, which runs ZooKeeper
# in the foreground (logs on stdout) with /conf/zoo.cfg.  See zk-run's header
# below for the variables it understands (ZK_CFG, ZK_MYID, SERVER_JVMFLAGS...).
set -euo pipefail

IMAGE=${ZK_IMAGE:-zklock/zookeeper:3.8-local}
SUITE=${ZK_IMAGE_SUITE:-bookworm}
# libzookeeper-java has the server (/usr/share/java/zookeeper.jar and its
# dependency jars). Debian's "zookeeper" package only adds init scripts and a
# sample configuration, but depends on default-jre, i.e. the full (GUI)
# OpenJDK with GTK and X11: with it the root filesystem is 602 MiB instead of
# 341 MiB and debootstrap takes ~64s instead of ~45s. Set
# ZK_IMAGE_PACKAGES=openjdk-17-jre-headless,zookeeper to get it anyway.
PACKAGES=${ZK_IMAGE_PACKAGES:-openjdk-17-jre-headless,libzookeeper-java}
APT_ETC=${APT_ETC:-/etc/apt}

START=$(date +%s)
phase_start=$START
phase() { # phase <name>: report the time spent since the previous phase
	local now
	now=$(date +%s)
	printf 'build.sh: %-28s %4ds (total %ds)\n' "$1" $((now - phase_start)) $((now - START)) >&2
	phase_start=$now
}
die() { echo "build.sh: $*" >&2; exit 1; }

image_exists() { docker image inspect "$IMAGE" >/dev/null 2>&1; }

command -v docker >/dev/null 2>&1 || die "docker CLI not found"
if [ "${ZK_IMAGE_FORCE:-0}" != 1 ] && image_exists; then
	echo "build.sh: image $IMAGE already exists" >&2
	exit 0
fi
docker info >/dev/null 2>&1 || die "docker engine is not reachable (docker info failed)"

# Serialise concurrent builds (e.g. several test binaries starting at once)
# by locking this script itself: no lock file is left behind.
if command -v flock >/dev/null 2>&1 && exec 9<"${BASH_SOURCE[0]}"; then
	if ! flock -n 9; then
		echo "build.sh: another build of $IMAGE is running; waiting for it" >&2
		flock 9
	fi
	if [ "${ZK_IMAGE_FORCE:-0}" != 1 ] && image_exists; then
		echo "build.sh: image $IMAGE was built by a concurrent run" >&2
		exit 0
	fi
fi

# find_mirror <suite>: print the URI of the first apt source (deb822 *.sources
# or one-line *.list) of type deb whose suites include <suite> and whose
# components include main.
find_mirror() {
	local suite=$1 f
	for f in "$APT_ETC"/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk -v suite="$suite" '
			function has(list, w,   a, n, i) {
				n = split(list, a, /[ \t]+/)
				for (i = 1; i <= n; i++) if (a[i] == w) return 1
				return 0
			}
			function flush(   u) {
				if (uris != "" && enabled != "no" && has(types, "deb") && has(suites, suite) && has(comps, "main")) {
					split(uris, u, /[ \t]+/); print u[1]; found = 1; exit
				}
				uris = ""; suites = ""; comps = ""; types = ""; enabled = ""; last = ""
			}
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			/^[ \t]/ {   # continuation line of a multi-line field
				v = $0; sub(/^[ \t]+/, "", v)
				if (last == "uris") uris = uris " " v
				else if (last == "suites") suites = suites " " v
				else if (last == "components") comps = comps " " v
				else if (last == "types") types = types " " v
				next
			}
			{
				k = tolower($0); sub(/:.*/, "", k)
				v = $0; sub(/^[^:]*:[ \t]*/, "", v); sub(/[ \t]+$/, "", v)
				last = k
				if (k == "uris") uris = v
				else if (k == "suites") suites = v
				else if (k == "components") comps = v
				else if (k == "types") types = v
				else if (k == "enabled") enabled = tolower(v)
			}
			END { if (!found) flush() }
		' "$f" | head -n1
	done
	for f in "$APT_ETC"/sources.list "$APT_ETC"/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk -v suite="$suite" '
			/^[ \t]*deb[ \t]/ {
				line = $0; sub(/#.*/, "", line); gsub(/\[[^]]*\]/, "", line)
				n = split(line, a, /[ \t]+/); i = 1; while (a[i] == "") i++
				if (a[i] != "deb" || a[i+2] != suite) next
				for (j = i + 3; j <= n; j++) if (a[j] == "main") { print a[i+1]; exit }
			}
		' "$f" | head -n1
	done
}

# --- phase: tools ----------------------------------------------------------
if ! command -v debootstrap >/dev/null 2>&1 && [ ! -x /usr/sbin/debootstrap ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "build.sh: installing debootstrap with apt-get" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap >&2 ||
			{ apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap >&2; } ||
			die "could not install debootstrap"
	else
		cat >&2 <<EOF
build.sh: debootstrap is required to build $IMAGE and is not installed.
Install it as root and re-run:

    apt-get install -y --no-install-recommends debootstrap

or build the image on a machine where that works and load it here:

    there:  docker save $IMAGE | gzip >zookeeper-image.tar.gz
    here:   docker load <zookeeper-image.tar.gz
EOF
		exit 1
	fi
fi
DEBOOTSTRAP=$(command -v debootstrap || echo /usr/sbin/debootstrap)
[ "$(id -u)" = 0 ] || die "debootstrap needs root; re-run as root (or load a prebuilt $IMAGE)"

MIRROR=${ZK_IMAGE_MIRROR:-}
[ -n "$MIRROR" ] || MIRROR=$(find_mirror "$SUITE" | head -n1 || true)
[ -n "$MIRROR" ] || die "no apt source with suite $SUITE and component main found under $APT_ETC"
phase "tools"

# --- phase: debootstrap ----------------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/zklock-zk-image.XXXXXX")
ROOT="$WORK/rootfs"
CHILD=""     # pid of the running debootstrap (leader of its process group)
CHECK_CTR="" # name of the smoke-test container while it exists
UNCHECKED="" # set while the imported image has not passed the smoke test
cleanup() {
	local m
	if [ -n "$CHILD" ]; then
		kill -TERM -- "-$CHILD" "$CHILD" 2>/dev/null || true
		sleep 1
		kill -KILL -- "-$CHILD" "$CHILD" 2>/dev/null || true
		wait "$CHILD" 2>/dev/null || true
	fi
	[ -z "$CHECK_CTR" ] || docker rm -f "$CHECK_CTR" >/dev/null 2>&1 || true
	[ -z "$UNCHECKED" ] || docker rmi "$IMAGE" >/dev/null 2>&1 || true
	# debootstrap may leave /proc, /sys or /dev mounted in the target if it
	# fails or is killed half way: unmount everything below $WORK first.
	if [ -r /proc/mounts ]; then
		awk -v w="$WORK/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
			umount -l "$m" 2>/dev/null || true
		done
	fi
	rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT
trap 'echo "build.sh: interrupted" >&2; exit 130' INT TERM

echo "build.sh: debootstrap $SUITE (+$PACKAGES); this takes about a minute" >&2
# debootstrap ignores SIGINT; run it in its own process group, in the
# background, so that an interrupted build can stop it (bash runs traps
# while in `wait`, not while a foreground child runs).
setsid "$DEBOOTSTRAP" --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOT" "$MIRROR" \
	>"$WORK/debootstrap.log" 2>&1 </dev/null &
CHILD=$!
rc=0
wait "$CHILD" || rc=$?
CHILD=""
if [ "$rc" != 0 ]; then
	tail -n 40 "$WORK/debootstrap.log" >&2
	[ -f "$ROOT/debootstrap/debootstrap.log" ] && tail -n 40 "$ROOT/debootstrap/debootstrap.log" >&2
	die "debootstrap failed (exit status $rc)"
fi
phase "debootstrap"

# --- phase: customise ------------------------------------------------------
# Drop what a test server never needs: package caches, apt lists, docs,
# man pages, locales.
rm -rf "$ROOT"/var/cache/apt/archives/*.deb "$ROOT"/var/cache/apt/*.bin \
	"$ROOT"/var/lib/apt/lists/* "$ROOT"/usr/share/doc/* "$ROOT"/usr/share/man/* \
	"$ROOT"/usr/share/info/* "$ROOT"/usr/share/locale/* "$ROOT"/usr/share/lintian \
	"$ROOT"/var/log/*.log "$ROOT"/var/log/apt/* "$ROOT"/debootstrap "$ROOT"/tmp/* 2>/dev/null || true
mkdir -p "$ROOT"/var/lib/apt/lists/partial

# The zookeeper.jar manifest's Class-Path has slf4j-api but no slf4j binding;
# add the log4j 1.2 binding (both jars come with libzookeeper-java's
# dependencies) so the server actually logs.
for j in zookeeper.jar slf4j-log4j12.jar log4j-1.2.jar; do
	[ -f "$ROOT/usr/share/java/$j" ] || die "rootfs lacks /usr/share/java/$j (packages: $PACKAGES)"
done
mkdir -p "$ROOT/etc/zookeeper/container" "$ROOT/conf" "$ROOT/data"
cat >"$ROOT/etc/zookeeper/container/log4j.properties" <<'EOF'
# Console-only logging for the container image (ZooKeeper runs in the
# foreground; docker logs collects stdout).
zookeeper.root.logger=INFO, CONSOLE
log4j.rootLogger=${zookeeper.root.logger}
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.Threshold=DEBUG
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} [myid:%X{myid}] - %-5p [%t:%C{1}@%L] - %m%n
EOF
cat >"$ROOT/usr/local/bin/zk-run" <<'EOF'
#!/bin/sh
# zk-run: run ZooKeeper in the foreground (image built by zklock's
# integration_test/image/build.sh).
#
#   zk-run [config]         config defaults to $ZK_CFG_FILE or /conf/zoo.cfg
#
# Environment:
#   ZK_CFG           if set, its content is written to the config file first
#   ZK_MYID          if set, written to <dataDir>/myid (ensemble members)
#   ZK_HEAP          heap flags (default "-Xms16m -Xmx256m")
#   ZK_LOG_LEVEL     log4j level (default INFO)
#   SERVER_JVMFLAGS  extra JVM flags, e.g. -Dznode.container.checkIntervalMs=500
#   JVMFLAGS         more extra JVM flags
set -e
cfg=${1:-${ZK_CFG_FILE:-/conf/zoo.cfg}}
if [ -n "$ZK_CFG" ]; then
	mkdir -p "$(dirname "$cfg")"
	printf '%s\n' "$ZK_CFG" >"$cfg"
fi
if [ ! -f "$cfg" ]; then
	echo "zk-run: no ZooKeeper config at $cfg (mount or copy one, or set ZK_CFG)" >&2
	exit 2
fi
datadir=$(sed -n 's/^[[:space:]]*dataDir[[:space:]]*=[[:space:]]*//p' "$cfg" | tail -n1)
if [ -n "$datadir" ]; then
	mkdir -p "$datadir"
	if [ -n "$ZK_MYID" ]; then
		echo "$ZK_MYID" >"$datadir/myid"
	fi
fi
cp=/etc/zookeeper/container:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar
# -XX:TieredStopAtLevel=1 and SerialGC: quick start-up, little CPU, small
# footprint; these are test servers.
# shellcheck disable=SC2086
exec java ${ZK_HEAP:--Xms16m -Xmx256m} -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k \
	-Djava.net.preferIPv4Stack=true \
	-Dzookeeper.log.dir=/tmp -Dzookeeper.root.logger="${ZK_LOG_LEVEL:-INFO},CONSOLE" \
	$SERVER_JVMFLAGS $JVMFLAGS \
	-cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain "$cfg"
EOF
chmod 0755 "$ROOT/usr/local/bin/zk-run"
# A usable default config, so `docker run <image>` alone starts a standalone server.
cat >"$ROOT/conf/zoo.cfg" <<'EOF'
tickTime=2000
initLimit=10
syncLimit=5
dataDir=/data
clientPort=2181
admin.enableServer=false
4lw.commands.whitelist=*
EOF
phase "customise"

# --- phase: import ---------------------------------------------------------
size=$(du -sm "$ROOT" | cut -f1)
echo "build.sh: rootfs is ${size} MiB; importing as $IMAGE" >&2
tar --numeric-owner -C "$ROOT" -c . | docker import \
	--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	--change 'ENV LANG=C.UTF-8' \
	--change 'WORKDIR /' \
	--change 'EXPOSE 2181 2888 3888' \
	--change 'CMD ["/usr/local/bin/zk-run"]' \
	--message "zklock test ZooKeeper ($SUITE: $PACKAGES)" \
	- "$IMAGE" >/dev/null
UNCHECKED=1
phase "import"

# --- phase: smoke test -----------------------------------------------------
if [ "${ZK_IMAGE_SKIP_CHECK:-0}" != 1 ]; then
	name="zklock-zk-image-check-$$"
	CHECK_CTR=$name
	docker run -d --name "$name" -p 127.0.0.1::2181 \
		-e ZK_CFG="$(printf 'tickTime=200\ndataDir=/data\nclientPort=2181\nadmin.enableServer=false\n4lw.commands.whitelist=*')" \
		"$IMAGE" >/dev/null
	ok=""
	port=$(docker port "$name" 2181/tcp | head -n1 | sed 's/.*://')
	for _ in $(seq 1 120); do
		if reply=$(timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && printf ruok >&3 && cat <&3" 2>/dev/null) &&
			[ "$reply" = imok ]; then
			ok=1
			break
		fi
		if [ "$(docker inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" != true ]; then
			break
		fi
		sleep 0.5
	done
	if [ -z "$ok" ]; then
		docker logs "$name" 2>&1 | tail -n 40 >&2 || true
		die "smoke test failed: the server in $IMAGE did not answer ruok with imok"
	fi
	docker rm -f "$name" >/dev/null
	CHECK_CTR=""
	UNCHECKED=""
	phase "smoke test (ruok -> imok)"
fi
UNCHECKED=""

echo "build.sh: built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%d MiB", $1/1048576}')) in $(($(date +%s) - START))s" >&2
