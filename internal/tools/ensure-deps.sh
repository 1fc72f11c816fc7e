#!/usr/bin/env bash
# ensure-deps.sh: make sure `make test` can reach a real ZooKeeper.
# Installs Debian's zookeeper package (and a Java runtime) when running as
# root with apt; otherwise says exactly what to install. Nothing is needed
# when ZK_SERVERS names an external ensemble or ZOOKEEPER_HOME a server.
# Also installs Apache Curator (libcurator-recipes-java) for the Java
# interop tests (integration_test/interop) the same way, and Python's kazoo
# (python3-kazoo) for the Python ones; those are the only tests that need
# them, so a missing Curator or kazoo is reported, never fatal.
set -euo pipefail

have_curator() {
	[ -f /usr/share/java/curator-recipes.jar ] && command -v javac >/dev/null 2>&1
}

if ! have_curator; then
	interop="libcurator-recipes-java"
	command -v javac >/dev/null 2>&1 || interop="$interop default-jdk-headless"
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "ensure-deps: installing Debian packages: $interop"
		if ! { apt-get update -qq &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $interop >/dev/null; }; then
			echo "ensure-deps: could not install $interop" >&2
		fi
	fi
	if ! have_curator; then
		cat >&2 <<MSG
ensure-deps: Apache Curator or javac not found (/usr/share/java/curator-recipes.jar): the
Java interop tests (integration_test/interop) will skip, or fail when CI is set.
To run them: sudo apt-get install libcurator-recipes-java (and a JDK for javac)
MSG
	fi
fi

# The kazoo peer runs Debian's interpreter, which python3-kazoo serves
# (ZKLOCK_KAZOO_PYTHON names another).
kazoo_python="${ZKLOCK_KAZOO_PYTHON:-/usr/bin/python3}"
have_kazoo() {
	"$kazoo_python" -c 'import kazoo' >/dev/null 2>&1
}

if ! have_kazoo; then
	if [ -z "${ZKLOCK_KAZOO_PYTHON:-}" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "ensure-deps: installing Debian packages: python3-kazoo"
		if ! { apt-get update -qq &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-kazoo >/dev/null; }; then
			echo "ensure-deps: could not install python3-kazoo" >&2
		fi
	fi
	if ! have_kazoo; then
		cat >&2 <<MSG
ensure-deps: $kazoo_python cannot import kazoo: the Python interop tests
(integration_test/interop, TestIntegration_Kazoo*) will skip, or fail when CI is set.
To run them: sudo apt-get install python3-kazoo (or set ZKLOCK_KAZOO_PYTHON to a Python with kazoo 2.8)
MSG
	fi
fi

have_zk() {
	[ -n "${ZK_SERVERS:-}" ] && return 0
	command -v java >/dev/null 2>&1 || return 1
	[ -n "${ZOOKEEPER_HOME:-}" ] && return 0
	[ -f /usr/share/java/zookeeper.jar ]
}

if have_zk; then
	exit 0
fi

pkgs="zookeeper"
command -v java >/dev/null 2>&1 || pkgs="$pkgs default-jre-headless"
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "ensure-deps: installing Debian packages: $pkgs"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pkgs >/dev/null
	have_zk && exit 0
fi
cat >&2 <<MSG
zklock's tests need a real ZooKeeper (3.5 or later) and Java. Either:
  - install Debian's packages:  sudo apt-get install $pkgs
  - or set ZOOKEEPER_HOME to an unpacked ZooKeeper distribution (with java on PATH)
  - or set ZK_SERVERS=host:port[,host:port...] to use a running ensemble
MSG
exit 1
