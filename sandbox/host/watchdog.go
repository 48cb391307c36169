package host

import (
	"sync"
	"time"
)

// watchdog holds a running block to its timeout: past it the block is
// interrupted, and when it has not stopped grace later its child is
// retired. A block that ends first stops it, and neither happens.
type watchdog struct {
	timeout time.Duration

	mu       sync.Mutex
	timedOut bool // the interrupt was sent
	finished bool // stop was called
	timer    *time.Timer
	grace    *time.Timer
}

// startWatchdog starts the watch of a block with timeout. interrupt runs
// under the watchdog's lock, so that stop waits for it: a block never
// ends between the decision to interrupt it and the interrupt. retire
// runs without it, since it takes a while and the block ends meanwhile.
func startWatchdog(timeout, grace time.Duration, interrupt, retire func()) *watchdog {
	w := &watchdog{timeout: timeout}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer = time.AfterFunc(timeout, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.finished {
			return
		}
		w.timedOut = true
		interrupt()
		w.grace = time.AfterFunc(grace, func() {
			w.mu.Lock()
			done := w.finished
			w.mu.Unlock()
			if !done {
				retire()
			}
		})
	})
	return w
}

// stop ends the watch: the block has ended.
func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.finished = true
	w.timer.Stop()
	if w.grace != nil {
		w.grace.Stop()
	}
}

// expired reports whether the block ran past its timeout (it was
// interrupted for it).
func (w *watchdog) expired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.timedOut
}
