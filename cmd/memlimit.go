package cmd

import (
	"os"
	"runtime/debug"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// memoryLimitFloor is the smallest soft memory limit a run sets (bytes).
const memoryLimitFloor = 256 << 20

// memoryLimit is the soft memory limit (bytes) for runs of plans: the
// larger of memoryLimitFloor and three times the biggest burst's ledger
// (8 bytes per id, metrics.Ledger.BytesPerID for a plain run). Without a
// limit the Go collector lets the heap grow to twice what is live
// (GOGC=100, https://go.dev/doc/gc-guide#Memory_limit), so 80 MB of ledger
// for 10,000,000 ids would let about as much garbage pile up before each
// collection; under the limit it collects sooner instead.
func memoryLimit(plans []scenario.Scenario) int64 {
	limit := int64(memoryLimitFloor)
	for _, s := range plans {
		limit = max(limit, 3*8*int64(s.Load.Messages))
	}
	return limit
}

// setMemoryLimit sets the runtime's soft memory limit for plans
// (memoryLimit) unless the user set GOMEMLIMIT, which the runtime has
// already applied and which wins.
func setMemoryLimit(plans []scenario.Scenario) {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return
	}
	debug.SetMemoryLimit(memoryLimit(plans))
}
