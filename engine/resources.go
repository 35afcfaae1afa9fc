package engine

import (
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// cpuMark is the process's CPU time at one moment (ok false where it
// cannot be read).
type cpuMark struct {
	cpu time.Duration
	ok  bool
}

func markCPU() cpuMark {
	cpu, _, ok := processUsage()
	return cpuMark{cpu, ok}
}

// resourceUse is a mode's scenario.ResourceUse from the CPU marks taken
// before the burst, after it (and its faults) and after the drain, for sent
// ids; nil when the process's usage cannot be read.
func resourceUse(burst, drain, end cpuMark, sent int, ledger *metrics.Ledger) *scenario.ResourceUse {
	_, peak, ok := processUsage()
	if !ok || !burst.ok || !drain.ok || !end.ok {
		return nil
	}
	u := &scenario.ResourceUse{BurstCPUS: (drain.cpu - burst.cpu).Seconds(), DrainCPUS: (end.cpu - drain.cpu).Seconds(),
		PeakRSSBytes: peak, LedgerBytesPerID: ledger.BytesPerID()}
	if sent > 0 {
		u.CPUPer100kS = (u.BurstCPUS + u.DrainCPUS) / float64(sent) * 100_000
	}
	return u
}
