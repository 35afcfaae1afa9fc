package docker

import (
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// A single broker acts on itself (or all of it) and refuses cluster targets.
func TestSingleBrokerTargets(t *testing.T) {
	for _, tg := range []scenario.Target{scenario.BrokerTarget(), {}, {Kind: scenario.TargetAll}} {
		if err := single(tg); err != nil {
			t.Errorf("%s: %v", tg, err)
		}
	}
	err := single(scenario.Target{Kind: scenario.TargetLeader, Queue: "q"})
	if err == nil || err.Error() != "target leader of q needs a cluster" {
		t.Fatalf("err %v", err)
	}
}
