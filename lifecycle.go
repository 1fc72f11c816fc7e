package zklock

import "sync"

// lifecycle is the part of a Client that owns its goroutines and its end:
// the closing signal, and the goroutines Close waits for. Its methods,
// in this file, are the only writers of its fields; Close (client.go)
// calls them in order: shut, then wg.Wait.
type lifecycle struct {
	closing     chan struct{} // closed by Close, or when a wrapped conn is closed (end)
	closeOnce   sync.Once     // Close's body runs once
	closingOnce sync.Once     // closes closing

	goMu   sync.Mutex     // protects closed and wg.Add against Close's wg.Wait
	closed bool           // Close has begun; no goroutine may start (shut)
	wg     sync.WaitGroup // every goroutine the Client starts (goFunc)
}

func (l *lifecycle) init() { l.closing = make(chan struct{}) }

// end closes the closing signal, once: recipes see the Client closed.
func (l *lifecycle) end() {
	l.closingOnce.Do(func() { close(l.closing) })
}

// shut lets no goroutine start from now on (goFunc refuses), and ends
// the closing signal; the caller then waits for wg.
func (l *lifecycle) shut() {
	l.goMu.Lock()
	l.closed = true
	l.goMu.Unlock()
	l.end()
}

// goFunc runs f on a goroutine that Close waits for. It reports false, and
// does not run f, once Close has begun.
func (l *lifecycle) goFunc(f func()) bool {
	l.goMu.Lock()
	defer l.goMu.Unlock()
	if l.closed {
		return false
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		f()
	}()
	return true
}
