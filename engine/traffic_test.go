package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// A stream scenario publishes and drains through the stream traffic; the
// AMQP traffic sees nothing of it.
func TestStreamQueueUsesStreamTraffic(t *testing.T) {
	s := testScenario(100, 50)
	s.Queue.Type, s.Queue.Deduplication = scenario.Stream, true
	b := &fakeBroker{}
	amqp, streams := &fakeTraffic{}, &planRecorder{fakeTraffic: &fakeTraffic{b: b, holdAt: 50}}
	r := newRunner(b, amqp)
	r.StreamTraffic = streams
	res, _ := r.RunMode(context.Background(), s, scenario.ConfirmWindow)
	if res.Verdict.Status != scenario.Pass || res.Sent != 100 {
		t.Fatalf("verdict %+v sent %d", res.Verdict, res.Sent)
	}
	if len(amqp.declared) != 0 || len(streams.declared) != 1 || streams.declared[0] != res.Queue {
		t.Fatalf("declared on AMQP %v, on streams %v", amqp.declared, streams.declared)
	}
	if !streams.lastPlan.Deduplication {
		t.Fatalf("publish plan lost queue.deduplication: %+v", streams.lastPlan)
	}
}

// A runner without stream traffic refuses a stream scenario with an error,
// never a panic or an AMQP queue of type stream.
func TestStreamQueueWithoutStreamTrafficIsRefused(t *testing.T) {
	s := testScenario(10, 50)
	s.Queue.Type = scenario.Stream
	amqp := &fakeTraffic{}
	res, _ := newRunner(&fakeBroker{}, amqp).RunMode(context.Background(), s, scenario.ConfirmEach)
	if res.Verdict.Status == scenario.Pass || !strings.Contains(res.Error, "stream protocol traffic") || len(amqp.declared) != 0 {
		t.Fatalf("verdict %+v error %q declared %v", res.Verdict, res.Error, amqp.declared)
	}
}

// planRecorder is a fakeTraffic that keeps the last publish plan.
type planRecorder struct {
	*fakeTraffic
	lastPlan PublishPlan
}

func (p *planRecorder) Publish(ctx context.Context, plan PublishPlan) (PublishStats, error) {
	p.lastPlan = plan
	return p.fakeTraffic.Publish(ctx, plan)
}
