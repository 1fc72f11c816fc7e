package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
)

// logBuf keeps the last lines a session's Client logged, at Debug level,
// so that an orphan can be traced back to what its session did. It counts
// the grants without a listing (soloGrantMsg) in solo.
type logBuf struct {
	mu    sync.Mutex
	lines []string
	next  int // ring position once full
	max   int
	solo  *atomic.Int64
}

// soloGrantMsg is what a Client logs when it grants a lock from its
// create's reply, without a listing.
const soloGrantMsg = "zklock: granted alone, from the create's reply"

func newLogBuf(max int, solo *atomic.Int64) *logBuf { return &logBuf{max: max, solo: solo} }

func (b *logBuf) Enabled(context.Context, slog.Level) bool { return true }

func (b *logBuf) Handle(_ context.Context, r slog.Record) error {
	if r.Message == soloGrantMsg {
		b.solo.Add(1)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s %s %s", r.Time.Format("15:04:05.000"), r.Level, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&sb, " %s=%v", a.Key, a.Value)
		return true
	})
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.lines) < b.max {
		b.lines = append(b.lines, sb.String())
	} else {
		b.lines[b.next] = sb.String()
		b.next = (b.next + 1) % b.max
	}
	return nil
}

func (b *logBuf) WithAttrs([]slog.Attr) slog.Handler { return b }
func (b *logBuf) WithGroup(string) slog.Handler      { return b }

// grep returns the kept lines that contain s, oldest first.
func (b *logBuf) grep(s string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for i := range b.lines {
		l := b.lines[(b.next+i)%len(b.lines)]
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}
