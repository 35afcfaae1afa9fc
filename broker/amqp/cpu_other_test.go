//go:build !unix

package amqp

import (
	"testing"
	"time"
)

// cpuNow cannot read the process's CPU time without getrusage: the
// benchmark's CPU columns read 0 there.
func cpuNow(*testing.T) time.Duration { return 0 }
