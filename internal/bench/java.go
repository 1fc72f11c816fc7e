package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// The Java harness, compiled at run time against Debian's Curator jars
// (the same way integration_test/interop compiles its Curator peer).

//go:embed java/BenchCurator.java
var harnessSource []byte

// debianJavaDir is where Debian installs jars, with unversioned symlinks.
const debianJavaDir = "/usr/share/java"

// compileTimeout bounds javac.
const compileTimeout = 5 * time.Minute

// installHint is what to do when the harness cannot run.
const installHint = "install libcurator-recipes-java and a JDK (make bench runs internal/tools/ensure-deps.sh)"

// requiredJars are Curator 5.x and what its lock recipes need at run time.
func requiredJars() []string {
	return []string{"curator-recipes.jar", "curator-framework.jar", "curator-client.jar",
		"zookeeper.jar", "zookeeper-jute.jar", "guava.jar", "slf4j-api.jar"}
}

// optionalJars are added when present: a logging backend for the log.
func optionalJars() []string { return []string{"slf4j-simple.jar"} }

// javaTools are the programs and class path the harness needs.
type javaTools struct {
	java, javac string
	classpath   []string
}

// findJavaTools locates java, javac and the jars (JAVA_HOME first, then
// PATH; ZKLOCK_CURATOR_CLASSPATH replaces Debian's jars), or says what is
// missing.
func findJavaTools() (*javaTools, error) {
	var missing []string
	tl := &javaTools{}
	for name, dst := range map[string]*string{"java": &tl.java, "javac": &tl.javac} {
		p, err := findJavaProgram(name)
		if err != nil {
			missing = append(missing, name+" (not in JAVA_HOME/bin or PATH)")
		}
		*dst = p
	}
	if cp := os.Getenv("ZKLOCK_CURATOR_CLASSPATH"); cp != "" {
		tl.classpath = filepath.SplitList(cp)
	} else {
		for _, name := range requiredJars() {
			tl.classpath = append(tl.classpath, filepath.Join(debianJavaDir, name))
		}
		for _, name := range optionalJars() {
			if jar := filepath.Join(debianJavaDir, name); isFile(jar) {
				tl.classpath = append(tl.classpath, jar)
			}
		}
	}
	for _, jar := range tl.classpath {
		if !isFile(jar) {
			missing = append(missing, jar)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing %s; %s", strings.Join(missing, ", "), installHint)
	}
	return tl, nil
}

// findJavaProgram finds name in JAVA_HOME/bin, then in PATH.
func findJavaProgram(name string) (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		if p := filepath.Join(home, "bin", name); isFile(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("find %s: %w", name, err)
	}
	return p, nil
}

// isFile reports whether path (after symlinks) is a regular file.
func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// javaVersion returns the version java reports ("17.0.15"), or "unknown".
func javaVersion(ctx context.Context) string {
	java, err := findJavaProgram("java")
	if err != nil {
		return "unknown"
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, java, "-version").CombinedOutput()
	if m := regexp.MustCompile(`version "([^"]+)"`).FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return "unknown"
}

// compileHarness builds the harness's classes, or finds them built. They
// go to a directory of the system temp directory named after a hash of
// the source, the tools and the jars, made atomically: later runs reuse
// it, and a changed source or Curator upgrade gets its own.
func compileHarness(tl *javaTools) (dir string, fresh bool, err error) {
	h := sha256.New()
	h.Write(harnessSource)
	fmt.Fprintf(h, "\x00%s\x00%s\x00", tl.java, tl.javac)
	for _, jar := range tl.classpath {
		fi, err := os.Stat(jar)
		if err != nil {
			return "", false, fmt.Errorf("stat %s: %w", jar, err)
		}
		fmt.Fprintf(h, "%s %d %d\x00", jar, fi.Size(), fi.ModTime().UnixNano())
	}
	dir = filepath.Join(os.TempDir(), "zklock-bench-curator-"+hex.EncodeToString(h.Sum(nil))[:16])
	if isFile(filepath.Join(dir, "BenchCurator.class")) {
		return dir, false, nil
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "zklock-bench-build-")
	if err != nil {
		return "", false, fmt.Errorf("compile harness: %w", err)
	}
	defer os.RemoveAll(tmp) // no-op once renamed
	if err := javac(tl, tmp); err != nil {
		return "", false, err
	}
	if err := os.Rename(filepath.Join(tmp, "classes"), dir); err != nil {
		if isFile(filepath.Join(dir, "BenchCurator.class")) {
			return dir, true, nil // another run won the race
		}
		return "", false, fmt.Errorf("install compiled harness: %w", err)
	}
	return dir, true, nil
}

// javac compiles the harness's source into tmp/classes.
func javac(tl *javaTools, tmp string) error {
	src := filepath.Join(tmp, "src", "BenchCurator.java")
	if err := os.MkdirAll(filepath.Dir(src), 0o755); err != nil {
		return fmt.Errorf("compile harness: %w", err)
	}
	if err := os.WriteFile(src, harnessSource, 0o644); err != nil {
		return fmt.Errorf("compile harness: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), compileTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tl.javac,
		"-J-Xmx256m", "-J-XX:+UseSerialGC", "-J-XX:TieredStopAtLevel=1",
		"--release", "17", "-Xlint:all,-path,-serial,-options",
		"-implicit:none", "-proc:none", "-encoding", "UTF-8",
		"-cp", strings.Join(tl.classpath, string(os.PathListSeparator)),
		"-d", filepath.Join(tmp, "classes"), src)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("javac BenchCurator.java: %w\n%s", err, out.String())
	}
	return nil
}

// logTail returns the last lines of the file at path.
func logTail(path string, lines int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	const maxBytes = 16 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > maxBytes {
		_, _ = f.Seek(-maxBytes, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// jvmGC returns the garbage collector java picks with flags ("G1"), from
// -XX:+PrintCommandLineFlags, or "unknown".
func jvmGC(ctx context.Context, flags []string) string {
	java, err := findJavaProgram("java")
	if err != nil {
		return "unknown"
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	args := append(slices.Clone(flags), "-XX:+PrintCommandLineFlags", "-version")
	out, _ := exec.CommandContext(ctx, java, args...).CombinedOutput()
	if m := regexp.MustCompile(`-XX:\+Use(\w+)GC\b`).FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return "unknown"
}
