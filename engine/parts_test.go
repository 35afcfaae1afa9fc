package engine

import (
	"context"
	"slices"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// TestRunPartPublishesItsShareOnly: load part 2/4 of 100 ids declares the
// shared queue, publishes ids 25–49 and nothing else, drains nothing and
// keeps the queue; its verdict passes (it did its share). The drain then
// declares the same queue, drains the 25 stored copies and deletes it.
func TestRunPartPublishesItsShareOnly(t *testing.T) {
	s := testScenario(100, 50)
	s.Faults = nil
	tr := &fakeTraffic{}
	r := newRunner(&fakeBroker{}, tr)
	r.RunID = "r1"
	r.Part = &metrics.Part{RunID: "r1", Index: 2, Parts: 4, First: 25, End: 50}
	res, down := r.RunMode(context.Background(), s, scenario.ConfirmWindow)
	var stored []int
	for seq := range tr.ownStore {
		stored = append(stored, seq)
	}
	slices.Sort(stored)
	if down || res.Verdict.Status != scenario.Pass || res.Sent != 25 || res.Unverified != 25 || res.Delivered != 0 || tr.drained {
		t.Errorf("load part: down %v, verdict %+v, sent %d, unverified %d, delivered %d, drained %v; want pass, 25 sent and unverified, no drain",
			down, res.Verdict, res.Sent, res.Unverified, res.Delivered, tr.drained)
	}
	if len(stored) != 25 || stored[0] != 25 || stored[24] != 49 {
		t.Errorf("stored ids %v, want 25–49", stored)
	}
	if !slices.Equal(tr.declared, []string{"rmqt.r1.confirm-window"}) || !slices.Equal(tr.shared, []bool{true}) {
		t.Errorf("declared %v shared %v, want rmqt.r1.confirm-window, shared", tr.declared, tr.shared)
	}

	r = newRunner(&fakeBroker{}, tr)
	r.RunID = "r1"
	r.Part = &metrics.Part{RunID: "r1", Parts: 4, Drain: true}
	res, _ = r.RunMode(context.Background(), s, scenario.ConfirmWindow)
	if res.Verdict.Status != scenario.Pass || res.Sent != 0 || res.Unexpected != 25 || !tr.drained || len(tr.declared) != 2 || tr.declared[1] != res.Queue || !tr.shared[1] {
		t.Errorf("drain: verdict %+v, sent %d, unexpected %d, drained %v, declared %v; want pass, the 25 copies delivered (unexpected to the drain's own ledger), the same queue",
			res.Verdict, res.Sent, res.Unexpected, tr.drained, tr.declared)
	}
}
