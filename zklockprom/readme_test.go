package zklockprom_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zklock/zklock"
	"github.com/zklock/zklock/zklockprom"
)

// readmeSnippet is the README's zklockprom snippet, which the library's
// module cannot compile (it must not import this one).
func readmeSnippet(servers []string) error {
	col := zklockprom.New(zklockprom.Options{})
	prometheus.MustRegister(col)
	client, err := zklock.Connect(servers, zklock.WithObserver(col.Observe))
	// (not in the README)
	if err == nil {
		client.Close()
	}
	return err
}

var _ = readmeSnippet

// The README's snippets that use zklockprom are readmeSnippet's body.
func TestREADMESnippet(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	src, err := os.ReadFile("readme_test.go")
	require.NoError(t, err)
	body := regexp.MustCompile(`(?s)func readmeSnippet\(servers \[\]string\) error \{\n(.*?)\t// \(not in the README\)`).FindSubmatch(src)
	require.NotNil(t, body)
	want := strings.ReplaceAll(string(body[1]), "\n\t", "\n")
	want = strings.TrimPrefix(want, "\t")
	found := 0
	for _, b := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1) {
		if strings.Contains(b[1], "zklockprom.") {
			assert.Equal(t, want, b[1])
			found++
		}
	}
	assert.Equal(t, 1, found, "the README has one zklockprom snippet")
}
