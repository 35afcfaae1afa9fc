package cmd

// The faults the field's second round of reports needed, each a shipped
// scenario run against the real broker: the verdict already checks the
// scenario's exact expectations; these tests check what the ids and the
// timeline say beyond them.

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// events returns the mode's events of kind k, in order.
func events(m scenario.ModeResult, k metrics.EventKind) []metrics.Event {
	var out []metrics.Event
	for _, e := range m.Events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// only returns the one event of kind k.
func only(t *testing.T, m scenario.ModeResult, k metrics.EventKind) metrics.Event {
	t.Helper()
	es := events(m, k)
	if len(es) != 1 {
		t.Fatalf("%s: %d %s events, want 1: %+v", m.Mode, len(es), k, m.Events)
	}
	return es[0]
}

func inRanges(seq int, rs []metrics.Range) bool {
	return slices.ContainsFunc(rs, func(r metrics.Range) bool { return seq >= r.First && seq <= r.Last })
}

// rabbitmq-server#1877: the queue deleted mid-burst and declared again.
// The confirmed ids the delete removed are exactly the lost ones, all
// published before the delete returned, and allowed; the ids published
// while the queue was gone came back as basic.return; the rest, the last
// order among them, were delivered from the queue declared again.
func TestDeleteQueueMidBurstCountsRemovalApart(t *testing.T) {
	r := runScenario(t, "delete-queue-mid-burst")
	// Deleting a quorum queue under a publisher can crash a queue or
	// channel process of the broker (its log then has a crash report: seen
	// in 2 of 7 runs here, both on a loaded 2-core host), after which the queue
	// declared again may take nothing more (fire-and-forget: 0 delivered,
	// the last 819 orders returned). That is the broker's outcome, not the
	// ledger's: with the crash on record, the checks of what the queue
	// declared again took are skipped; every check of the accounting holds.
	crashed := slices.ContainsFunc(r.BrokerLogFindings, func(f scenario.BrokerLogFinding) bool { return f.Signature == "process-crashed" })
	if crashed {
		t.Log("the broker logged a crashed process: what the queue declared again took is not checked")
	}
	for _, m := range r.Modes {
		if len(m.Faults) != 1 || m.Faults[0].Action != scenario.DeleteQueue || m.Faults[0].Error != "" ||
			m.Faults[0].RemovedMessages == nil || *m.Faults[0].RemovedMessages == 0 {
			t.Fatalf("%s: faults %+v", m.Mode, m.Faults)
		}
		if c := only(t, m, metrics.EvFaultCleared); c.Detail != "queue "+m.Queue+" declared again, as the application would" || c.AtMS < only(t, m, metrics.EvFault).AtMS+1000 {
			t.Fatalf("%s: cleared %+v, fault at %.0f ms", m.Mode, c, only(t, m, metrics.EvFault).AtMS)
		}
		if m.Returned == 0 || !crashed && inRanges(r.Messages-1, m.IDs.Returned) {
			t.Fatalf("%s: returned %d %v: the queue declared again must take the last order", m.Mode, m.Returned, m.IDs.Returned)
		}
	}
	cw := mode(t, r, scenario.ConfirmWindow)
	f := cw.Faults[0]
	lost, returned := cw.IDs.Lost, ids(cw.IDs.Returned)
	if cw.Lost == 0 || cw.RemovedByScenario != cw.Lost || !cw.LostAllowed || len(lost) != 1 || lost[0].First != 0 || lost[0].Last >= f.PublishedAtInject {
		t.Fatalf("lost %d %v, removed by the scenario %d, allowed %v; %d published when the delete returned", cw.Lost, lost, cw.RemovedByScenario, cw.LostAllowed, f.PublishedAtInject)
	}
	// Every message the broker deleted had been acked (lost now) or was in
	// doubt when the channel crashed (republished since); acks for a queue
	// being deleted can make lost exceed the broker's count (#1877).
	if *f.RemovedMessages > cw.Lost+cw.WentInDoubt {
		t.Fatalf("broker removed %d, lost %d + went in doubt %d", *f.RemovedMessages, cw.Lost, cw.WentInDoubt)
	}
	// The broker may basic.nack what was on its way into the queue it
	// deleted (an error in the queue's process: the publisher confirms
	// guide); each id ends confirmed, lost, returned or nacked.
	if returned[0] <= lost[0].Last || cw.Confirmed+cw.Lost+cw.Returned+cw.Nacked != cw.Sent || cw.Delivered != cw.Confirmed || cw.Confirmed == 0 && !crashed {
		t.Fatalf("returned from %d after lost up to %d; confirmed %d + lost %d + returned %d + nacked %d of %d, delivered %d", returned[0], lost[0].Last, cw.Confirmed, cw.Lost, cw.Returned, cw.Nacked, cw.Sent, cw.Delivered)
	}
	if cw.Republished != cw.WentInDoubt || cw.Duplicates != 0 {
		t.Fatalf("went in doubt %d, republished %d, duplicates %d", cw.WentInDoubt, cw.Republished, cw.Duplicates)
	}
	if !slices.ContainsFunc(cw.Notes, func(n string) bool {
		return strings.HasPrefix(n, strconv.Itoa(cw.Lost)+" confirmed messages were removed by the scenario's own delete-queue")
	}) {
		t.Fatalf("notes %q", cw.Notes)
	}
	ff := mode(t, r, scenario.FireAndForget)
	if m := ff.IDs.UnconfirmedMissing; len(m) != 1 || m[0].First != 0 || ff.UnconfirmedDelivered == 0 && !crashed || !strings.Contains(strings.Join(ff.Notes, "\n"), "unconfirmed missing ids were published before the scenario's own delete-queue") {
		t.Fatalf("fire-and-forget missing %v, delivered %d, notes %q", m, ff.UnconfirmedDelivered, ff.Notes)
	}
	t.Logf("confirm-window: broker removed %d, lost %d (all removed by the scenario), went in doubt %d, returned %d, delivered %d; fire-and-forget: broker removed %d, missing %d, returned %d",
		*f.RemovedMessages, cw.Lost, cw.WentInDoubt, cw.Returned, cw.Delivered, *ff.Faults[0].RemovedMessages, ff.UnconfirmedMissing, ff.Returned)
}

// A purge 1 s after the last publish (after_burst): it fires after the
// burst, the drain waits for it, it removes every order, and the loss is
// the scenario's; the pre-fault rate is the whole burst's.
func TestPurgeAfterBurstFiresAfterTheLastPublish(t *testing.T) {
	r := runScenario(t, "purge-after-burst")
	for _, m := range r.Modes {
		f := m.Faults[0]
		lastPublishMS := float64(m.Sent) / m.PublishRate * 1000
		trigger, fault, drain := only(t, m, metrics.EvTrigger), only(t, m, metrics.EvFault), only(t, m, metrics.EvDrainStart)
		if len(m.Faults) != 1 || f.Trigger != "1s after the last publish" || f.AtPublished != r.Messages || *f.RemovedMessages != r.Messages ||
			trigger.AtMS < lastPublishMS+1000-1 || drain.AtMS < fault.AtMS {
			t.Fatalf("%s: fault %+v (removed %d); last publish ~%.0f ms, trigger %.0f ms, fault %.0f ms, drain %.0f ms", m.Mode, f, *f.RemovedMessages, lastPublishMS, trigger.AtMS, fault.AtMS, drain.AtMS)
		}
		if m.PreFaultPublishRate != m.PublishRate {
			t.Fatalf("%s: pre-fault rate %.1f, whole burst %.1f: a fault after the burst leaves the burst undisturbed", m.Mode, m.PreFaultPublishRate, m.PublishRate)
		}
	}
	if cw := mode(t, r, scenario.ConfirmWindow); cw.RemovedByScenario != r.Messages || !cw.LostAllowed || len(cw.IDs.Lost) != 1 || cw.IDs.Lost[0] != (metrics.Range{First: 0, Last: r.Messages - 1}) {
		t.Fatalf("confirm-window: removed by the scenario %d, allowed %v, lost ids %v", cw.RemovedByScenario, cw.LostAllowed, cw.IDs.Lost)
	}
}

// Bursts of 500 every second (rabbitmq-dotnet-client#1928), SIGKILL
// between two bursts: the bursts before it land on their schedule, the
// ones due while the broker was down are published on reconnect, and their
// latency from the intended send time keeps the outage.
func TestBurstsThroughKill(t *testing.T) {
	r := runScenario(t, "bursts-through-kill")
	m := mode(t, r, scenario.ConfirmWindow)
	f := m.Faults[0]
	// The 4 bursts of 0–3 s are due by the trigger at 3.7 s. Publishing is
	// never ahead of the schedule; on a loaded machine it may be behind it
	// (seen in CI: 1,999, the 4th burst's last order still under way), but
	// the 4th burst has begun.
	if f.AtPublished > 2000 || f.AtPublished <= 1500 {
		t.Fatalf("the kill's trigger at 3.7 s found %d published, want the 4 bursts of 0–3 s (2,000), or the 4th under way", f.AtPublished)
	}
	if f.AtPublished < 2000 {
		t.Logf("the publisher was behind its schedule: %d of the 2,000 due by 3.7 s published", f.AtPublished)
	}
	// Up to the kill, publishing came in 4 bursts of 500, each a run of
	// busy buckets a second apart, nothing in between.
	s := m.Series
	var bursts []int
	var starts []float64
	for i := 0; float64(i)*s.BucketMS < f.AtMS; i++ {
		switch n := s.Published[i]; {
		case n > 0 && (i == 0 || s.Published[i-1] == 0):
			bursts, starts = append(bursts, n), append(starts, float64(i)*s.BucketMS)
		case n > 0:
			bursts[len(bursts)-1] += n
		}
	}
	// On a loaded machine a burst of 500 can take longer than its second
	// (confirm-window waits for basic.acks), so it runs into the next and
	// the runs merge (seen in CI: 1,500 then 500). Then what holds is the
	// schedule: publishing is never ahead of it, at most 500 per burst due
	// by the end of each bucket (one bucket of slack for the schedule's
	// origin), and the 2,000 all went out before the kill.
	if !slices.Equal(bursts, []int{500, 500, 500, 500}) || starts[3]-starts[0] < 2500 || starts[3]-starts[0] > 3500 {
		cum := 0
		for i := 0; float64(i)*s.BucketMS < f.AtMS; i++ {
			cum += s.Published[i]
			due := 500 * min(4, int(float64(i+2)*s.BucketMS/1000)+1)
			if cum > due || len(bursts) == 0 || bursts[0] < 500 {
				t.Fatalf("bursts before the kill %v starting at %v ms: %d published by %.0f ms, %d due: %v", bursts, starts, cum, float64(i+1)*s.BucketMS, due, s.Published)
			}
		}
		t.Logf("the bursts merged (the publisher fell behind the schedule, never ahead of it): %v starting at %v ms", bursts, starts)
	}
	in := m.ConfirmLatencyIntended
	if in == nil || m.BrokerDowntimeMS == nil || in.Max < *m.BrokerDowntimeMS-1000 || m.ConfirmLatency.P99 >= in.P99 {
		t.Fatalf("confirm latency from the intended time %+v, from the publish call %+v, broker down %v ms", in, m.ConfirmLatency, m.BrokerDowntimeMS)
	}
	if m.Republished != m.WentInDoubt || m.Duplicates != m.DuplicatesFromRepublish {
		t.Fatalf("went in doubt %d, republished %d, duplicates %d (from republish %d)", m.WentInDoubt, m.Republished, m.Duplicates, m.DuplicatesFromRepublish)
	}
}

// rabbitmq-server PR #3099: the broker stopped (SIGTERM, SIGKILL after
// grace) 1 s after its container started again, before it accepts AMQP:
// the report has both faults, nobody logged in between the start and the
// stop, the kill's recovery never reached AMQP, the stop's detail says how
// it ended, and nothing confirmed is lost.
func TestSigtermWhileBooting(t *testing.T) {
	r := runScenario(t, "sigterm-while-booting")
	m := mode(t, r, scenario.ConfirmWindow)
	if len(m.Faults) != 2 || m.Faults[0].Action != scenario.Kill || m.Faults[1].Action != scenario.Stop || m.Faults[1].Trigger != "1s after the container started" {
		t.Fatalf("faults %+v", m.Faults)
	}
	started, faults, triggers := events(m, metrics.EvBrokerStarted), events(m, metrics.EvFault), events(m, metrics.EvTrigger)
	if len(started) != 2 || len(faults) != 2 || len(triggers) != 2 || triggers[1].AtMS < started[0].AtMS+1000 || triggers[1].AtMS > started[0].AtMS+1500 {
		t.Fatalf("started %+v, faults %+v, triggers %+v", started, faults, triggers)
	}
	// The stop's call began at its trigger; the node booted on no further.
	for _, e := range m.Events {
		if (e.Kind == metrics.EvBrokerReady || e.Kind == metrics.EvConnected) && e.AtMS > started[0].AtMS && e.AtMS < triggers[1].AtMS {
			t.Fatalf("%s at %.0f ms, between the start (%.0f ms) and the stop (%.0f ms): the node was not booting", e.Kind, e.AtMS, started[0].AtMS, triggers[1].AtMS)
		}
	}
	// The stop's effect is dated at its call's start (InjectMS 0); how
	// long the call took says whether Docker needed SIGKILL.
	killed := m.Faults[1].CallMS >= 5000
	if want := map[bool]string{false: "the broker exited on SIGTERM", true: "Docker sent SIGKILL"}[killed]; !strings.Contains(faults[1].Detail, want) {
		t.Fatalf("stop call took %.0f ms, detail %q, want it to say %q", m.Faults[1].CallMS, faults[1].Detail, want)
	}
	first, second := m.Faults[0].Recovery, m.Faults[1].Recovery
	if first == nil || first.ContainerRunningMS == nil || first.AMQPAcceptingMS != nil || second == nil || second.AMQPAcceptingMS == nil {
		t.Fatalf("recoveries %+v / %+v", first, second)
	}
	checkRepublishExact(t, m)
	t.Logf("stop 1 s after the start took %.0f ms (SIGKILL needed: %v): %s", m.Faults[1].CallMS, killed, faults[1].Detail)
}

// rabbitmq-server#880, the disk alarm: connection.blocked ("low on disk")
// arrives once the limit is being raised, lasts at least the planned down
// time, ends only once the limit is being restored, and nobody reconnects
// or stalls. Only causal bounds are asserted: blocked after the raising
// call started (its trigger), unblocked after the restoring call started
// (down after the fault's effect). The broker sends both frames to the
// connection on its own, so either may reach the client before or after
// the rabbitmqctl call that caused it returns; on a loaded host
// connection.unblocked was read 144 ms after the restoring call returned.
func TestDiskAlarmBlocksPublishers(t *testing.T) {
	r := runScenario(t, "disk-alarm")
	m := mode(t, r, scenario.ConfirmEach)
	blocked, unblocked := only(t, m, metrics.EvBlocked), only(t, m, metrics.EvUnblocked)
	trigger, fault, cleared := only(t, m, metrics.EvTrigger), only(t, m, metrics.EvFault), only(t, m, metrics.EvFaultCleared)
	if !strings.Contains(blocked.Detail, "low on disk") || blocked.AtMS < trigger.AtMS || unblocked.AtMS < fault.AtMS+5000 {
		t.Fatalf("blocked %+v, unblocked %+v, trigger %.0f ms, fault %.0f ms, cleared %.0f ms", blocked, unblocked, trigger.AtMS, fault.AtMS, cleared.AtMS)
	}
	if m.Stalls != 0 || m.Reconnects != 0 || m.ConfirmLatency.Max < m.BlockedMS*0.5 || cleared.Detail != "disk alarm cleared (disk_free_limit restored)" {
		t.Fatalf("stalls %d reconnects %d; max confirm latency %.0f ms, blocked %.0f ms; cleared %q", m.Stalls, m.Reconnects, m.ConfirmLatency.Max, m.BlockedMS, cleared.Detail)
	}
}
