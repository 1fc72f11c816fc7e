package zklock

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// validatePath applies ZooKeeper's path rules (PathUtils.validatePath): a
// leading "/", no trailing "/", no empty, "." or ".." segment, valid UTF-8
// without the characters ZooKeeper refuses. It also refuses the reserved
// /zookeeper subtree.
func validatePath(p string) error {
	reason := pathProblem(p)
	if reason == "" {
		return nil
	}
	return fmt.Errorf("zklock: path %q: %s: %w", p, reason, ErrInvalidPath)
}

func pathProblem(p string) string {
	switch {
	case p == "":
		return "empty"
	case p[0] != '/':
		return "must start with /"
	case p == "/":
		return ""
	case strings.HasSuffix(p, "/"):
		return "must not end with /"
	case !utf8.ValidString(p):
		return "not valid UTF-8"
	case p == "/zookeeper" || strings.HasPrefix(p, "/zookeeper/"):
		return "the /zookeeper subtree is reserved"
	}
	for _, r := range p {
		switch {
		case r == 0:
			return "null character"
		case r < 0x20, r >= 0x7f && r <= 0x9f, r >= 0xd800 && r <= 0xf8ff, r >= 0xfff0:
			// Above U+FFFF Java sees surrogates, which ZooKeeper refuses.
			return fmt.Sprintf("invalid character %U", r)
		}
	}
	for _, seg := range strings.Split(p[1:], "/") {
		switch seg {
		case "":
			return "empty segment"
		case ".", "..":
			return "relative segment " + seg
		}
	}
	return ""
}
