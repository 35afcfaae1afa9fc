package reports

import (
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

func TestPowerCutLine(t *testing.T) {
	cuts := []scenario.PowerCut{
		{Node: "rmqt-a", DroppedFiles: 3, DroppedBytes: 794468, DroppedEntries: 1, SyncedControlKept: true, UnsyncedControlDropped: true},
		{Node: "rmqt-b", DroppedFiles: 1, DroppedBytes: 27, SyncedControlKept: true},
	}
	want := "on rmqt-a, 794,468 bytes written to 3 files since their last fsync and 1 new entries: the control files prove it (the synced one kept, the unsynced one's data gone); " +
		"on rmqt-b, 27 bytes written to 1 files since their last fsync and 0 new entries: NOT proven by the control files (the unsynced one kept its data)"
	if got := powerCutLine(cuts); got != want {
		t.Errorf("powerCutLine =\n%s\nwant\n%s", got, want)
	}
	if got := powerCutLine(nil); got != "" {
		t.Errorf("no cut: %q", got)
	}
}
