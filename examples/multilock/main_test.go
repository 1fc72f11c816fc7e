package main

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zklock/zklock/internal/exampleenv"
	"github.com/zklock/zklock/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// Every transfer completes in both directions, the total is conserved,
// and, since as many go each way, both balances end where they began.
func TestIntegration_MultiLock(t *testing.T) {
	text := exampleenv.RunT(t, run, root)
	want := strconv.Itoa(2 * sessions * transfers)
	assert.Regexp(t, regexp.MustCompile(want+` transfers done, no deadlock; A=100 B=100 total=200 \(opened with 200\)`), text)
}
