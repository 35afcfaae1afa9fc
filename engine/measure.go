package engine

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
	"github.com/rmqtorture/rmqtorture/verdict"
)

// measure derives rates and recovery timings from the publisher's stats and
// the timeline.
func measure(res *scenario.ModeResult, st PublishStats, tl *metrics.Timeline, start time.Time) {
	res.Reconnects = st.Reconnects
	res.BlockedMS = round1(st.BlockedMS)
	res.Stalls = st.Stalls
	res.ChannelCloses = st.ChannelCloses
	res.AbsorbedRate = round1(st.AbsorbedRate)
	res.ByNode = byNode(st.ByNode)
	if end, ok := tl.First(metrics.EvBurstEnd, start); ok {
		res.BurstMS = metrics.Millis(end.Sub(start))
	}
	if !st.LastPublish.IsZero() {
		res.PublishRate = round1(metrics.Rate(st.Publishes, st.LastPublish.Sub(start)))
	}
	// Up to the first fault's trigger, every publish was a first attempt: the
	// ids published then are the publish calls made.
	if len(res.Faults) > 0 && res.Faults[0].AtMS > 0 && res.Faults[0].AtMS < res.BurstMS { // not an after_burst step
		res.PreFaultPublishRate = round1(metrics.Rate(res.Faults[0].AtPublished, time.Duration(res.Faults[0].AtMS*float64(time.Millisecond))))
	} else {
		res.PreFaultPublishRate = res.PublishRate
	}
	if fault, ok := tl.First(metrics.EvFault, start); ok {
		res.BrokerDowntimeMS = brokerDowntime(tl.Events(), fault)
		if prog, ok := tl.First(metrics.EvFirstProgress, fault); ok {
			v := metrics.Millis(prog.Sub(fault))
			res.ClientRecoveryMS = &v
		}
	}
	if !st.LastConfirm.IsZero() {
		res.ConfirmRate = round1(metrics.Rate(st.Acked, st.LastConfirm.Sub(start)))
	}
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// brokerDowntime is the first fault's downtime in ms, from what was
// observed: for an action the action table says
// takes the broker down (kill, stop, restart, pause, disconnect,
// quorum-loss), the fault → the first AMQP login accepted again; for a
// step whose effect on logins is not known beforehand (a command, a
// partition, a rolling restart), the time a publisher was without a
// connection: its first connection lost after the fault and before the
// next fault → that publisher's next connection. nil for any other step (an alarm, closed
// connections, a deleted queue: the broker stayed up), and when there was
// no outage to time (a command that cleared a policy, a node drained while
// the publisher stayed on another) or it did not end.
func brokerDowntime(events []metrics.Event, fault time.Time) *float64 {
	first, end := -1, len(events)
	for i, e := range events {
		if e.Kind != metrics.EvFault || e.At.Before(fault) {
			continue
		}
		if first < 0 {
			first = i
		} else if e.At.After(fault) {
			end = i // the next fault's events are its own
			break
		}
	}
	if first < 0 {
		return nil
	}
	ms := func(from, to time.Time) *float64 { v := metrics.Millis(to.Sub(from)); return &v }
	action := scenario.Action(events[first].Action)
	if _, _, down := action.LeavesState(); down {
		// A manual recovery is a later step (start after kill): the
		// login that ends this downtime may follow it.
		for _, e := range events[first:] {
			if e.Kind == metrics.EvBrokerReady {
				return ms(fault, e.At)
			}
		}
		return nil
	}
	if spec, _ := action.Spec(); !spec.DowntimeFromConnections {
		return nil
	}
	for i, e := range events[first:end] {
		if e.Kind != metrics.EvConnectionLost {
			continue
		}
		for _, c := range events[first+i : end] {
			if c.Kind == metrics.EvConnected && c.Publisher == e.Publisher {
				return ms(e.At, c.At)
			}
		}
		return nil
	}
	return nil
}

// backlogNotes explains faults that landed after every order was already
// published: they hit the broker's backlog, not the burst.
func backlogNotes(faults []scenario.FaultRecord, messages int) []string {
	var out []string
	for _, f := range faults {
		if f.Error == "" && f.PublishedAtInject >= messages && f.AtPublished < messages {
			out = append(out, fmt.Sprintf("every order had been published before the %s call returned (%.0f ms after its trigger): the fault hit the broker's backlog, not the burst", f.Action, f.InjectMS))
		}
	}
	return out
}

// conclude reconciles the ledger and judges the burst into res through
// verdict.Conclude, on ev: the conditions the burst ran under
// (ev.Drained: the drain reached the end of the queue, so a confirmed id
// it did not see is lost, not unverified; ev.Interrupted: Ctrl-C cut the
// burst short, so its expectations are not checked) and what it observed
// (set here, from res), with the queue settings as a broker of version
// ("RabbitMQ 4.0.5"; "" unknown) acts on them. ev is then the evidence for
// the recorded history.
func conclude(res *scenario.ModeResult, s *scenario.Scenario, ledger *metrics.Ledger, latency, intended *metrics.Latency, ev *verdict.Evidence, version string) {
	dl, dlOK := s.DeadLetterPath(version)
	if dlOK {
		rule := ledger.DeadLetterRuleAt(dl.AfterPublish, downMoments(res.Events))
		ledger.SetDeadLetterRule(&rule)
		res.DeadLetterLossAllowed, res.DeadLetterGuarantee = s.DeadLetterPathLossAllowed(dl), dl.Guarantee
	}
	res.ConfirmLatency = latency.Summary()
	if intended != nil {
		sum := intended.Summary()
		res.ConfirmLatencyIntended = &sum
	}
	allowed := s.AllowedLoss(version)
	res.LostAllowed = len(allowed) > 0
	res.LostAllowedReason = scenario.LossLabels(allowed)
	removed := false
	verdict.Conclude(res, ledger, ev, func(ev *verdict.Evidence) {
		// The scenario's own delete-queue or purge-queue: when it explains
		// every lost id, the loss is allowed (explainRemoved sets
		// LostAllowed).
		removed = explainRemoved(res, s.Queue.Type == scenario.Quorum)
		if removed {
			res.LostAllowedReason = "removed by the scenario"
		}
		ev.Observed = observed(res)
	})
	if !removed {
		res.Notes = append(res.Notes, lossNotes(res.Counts, allowed)...)
	}
	if dlOK && res.Lost+res.LostDeadLetterPath > 0 {
		res.Notes = append(res.Notes, deadLetterPathNote(res.Counts, dl, res))
	}
	res.Notes = append(res.Notes, settingNotes(s, res.Counts, version)...)
}

// observed is what the burst observed beside the ledger, as the judge
// checks it: the one place a measurement becomes evidence.
func observed(res *scenario.ModeResult) scenario.Observed {
	return scenario.Observed{BlockedMS: res.BlockedMS, ChannelCloses: res.ChannelCloses, LostAllowed: res.LostAllowed,
		Consumers: res.Consumers, DeadLetterLossAllowed: res.DeadLetterLossAllowed, DeadLetterGuarantee: res.DeadLetterGuarantee,
		FalseAcks: falseAcks(res.Faults), AssertionsFailed: AssertionsFailed(res.Faults), DeadLetterReasons: res.DeadLetterReasons,
		PowerCutsUnproven: PowerCutsUnproven(res.Faults)}
}

// downMoments are the times a fault took the broker down (a kill, stop or
// restart took effect), from the burst's fault events.
func downMoments(events []metrics.Event) []time.Time {
	var out []time.Time
	for i, e := range events {
		if e.Kind != metrics.EvFault || e.At.IsZero() {
			continue
		}
		if state, _, ok := scenario.Action(e.Action).LeavesState(); ok && state == metrics.StateDown {
			out = append(out, lastAlive(events[i+1:], e.At))
		}
	}
	return out
}

// lastAlive is the latest moment the broker may still have been running
// after a fault event at fault: the first connection loss a client saw
// after it (the fault event of a kill, stop or restart is the start of its
// Docker call, and the signal lands during the call), or fault when no
// client saw one before the broker was started again.
func lastAlive(after []metrics.Event, fault time.Time) time.Time {
	for _, e := range after {
		switch e.Kind {
		case metrics.EvConnectionLost:
			return e.At
		case metrics.EvBrokerStarted, metrics.EvBrokerReady:
			return fault
		}
	}
	return fault
}

// lossNotes say why confirmed messages gone from the queue fail nothing.
func lossNotes(c metrics.Counts, allowed []scenario.LossReason) []string {
	if c.Lost == 0 || len(allowed) == 0 {
		return nil
	}
	why := make([]string, len(allowed))
	for i, r := range allowed {
		why[i] = r.Why
	}
	return []string{fmt.Sprintf("%d confirmed messages are gone, as allowed (%s): %s", c.Lost, scenario.LossLabels(allowed), strings.Join(why, "; "))}
}

// deadLetterPathNote states the rule that told loss on the dead-letter
// path from plain loss, and what it found.
func deadLetterPathNote(c metrics.Counts, dl scenario.DeadLetterPath, res *scenario.ModeResult) string {
	verdict := "allowed"
	if !res.DeadLetterLossAllowed {
		verdict = "not allowed"
	}
	return fmt.Sprintf("dead-letter path (%s into %s): %d confirmed messages lost on it (%s: %s). Rule: an id is lost on the dead-letter path when its basic.ack came, no copy was delivered from the queue or the dead-letter queue, and its publish call + %s is before the last moment a fault took the broker down (the queue cannot dead-letter a message earlier); any other confirmed id delivered from neither queue is lost",
		dl.By, res.DeadLetterQueue, c.LostDeadLetterPath, verdict, dl.Guarantee, afterPublish(dl.AfterPublish))
}

func afterPublish(d time.Duration) string {
	if d == 0 {
		return "0 ms"
	}
	return fmt.Sprintf("%d ms", d.Milliseconds())
}

// settingNotes say, for each queue setting that did not do what its name
// says (the settings table), what the burst saw instead.
func settingNotes(s *scenario.Scenario, c metrics.Counts, version string) []string {
	_, applied := s.Queue.Effective(version)
	on := version
	if on == "" {
		on = "this broker (version unknown)"
	}
	var out []string
	for _, r := range applied {
		out = append(out, fmt.Sprintf("%s %s acted as %s on this %s queue on %s: %s (%s). Here: %d nacked, %d dead-lettered, %d confirmed lost",
			r.Argument, r.Value, r.ActsAs, r.Type, on, r.Does, r.Source, c.Nacked, c.DeadLettered, c.Lost+c.LostDeadLetterPath))
	}
	return out
}
