package main

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// watchPeak follows the peak resident memory (VmHWM, MiB) of process pid
// until it ends, reading it every 10 ms; peak, once the process was
// reaped, is the largest seen. Not the rusage of a command the test
// process starts: Go starts it with CLONE_VM, and the kernel keeps the
// larger of the two peaks at its exec (in the whole suite the test
// process was 250-300 MiB). A run shorter than a look reports 0: what it
// did, it did quickly.
func watchPeak(pid int) (peak func() int) {
	var mu sync.Mutex
	mib := 0
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
			if err != nil {
				return
			}
			for _, line := range strings.Split(string(data), "\n") {
				if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					kib, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
					mu.Lock()
					mib = max(mib, kib>>10)
					mu.Unlock()
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return func() int {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return mib
	}
}
