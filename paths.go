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
	return errorf(ErrInvalidPath, "invalid path %s: %s", quotePath(p), reason)
}

// validateLockPath is validatePath for the path of a recipe, or of a node
// to revoke. It also refuses the root ("/", which is the namespace's root
// under a namespace): lock nodes there would sit among every other node.
func validateLockPath(p string) error {
	if p == "/" {
		return errorf(ErrInvalidPath, "invalid path %s: the root cannot be a lock path", quotePath(p))
	}
	return validatePath(p)
}

// quotePath quotes p for an error message, cut short if it is long.
func quotePath(p string) string {
	if len(p) > 200 {
		return fmt.Sprintf("%q (%d bytes)", p[:200]+"...", len(p))
	}
	return fmt.Sprintf("%q", p)
}

// Request limits. ZooKeeper drops the connection of a client that sends a
// request larger than its jute.maxbuffer (default 1 MB - 1), and with it
// the session's every hold; such requests are refused before they are
// sent.
const (
	maxRequest      = 0xfffff
	maxPathLen      = 32 << 10 // no path in practice comes near
	requestOverhead = 1 << 10  // protection prefix, sequence, ACL, framing
)

// checkRequest refuses a node whose full path and data would not fit in
// one request.
func checkRequest(what, p, full string, data []byte) error {
	if n := len(full) + len(data) + requestOverhead; n > maxRequest {
		return errorf(ErrInvalidArgument, "%s %s: path and data of %d bytes exceed ZooKeeper's request limit of %d",
			what, quotePath(p), n-requestOverhead, maxRequest)
	}
	return nil
}

func pathProblem(p string) string {
	switch {
	case p == "":
		return "empty"
	case p[0] != '/':
		return "must start with /"
	case p == "/":
		return ""
	case len(p) > maxPathLen:
		return fmt.Sprintf("longer than %d bytes", maxPathLen)
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
	for seg := range strings.SplitSeq(p[1:], "/") {
		switch seg {
		case "":
			return "empty segment"
		case ".", "..":
			return "relative segment " + seg
		}
	}
	return ""
}
