package scenario

import "github.com/rmqtorture/rmqtorture/metrics"

// PowerLoss cuts the power of the target's nodes: SIGKILL, then the data
// directory's lazy filesystem drops every write and every new entry no
// fsync made durable (broker.filesystem: lazy; what is kept and what is
// lost: docs/power-loss.md), then the nodes start again after Down on
// what was synced. A kill alone keeps the kernel's page cache, so a
// confirm for a message that never reached the disk looks durable; a
// power cut, a kernel panic or a lost VM host does not keep it (Jepsen's jepsen.lazyfs;
// rabbitmq-server#9457; amazon-mq/rabbitmq-stream-s3#46: stream segments
// are not fsynced before the confirm). Before the kill rmqtorture writes
// two control files into each data directory, one synced and one not:
// the record proves the cut dropped the one and kept the other.
const PowerLoss Action = "power-loss"

// powerLossSpec: down (a duration, default 5s), the time the nodes stay
// off before they start again.
var powerLossSpec = ActionSpec{
	Name:        PowerLoss,
	Params:      []Param{ParamDown},
	RecoveredBy: Start, Recovers: true, Leaves: "stopped", State: metrics.StateDown, FromTrigger: true,
	Repeatable: true, DefaultTarget: TargetLeader, OnPublishing: true, BrokerDown: true, CutsPower: true,
	While:         "while the broker lost its power",
	validateQueue: validatePowerLoss,
}

// validatePowerLoss refuses a power-loss step (its action at fp) on a
// broker whose data is not on the lazy filesystem: a SIGKILL alone drops
// nothing the kernel has cached, and the run would call that durability.
func validatePowerLoss(p *parser, fp string, s *Scenario) {
	if s.Broker.Filesystem != LazyFilesystem {
		p.fail(fp, "power-loss needs the broker's data on a filesystem that can forget: set broker.filesystem: %s (a kill alone keeps what the kernel cached, so nothing unsynced would be lost)", LazyFilesystem)
	}
}

// cutsMajorityPower reports whether a power-loss step of s cuts the
// power of a majority of its nodes at once (target majority or all, or
// any step on a single broker).
func (s *Scenario) cutsMajorityPower() bool {
	n := s.Broker.Nodes
	for _, f := range s.Faults {
		if !actionTable[f.Action].CutsPower {
			continue
		}
		if t := f.TargetOf(n, ""); n <= 1 || t.Kind == TargetMajority || t.Kind == TargetAll {
			return true
		}
	}
	return false
}

// CutsPower reports whether a step of s cuts a node's power
// (ActionSpec.CutsPower).
func (s *Scenario) CutsPower() bool {
	for _, f := range s.Faults {
		if actionTable[f.Action].CutsPower {
			return true
		}
	}
	return false
}
