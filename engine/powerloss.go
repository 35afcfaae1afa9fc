package engine

import (
	"fmt"
	"strings"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// powerLossDetail is a power-loss step's fault event detail: what each
// node's cut dropped, and whether its control files prove it.
func powerLossDetail(cuts []scenario.PowerCut) string {
	if len(cuts) == 0 {
		return "power cut: SIGKILL, then the unsynced writes dropped"
	}
	parts := make([]string, len(cuts))
	for i, c := range cuts {
		proof := "control files prove it"
		if !c.Proven() {
			proof = "NOT PROVEN by the control files"
		}
		parts[i] = counts.Sprintf("%s: %d bytes in %d files and %d new entries dropped (%s)", c.Node, c.DroppedBytes, c.DroppedFiles, c.DroppedEntries, proof)
	}
	return "power cut: " + strings.Join(parts, "; ")
}

// PowerCutsUnproven says, for each power cut of faults whose control files
// do not prove it (scenario.PowerCut.Proven), what they showed.
func PowerCutsUnproven(faults []scenario.FaultRecord) []string {
	var out []string
	for _, f := range faults {
		for _, c := range f.PowerLoss {
			if c.Proven() {
				continue
			}
			var what []string
			if !c.SyncedControlKept {
				what = append(what, "the fsynced control file was gone")
			}
			if !c.UnsyncedControlDropped {
				what = append(what, "the unsynced control file was still there")
			}
			out = append(out, fmt.Sprintf("power-loss (%s) on %s: %s after the cut, so it did not behave as a power cut", f.Trigger, c.Node, strings.Join(what, " and ")))
		}
	}
	return out
}
