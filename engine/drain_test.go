package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
)

// Consumers that never go quiet are waited for until drain.timeout; Ctrl-C
// during the wait cuts it to the interrupt grace.
func TestAwaitConsumersHonoursCtrlC(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    load: {messages: 10}
    consumers: {count: 1}
    drain: {idle: 1ms, lost_wait: 1h, timeout: 1h}
`)
	busy := &busyConsumers{}
	old := interruptGrace
	interruptGrace = 50 * time.Millisecond
	defer func() { interruptGrace = old }()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	began := time.Now()
	err := awaitConsumers(ctx, &f.Scenarios[0], busy, metrics.NewLedger("q-", 10))
	if took := time.Since(began); took > 2*time.Second || err == nil || !strings.Contains(err.Error(), "after Ctrl-C") {
		t.Fatalf("took %s err %v", took, err)
	}
	f.Scenarios[0].Drain.Timeout = 1e8 // 100ms, no Ctrl-C
	err = awaitConsumers(context.Background(), &f.Scenarios[0], busy, metrics.NewLedger("q-", 10))
	if err == nil || err.Error() != "live consumers still receiving deliveries 100ms after the burst (drain.timeout): messages are cycling" {
		t.Fatalf("err %v", err)
	}
}

type busyConsumers struct{ fakeConsumers }

func (*busyConsumers) LastDelivery() time.Time { return time.Now() }

// The dead-letter queue is drained before the work queue, each with the
// scenario's drain settings.
func TestDrainQueuesOrder(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    queue: {dead_letter_queue: true}
    load: {messages: 10}
`)
	rec := &recordingDrain{}
	spec := queueSpec(&f.Scenarios[0], "q")
	var bodies bodySizes
	if err := drainQueues(context.Background(), rec, &f.Scenarios[0], spec, metrics.NewLedger("q-", 10), false, bodies.add, nil); err != nil {
		t.Fatal(err)
	}
	// Only the queue under test reports its body sizes.
	if len(rec.plans) != 2 || rec.plans[0].Queue != "q.dlq" || !rec.plans[0].DeadLetter || rec.plans[0].OnBody != nil || rec.plans[1].OnBody == nil ||
		rec.plans[1].Queue != "q" || rec.plans[1].DeadLetter || rec.plans[1].AllowEmpty ||
		rec.plans[1].LostWait != 15*time.Second || rec.plans[1].Idle != 2*time.Second {
		t.Fatalf("plans %+v", rec.plans)
	}
}

type recordingDrain struct {
	fakeTraffic
	plans []DrainPlan
}

func (r *recordingDrain) Drain(ctx context.Context, d DrainPlan) error {
	if _, ok := ctx.Deadline(); !ok {
		panic("drain without a deadline")
	}
	r.plans = append(r.plans, d)
	return nil
}
