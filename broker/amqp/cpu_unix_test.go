//go:build unix

package amqp

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cpuNow is the test process's CPU time so far, user + system
// (getrusage(RUSAGE_SELF)).
func cpuNow(t *testing.T) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
