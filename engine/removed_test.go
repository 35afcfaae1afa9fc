package engine

import (
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

func intp(n int) *int { return &n }

// A purge or delete excuses no more lost ids than the broker reported it
// removed plus the ids published during its call: a kill's loss before an
// after-burst purge is durability loss, not the scenario's doing.
func TestRemovedByScenarioIsBoundedByWhatTheBrokerRemoved(t *testing.T) {
	all := []metrics.Range{{First: 0, Last: 399}}
	for _, tc := range []struct {
		name        string
		removed     int
		atPublished int
		lost        int
		allowed     bool
		byScenario  int
	}{
		// After the burst: every id published before the trigger; the broker
		// removed 200 of the 400 lost ids.
		{"purge after a kill's loss", 200, 400, 400, false, 0},
		{"purge that removed nothing", 0, 400, 50, false, 0},
		// All 400 lost ids accounted for by the broker's count.
		{"purge that removed them all", 400, 400, 400, true, 400},
		// Mid-burst delete: 392 removed, 8 more published while its call ran
		// (acks for a queue being deleted, rabbitmq-server#1877).
		{"delete with acks during its call", 392, 392, 400, true, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &scenario.ModeResult{Counts: metrics.Counts{Lost: tc.lost},
				IDs:    metrics.IDSets{Lost: []metrics.Range{{First: 0, Last: tc.lost - 1}}},
				Faults: []scenario.FaultRecord{{Action: scenario.PurgeQueue, RemovedMessages: intp(tc.removed), AtPublished: tc.atPublished, PublishedBefore: all}}}
			got := explainRemoved(res)
			if got != tc.allowed || res.LostAllowed != tc.allowed || res.RemovedByScenario != tc.byScenario {
				t.Fatalf("allowed %v (LostAllowed %v), removed by scenario %d; want %v, %d; notes %q", got, res.LostAllowed, res.RemovedByScenario, tc.allowed, tc.byScenario, res.Notes)
			}
			if !tc.allowed && !strings.Contains(strings.Join(res.Notes, "\n"), "durability loss") {
				t.Fatalf("notes %q do not say durability loss", res.Notes)
			}
		})
	}
}
