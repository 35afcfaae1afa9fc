package amqp

import (
	"context"
	"time"

	"github.com/rmqtorture/rmqtorture/broker/internal/amqpx"
	"github.com/rmqtorture/rmqtorture/metrics"
)

// depthMonitor measures how fast a fire-and-forget burst actually enters the
// queue, by polling its depth (queue.declare passive) on a connection of its
// own. Publish calls return ~3× faster than the broker absorbs them (92k vs
// 30k msg/s measured in BROKER-FACTS.md): the gap is what a kill destroys.
type depthMonitor struct {
	done     chan struct{}
	stop     chan struct{}
	cancel   context.CancelFunc // ends the monitor, closing its connection
	maxCount int
	maxAt    time.Time
}

// depthPoll is the interval between queue-depth samples.
const depthPoll = 20 * time.Millisecond

// depthSettle bounds how long wait lets the monitor watch the queue settle.
const depthSettle = 10 * time.Second

// startDepthMonitor polls until its connection fails (the kill ends it: the
// last sample is what the broker had absorbed just before), ctx ends, or wait
// is called and the depth has been stable for half a second. A poll the
// broker does not answer (paused) is cut short by closing the connection
// when ctx ends or depthSettle after wait.
func startDepthMonitor(ctx context.Context, a *Traffic, queue string) *depthMonitor {
	m := &depthMonitor{done: make(chan struct{}), stop: make(chan struct{})}
	ctx, m.cancel = context.WithCancel(ctx)
	go func() {
		defer close(m.done)
		conn, err := a.dial("depth-monitor")
		if err != nil {
			return
		}
		defer amqpx.CloseConn(conn)
		defer context.AfterFunc(ctx, func() { amqpx.CloseConn(conn) })()
		ch, err := conn.Channel()
		if err != nil {
			return
		}
		stop := m.stop
		stopping := false
		var stableSince time.Time
		deadline := time.Time{}
		tick := time.NewTicker(depthPoll)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-stop:
				if !stopping {
					stopping, stableSince, deadline = true, time.Now(), time.Now().Add(depthSettle)
				}
				stop = nil
			case <-tick.C:
			}
			asked := time.Now()
			q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
			if err != nil {
				return
			}
			now := time.Now()
			if q.Messages > m.maxCount {
				// The broker counted somewhere between the question and
				// the answer: the midpoint halves the error of either end,
				// which matters to a rate over a burst's first 100 ms.
				m.maxCount, m.maxAt, stableSince = q.Messages, asked.Add(now.Sub(asked)/2), now
			}
			if stopping && (now.Sub(stableSince) > 500*time.Millisecond || now.After(deadline)) {
				return
			}
		}
	}()
	return m
}

// wait lets the monitor see the queue settle and returns the most messages
// it saw in the queue and how long after the timeline's start it saw them
// (0, 0 when nothing was observed).
func (m *depthMonitor) wait(tl *metrics.Timeline) (int, time.Duration) {
	close(m.stop)
	stuck := time.AfterFunc(depthSettle+time.Second, m.cancel)
	<-m.done
	stuck.Stop()
	m.cancel()
	if m.maxCount == 0 {
		return 0, 0
	}
	return m.maxCount, m.maxAt.Sub(tl.Start())
}
