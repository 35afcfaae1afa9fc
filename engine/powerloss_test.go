package engine

import (
	"slices"
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

func TestPowerCutsUnproven(t *testing.T) {
	proven := scenario.PowerCut{Node: "rmqt-a", DroppedFiles: 2, DroppedBytes: 1451, SyncedControlKept: true, UnsyncedControlDropped: true}
	kept := scenario.PowerCut{Node: "rmqt-b", SyncedControlKept: true}
	lostBoth := scenario.PowerCut{Node: "rmqt-c", UnsyncedControlDropped: false}
	faults := []scenario.FaultRecord{
		{Action: scenario.PowerLoss, Trigger: "50% published", PowerLoss: []scenario.PowerCut{proven, kept}},
		{Action: scenario.Kill, Trigger: "after 1s"},
		{Action: scenario.PowerLoss, Trigger: "after 3s", PowerLoss: []scenario.PowerCut{lostBoth}},
	}
	want := []string{
		"power-loss (50% published) on rmqt-b: the unsynced control file was still there after the cut, so it did not behave as a power cut",
		"power-loss (after 3s) on rmqt-c: the fsynced control file was gone and the unsynced control file was still there after the cut, so it did not behave as a power cut",
	}
	if got := PowerCutsUnproven(faults); !slices.Equal(got, want) {
		t.Errorf("PowerCutsUnproven =\n%q\nwant\n%q", got, want)
	}
	if got := PowerCutsUnproven(faults[:1][:0]); got != nil {
		t.Errorf("no power cut: %q", got)
	}
	if got, want := powerLossDetail([]scenario.PowerCut{proven}), "power cut: rmqt-a: 1,451 bytes in 2 files and 0 new entries dropped (control files prove it)"; got != want {
		t.Errorf("powerLossDetail = %q, want %q", got, want)
	}
}
