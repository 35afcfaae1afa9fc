package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// interruptGrace is how long the waits after the burst go on once Ctrl-C
// came: enough to collect what is already on its way.
var interruptGrace = 5 * time.Second // a variable for tests

const (
	interruptDrainLimit = 20 * time.Second
	deleteTimeout       = 10 * time.Second
)

// awaitConsumers waits, after the burst, until the live consumers go quiet:
// nothing delivered for drain.idle and every confirmed id delivered (or, for
// consumers that never ack, simply quiet), or nothing delivered for
// drain.lost_wait. A queue still delivering after drain.timeout (a poison
// message nobody ends) makes the drain incomplete. Ctrl-C (ctx done, before
// or during the wait) cuts the wait to interruptGrace from then.
func awaitConsumers(ctx context.Context, s *scenario.Scenario, c LiveConsumers, ledger *metrics.Ledger) error {
	began := time.Now()
	deadline := began.Add(s.Drain.Timeout.D())
	interrupted := ctx.Done()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-interrupted:
			deadline = minTime(deadline, time.Now().Add(interruptGrace))
			interrupted = nil // honoured once; the grace has its own deadline
			continue
		case <-tick.C:
		}
		last := c.LastDelivery()
		if last.Before(began) {
			last = began
		}
		idle := time.Since(last)
		quiet := idle >= s.Drain.Idle.D() && (s.Consumers.OnDelivery != scenario.ConsumerAck || ledger.AllConfirmedDelivered())
		if quiet || idle >= s.Drain.LostWait.D() {
			return nil
		}
		if time.Now().After(deadline) {
			if ctx.Err() != nil && deadline.Before(began.Add(s.Drain.Timeout.D())) {
				return fmt.Errorf("live consumers still receiving deliveries %s after Ctrl-C: wait cut short", interruptGrace)
			}
			return fmt.Errorf("live consumers still receiving deliveries %s after the burst (drain.timeout): messages are cycling", s.Drain.Timeout.D())
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// drainQueues consumes what the burst left: the dead-letter queue first
// (until idle: nobody knows how many it should hold), whose deliveries
// satisfy the work queue's wait for confirmed ids, then the queue under
// test. Each drain has its own deadline (drain.timeout, or
// interruptDrainLimit after Ctrl-C) and ignores Ctrl-C otherwise: what was
// published so far is still worth reconciling. onBody sees the size of
// every body drained from the queue under test; deaths, the x-death of
// every id drained from the dead-letter queue.
func drainQueues(ctx context.Context, tr Traffic, s *scenario.Scenario, spec QueueSpec, ledger *metrics.Ledger, liveConsumers bool, onBody func(bytes int), deaths *deadLetterDeaths) error {
	if spec.DeadLetterQueue != "" {
		d := drainPlan(s, spec.DeadLetterQueue, ledger)
		d.Satisfied, d.AllowEmpty, d.DeadLetter = func() bool { return true }, true, true
		d.OnDeadLetter = deaths.add
		if err := drainOne(ctx, tr, s, d); err != nil {
			return err
		}
	}
	d := drainPlan(s, spec.Name, ledger)
	d.Satisfied, d.AllowEmpty, d.OnBody = ledger.AllConfirmedDelivered, liveConsumers, onBody
	return drainOne(ctx, tr, s, d)
}

func drainOne(ctx context.Context, tr Traffic, s *scenario.Scenario, d DrainPlan) error {
	limit := s.Drain.Timeout.D()
	if ctx.Err() != nil {
		limit = interruptDrainLimit
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
	defer cancel()
	return tr.Drain(dctx, d)
}

// deleteQueue removes the burst's queue (on a broker that is not
// rmqtorture's own) under its own deadline.
func deleteQueue(ctx context.Context, tr Traffic, queue string) error {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
	defer cancel()
	return tr.Delete(dctx, queue)
}
