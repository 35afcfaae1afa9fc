package engine

import (
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

func TestMeasureRatesAndDowntime(t *testing.T) {
	start := time.Now()
	tl := metrics.NewTimeline(start)
	tl.AddAt(start.Add(100*time.Millisecond), metrics.EvFault, "kill")
	tl.AddAt(start.Add(400*time.Millisecond), metrics.EvBrokerReady, "")
	tl.AddAt(start.Add(1000*time.Millisecond), metrics.EvBurstEnd, "")
	res := &scenario.ModeResult{Faults: []scenario.FaultRecord{{AtMS: 100, AtPublished: 50}}}
	measure(res, PublishStats{Publishes: 1000, LastPublish: start.Add(500 * time.Millisecond), Acked: 900, LastConfirm: start.Add(900 * time.Millisecond), Reconnects: 2}, tl, start)
	if res.BurstMS != 1000 || res.PublishRate != 2000 || res.PreFaultPublishRate != 500 || res.ConfirmRate != 1000 || res.Reconnects != 2 ||
		res.BrokerDowntimeMS == nil || *res.BrokerDowntimeMS != 300 || res.ClientRecoveryMS != nil {
		t.Fatalf("%+v", res)
	}
	notes := backlogNotes([]scenario.FaultRecord{{Action: scenario.Kill, PublishedAtInject: 100, AtPublished: 90, InjectMS: 12}, {Action: scenario.Kill, PublishedAtInject: 100, AtPublished: 100}}, 100)
	if len(notes) != 1 || notes[0] != "every order had been published before the kill call returned (12 ms after its trigger): the fault hit the broker's backlog, not the burst" {
		t.Fatalf("notes %q", notes)
	}
}
