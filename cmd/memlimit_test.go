package cmd

import (
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// The soft memory limit is 256 MiB, or three ledgers of the biggest burst
// (8 bytes per id) when that is more: 10,000,000 ids stay at the floor,
// 20,000,000 get 480,000,000 bytes.
func TestMemoryLimit(t *testing.T) {
	plan := func(n ...int) []scenario.Scenario {
		var ps []scenario.Scenario
		for _, m := range n {
			var s scenario.Scenario
			s.Load.Messages = m
			ps = append(ps, s)
		}
		return ps
	}
	for _, c := range []struct {
		plans []scenario.Scenario
		want  int64
	}{
		{plan(20000), 256 << 20},
		{plan(10_000_000), 256 << 20},
		{plan(1000, 20_000_000, 5), 480_000_000},
	} {
		if got := memoryLimit(c.plans); got != c.want {
			t.Errorf("%d plans: %d, want %d", len(c.plans), got, c.want)
		}
	}
}
