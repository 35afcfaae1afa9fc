package engine

import (
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// stateAfter is the broker state a fault action leaves behind until the
// broker accepts AMQP logins again; ok is false for faults that leave the
// broker up (alarms are seen as connection.blocked events instead). The
// action table (scenario.ActionSpec) says it.
func stateAfter(a scenario.Action) (s metrics.BrokerState, fromTrigger, ok bool) {
	return a.LeavesState()
}

// faultEvents pairs each applied fault with its fault event: the first one
// at or after its trigger. Records without one (recoveries, failed calls)
// map to -1.
func faultEvents(faults []scenario.FaultRecord, events []metrics.Event) []int {
	out := make([]int, len(faults))
	used := -1
	for i, f := range faults {
		out[i] = -1
		if f.Action.IsRecovery() {
			continue
		}
		for j := used + 1; j < len(events); j++ {
			if events[j].Kind == metrics.EvFault && events[j].AtMS >= f.AtMS {
				out[i], used = j, j
				break
			}
		}
	}
	return out
}

// appliedFault is a fault event with its action and trigger time (ms),
// and the state its step said it leaves (a command step's state; "": the
// action's own).
type appliedFault struct {
	event     int
	action    scenario.Action
	triggerMS float64
	state     metrics.BrokerState
}

// applied lists the faults that have a fault event, from the records.
func applied(faults []scenario.FaultRecord, events []metrics.Event) []appliedFault {
	var out []appliedFault
	for i, j := range faultEvents(faults, events) {
		if j >= 0 {
			out = append(out, appliedFault{j, faults[i].Action, faults[i].AtMS, faults[i].State})
		}
	}
	return out
}

// appliedFromEvents lists the fault events with their action and the
// preceding trigger, for a live view taken while the
// fault records are still being written.
func appliedFromEvents(events []metrics.Event) []appliedFault {
	var out []appliedFault
	trigger := 0.0
	for j, e := range events {
		switch e.Kind {
		case metrics.EvTrigger:
			trigger = e.AtMS
		case metrics.EvFault:
			out = append(out, appliedFault{j, scenario.Action(e.Action), trigger, ""})
		}
	}
	return out
}

// brokerSpans derives the broker's states from the applied faults and the
// timeline: a fault's state lasts until the next broker-ready (or endMS);
// blocked lasts from connection.blocked to connection.unblocked or the
// connection's end.
func brokerSpans(faults []appliedFault, events []metrics.Event, endMS float64) []metrics.StateSpan {
	var spans []metrics.StateSpan
	for _, f := range faults {
		st, fromTrigger, ok := stateAfter(f.action)
		if f.state != "" {
			st, fromTrigger, ok = f.state, f.action.EffectDuringCall(), true
		}
		if !ok {
			continue
		}
		sp := metrics.StateSpan{FromMS: events[f.event].AtMS, ToMS: endMS, State: st}
		if fromTrigger {
			sp.FromMS = f.triggerMS
		}
		for _, e := range events[f.event+1:] {
			if e.Kind == metrics.EvBrokerReady {
				sp.ToMS = e.AtMS
				break
			}
		}
		spans = append(spans, sp)
	}
	blockedAt := -1.0
	for _, e := range events {
		switch e.Kind {
		case metrics.EvBlocked:
			if blockedAt < 0 {
				blockedAt = e.AtMS
			}
		case metrics.EvUnblocked, metrics.EvConnectionLost, metrics.EvConnected:
			if blockedAt >= 0 {
				spans = append(spans, metrics.StateSpan{FromMS: blockedAt, ToMS: e.AtMS, State: metrics.StateBlocked})
				blockedAt = -1
			}
		}
	}
	if blockedAt >= 0 {
		spans = append(spans, metrics.StateSpan{FromMS: blockedAt, ToMS: endMS, State: metrics.StateBlocked})
	}
	return spans
}

// reconnects returns when the publisher connected again (epochs after the
// first), in ms since the burst start.
func reconnects(events []metrics.Event) []float64 {
	var out []float64
	for _, e := range events {
		// A reconnect is a publisher's second or later connection (epochs
		// count all publishers' connections together).
		if e.Kind == metrics.EvConnected && e.Publisher > 0 && e.Connection > 1 {
			out = append(out, e.AtMS)
		}
	}
	return out
}

// BrokerStateNow is the broker's state after the events so far, for a live
// progress line: the worst state still open (a fault not yet followed by
// broker-ready, connection.blocked not yet lifted), else up.
func BrokerStateNow(events []metrics.Event) metrics.BrokerState {
	if len(events) == 0 {
		return metrics.StateUp
	}
	end := events[len(events)-1].AtMS + 1
	d := metrics.SeriesData{BucketMS: end, Published: []int{0}, Reconnects: []int{0}, Broker: []metrics.BrokerState{metrics.StateUp}}
	var open []metrics.StateSpan
	for _, sp := range brokerSpans(appliedFromEvents(events), events, end) {
		if sp.ToMS >= end {
			open = append(open, sp)
		}
	}
	d.Mark(open, nil)
	return d.Broker[0]
}

// seriesOf samples s up to end and marks broker states and reconnects.
func seriesOf(s *metrics.Series, faults []scenario.FaultRecord, events []metrics.Event, end time.Time) *metrics.SeriesData {
	d := s.Sample(end)
	d.Mark(brokerSpans(applied(faults, events), events, metrics.Millis(end.Sub(s.Start()))), reconnects(events))
	return &d
}

// recoveries fills each applied fault's Recovery from the timeline and the
// series' backlog (see Recovery).
func recoveries(faults []scenario.FaultRecord, events []metrics.Event, s *metrics.Series, confirmMode bool) {
	for i, j := range faultEvents(faults, events) {
		if j < 0 {
			continue
		}
		fault := events[j].At
		since := func(t time.Time) *float64 { v := metrics.Millis(t.Sub(fault)); return &v }
		// Events up to the next fault belong to this one.
		window := events[j+1:]
		for k, e := range window {
			if e.Kind == metrics.EvFault {
				window = window[:k]
				break
			}
		}
		first := func(kind metrics.EventKind, match func(metrics.Event) bool) (time.Time, bool) {
			for _, e := range window {
				if e.Kind == kind && (match == nil || match(e)) {
					return e.At, true
				}
			}
			return time.Time{}, false
		}
		r := &scenario.Recovery{}
		// Restart records broker-started as its call returns; a recovery
		// step, as its start, unpause or reconnect call returns.
		if t, ok := first(metrics.EvBrokerStarted, nil); ok {
			r.ContainerRunningMS = since(t)
		}
		if t, ok := first(metrics.EvBrokerReady, nil); ok {
			r.AMQPAcceptingMS = since(t)
		}
		if t, ok := first(metrics.EvConnected, func(e metrics.Event) bool { return e.Publisher > 0 }); ok {
			r.PublisherReconnectedMS = since(t)
		}
		if confirmMode {
			// The first confirm on a connection opened after the fault: a
			// confirm of the old connection can still arrive after the
			// fault event (the start of the kill call).
			fresh := map[metrics.Epoch]bool{}
			for _, e := range window {
				if e.Kind == metrics.EvConnected {
					fresh[e.Epoch] = true
				}
			}
			if t, ok := first(metrics.EvFirstProgress, func(e metrics.Event) bool { return e.Progress == metrics.ProgressConfirm && fresh[e.Epoch] }); ok {
				r.FirstConfirmMS = since(t)
				if s != nil {
					if d, ok := s.BacklogClearedAfter(t); ok {
						r.BacklogDrainedMS = since(d)
					}
				}
			}
		}
		if faults[i].Target != "" {
			clusterTimings(&faults[i], r, fault, window)
		}
		faults[i].Recovery = r
	}
}
