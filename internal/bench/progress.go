package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progressEvery is how often the progress line is refreshed on a
// terminal; elsewhere a line is written this many times less often.
const progressEvery = time.Second

// progress shows on stderr what is running and for how long; stdout keeps
// the tables. On a terminal one line is rewritten in place; elsewhere
// (a log, CI) each step gets its own lines.
type progress struct {
	w     io.Writer
	tty   bool
	start time.Time // of the whole run

	mu      sync.Mutex
	label   string    // the step running, "" if none
	since   time.Time // when it began
	stop    chan struct{}
	stopped chan struct{}
}

// newProgress writes to f, rewriting its line in place if f is a terminal.
func newProgress(f *os.File) *progress {
	fi, err := f.Stat()
	return newProgressTo(f, err == nil && fi.Mode()&os.ModeCharDevice != 0)
}

// newProgressTo writes to w, as to a terminal if tty.
func newProgressTo(w io.Writer, tty bool) *progress {
	return &progress{w: w, tty: tty, start: time.Now()}
}

// begin shows that step label is running, until end.
func (p *progress) begin(label string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.label, p.since = label, time.Now()
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	p.showLocked()
	go p.tick(p.stop, p.stopped)
}

// tick refreshes the line until stop is closed.
func (p *progress) tick(stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	every := progressEvery
	if !p.tty {
		every *= 30
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.showLocked()
			p.mu.Unlock()
		}
	}
}

// showLocked writes the progress line; p.mu must be held.
func (p *progress) showLocked() {
	line := fmt.Sprintf("[%s] %s ... %s", clock(time.Since(p.start)), p.label, clock(time.Since(p.since)))
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
}

// end finishes the current step with a verdict.
func (p *progress) end(verdict string) {
	p.mu.Lock()
	stop, stopped := p.stop, p.stopped
	p.mu.Unlock()
	if stop == nil {
		return
	}
	close(stop)
	<-stopped
	p.mu.Lock()
	defer p.mu.Unlock()
	line := fmt.Sprintf("[%s] %s: %s (%s)", clock(time.Since(p.start)), p.label, verdict, clock(time.Since(p.since)))
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s\n", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
	p.label, p.stop, p.stopped = "", nil, nil
}

// note writes a line of its own.
func (p *progress) note(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "[%s] %s\n", clock(time.Since(p.start)), fmt.Sprintf(format, args...))
}

// clear ends the progress output before the tables.
func (p *progress) clear() {
	p.note("done")
}

// clock formats d as m:ss.
func clock(d time.Duration) string {
	s := int(d.Seconds())
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// firstLine returns the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
