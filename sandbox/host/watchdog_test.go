package host

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// dogCounts counts a watchdog's interrupts and retires.
type dogCounts struct{ interrupts, retires atomic.Int32 }

func (d *dogCounts) start(timeout, grace time.Duration) *watchdog {
	return startWatchdog(timeout, grace, func() { d.interrupts.Add(1) }, func() { d.retires.Add(1) })
}

func (d *dogCounts) want(t *testing.T, when string, interrupts, retires int32) {
	t.Helper()
	if i, r := d.interrupts.Load(), d.retires.Load(); i != interrupts || r != retires {
		t.Errorf("%s: %d interrupts and %d retires, want %d and %d", when, i, r, interrupts, retires)
	}
}

// after lets d pass, in the bubble, then wants the counts.
func (d *dogCounts) after(t *testing.T, dur time.Duration, when string, interrupts, retires int32) {
	t.Helper()
	time.Sleep(dur)
	synctest.Wait()
	d.want(t, when, interrupts, retires)
}

// A block that ends before its timeout is neither interrupted nor
// retired, and is not timed out; one that stops within the grace after
// its interrupt is not retired, and stays timed out.
func TestWatchdogStoppedInTime(t *testing.T) {
	for _, c := range []struct {
		name       string
		ran        time.Duration
		interrupts int32
	}{
		{"before the timeout", 9 * time.Second, 0},
		{"within the grace", 14 * time.Second, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var d dogCounts
				w := d.start(10*time.Second, 5*time.Second)
				time.Sleep(c.ran)
				w.stop()
				time.Sleep(time.Hour)
				d.want(t, "an hour after stop", c.interrupts, 0)
				if w.expired() != (c.interrupts > 0) {
					t.Errorf("expired: %v", w.expired())
				}
			})
		})
	}
}

// A block past its timeout is interrupted once, at the timeout; one that
// then does not stop within the grace is retired once, at its end.
func TestWatchdogInterruptsThenRetires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var d dogCounts
		w := d.start(10*time.Second, 5*time.Second)
		d.after(t, 10*time.Second-time.Nanosecond, "just before the timeout", 0, 0)
		d.after(t, time.Nanosecond, "at the timeout", 1, 0)
		if !w.expired() {
			t.Error("not expired at the timeout")
		}
		d.after(t, 5*time.Second-time.Nanosecond, "just before the grace's end", 1, 0)
		d.after(t, time.Nanosecond, "at the grace's end", 1, 1)
		w.stop()
		time.Sleep(time.Hour)
		d.want(t, "an hour later", 1, 1)
	})
}

// stop waits for an interrupt under way: a block never ends between the
// decision to interrupt it and the interrupt, so the interrupt never
// reaches the next block.
func TestWatchdogStopWaitsForTheInterrupt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var interrupted atomic.Bool
		w := startWatchdog(time.Second, time.Second, func() {
			<-release
			interrupted.Store(true)
		}, func() { t.Error("retired") })
		time.Sleep(time.Second)
		synctest.Wait() // the interrupt is under way, waiting for release
		sawInterrupt := make(chan bool)
		go func() {
			w.stop()
			sawInterrupt <- interrupted.Load()
		}()
		close(release)
		if !<-sawInterrupt {
			t.Error("stop returned before the interrupt under way was sent")
		}
		time.Sleep(time.Hour)
	})
}
