//go:build unix

package engine

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// processUsage is the process's CPU time so far (user + system) and its
// peak resident set size in bytes, from getrusage(RUSAGE_SELF). ru_maxrss
// is in KiB on Linux and the BSDs, in bytes on macOS (getrusage(2)).
func processUsage() (cpu time.Duration, peakRSS uint64, ok bool) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, 0, false
	}
	cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	peakRSS = uint64(ru.Maxrss)
	if runtime.GOOS != "darwin" && runtime.GOOS != "ios" {
		peakRSS *= 1024
	}
	return cpu, peakRSS, true
}
