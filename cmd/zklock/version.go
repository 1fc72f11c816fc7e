package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

const versionUsage = `Usage: zklock version

Prints the module version of the zklock binary ("(devel)" when built from
a clone rather than installed as a published version), the commit it was
built from when known, and the Go version and platform it was built with.
Also: zklock -version.
`

// runVersion is the version command.
func runVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprint(stdout, versionUsage)
		return exitOK
	}
	if len(args) > 0 {
		fmt.Fprintf(stderr, "zklock version: unexpected argument %q\nRun 'zklock help version' for usage.\n", args[0])
		return exitUsage
	}
	fmt.Fprintln(stdout, versionText())
	return exitOK
}

// versionText is "zklock VERSION [commit C[, modified]], GOVERSION OS/ARCH".
func versionText() string {
	version, commit := "(devel)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		commit = vcsText(bi.Settings)
	}
	return fmt.Sprintf("zklock %s%s, %s %s/%s", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// vcsText is " (commit C)" or " (commit C, modified)" from the build's VCS
// settings; empty if it has none.
func vcsText(settings []debug.BuildSetting) string {
	var rev, modified string
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return ""
	}
	if modified == "true" {
		return fmt.Sprintf(" (commit %s, modified)", rev)
	}
	return fmt.Sprintf(" (commit %s)", rev)
}
