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
			got := explainRemoved(res, false)
			if got != tc.allowed || res.LostAllowed != tc.allowed || res.RemovedByScenario != tc.byScenario {
				t.Fatalf("allowed %v (LostAllowed %v), removed by scenario %d; want %v, %d; notes %q", got, res.LostAllowed, res.RemovedByScenario, tc.allowed, tc.byScenario, res.Notes)
			}
			if !tc.allowed && !strings.Contains(strings.Join(res.Notes, "\n"), "durability loss") {
				t.Fatalf("notes %q do not say durability loss", res.Notes)
			}
		})
	}
}

// A quorum queue's delete count bounds nothing: RabbitMQ answers 0 when its
// 250 ms read of the leader times out (seen under load: 800 confirmed ids
// removed, a count too small to cover them, a false durability loss). The
// ids published before the delete returned are the delete's; those after
// it still fail the run. A purge's count stays a bound.
func TestQuorumDeleteCountIsNoBound(t *testing.T) {
	before := []metrics.Range{{First: 0, Last: 1152}}
	for _, tc := range []struct {
		name       string
		action     scenario.Action
		quorum     bool
		lost       metrics.Range
		allowed    bool
		byScenario int
	}{
		{"quorum delete reported 0", scenario.DeleteQueue, true, metrics.Range{First: 200, Last: 999}, true, 800},
		{"quorum delete, loss after it returned", scenario.DeleteQueue, true, metrics.Range{First: 1100, Last: 1199}, false, 53},
		{"classic delete reported 0", scenario.DeleteQueue, false, metrics.Range{First: 200, Last: 999}, false, 0},
		{"quorum purge reported 0", scenario.PurgeQueue, true, metrics.Range{First: 200, Last: 999}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &scenario.ModeResult{Counts: metrics.Counts{Lost: tc.lost.Len()},
				IDs:    metrics.IDSets{Lost: []metrics.Range{tc.lost}},
				Faults: []scenario.FaultRecord{{Action: tc.action, RemovedMessages: intp(0), AtPublished: 1000, PublishedBefore: before}}}
			got := explainRemoved(res, tc.quorum)
			if got != tc.allowed || res.RemovedByScenario != tc.byScenario {
				t.Fatalf("allowed %v, removed by scenario %d; want %v, %d; notes %q", got, res.RemovedByScenario, tc.allowed, tc.byScenario, res.Notes)
			}
			if notes := strings.Join(res.Notes, "\n"); tc.quorum && tc.action == scenario.DeleteQueue && !strings.Contains(notes, quorumDeleteCount) {
				t.Fatalf("notes %q do not say why the count bounds nothing", res.Notes)
			}
		})
	}
}
