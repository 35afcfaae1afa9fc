package scenario

import (
	"testing"
	"time"
)

// The second round's fault language: burst shapes, triggers timed from the
// last publish or a container start, and the queue and disk actions. Every
// refused input with its exact file:line:column error.
func TestParseNewFaultErrors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"burst beside rate, bursts larger than the load",
			head + "    load:\n      messages: 100\n      rate: 50\n      burst: {messages: 200, every: 1s}\n",
			[]string{
				"s.yaml:7:14: scenarios[0].load.burst: load.burst and load.rate both schedule the publish calls: use one",
				"s.yaml:7:25: scenarios[0].load.burst.messages: 200 is more than load.messages 100: the load would be one burst",
			}},
		{"burst without its period, or with a period no timer honours",
			head + "    load:\n      messages: 100\n      burst: {messages: 10}\n  - name: b\n    load:\n      messages: 100\n      burst: {messages: 10, every: 0s}\n",
			[]string{
				"s.yaml:6:14: scenarios[0].load.burst.every: missing: the time from one burst's start to the next's",
				"s.yaml:10:36: scenarios[1].load.burst.every: must be at least 1ms, got 0s",
			}},
		{"bursts that outlast the burst timeout",
			head + "    load:\n      messages: 100\n      burst_timeout: 5s\n      burst: {messages: 10, every: 1s}\n",
			[]string{"s.yaml:7:36: scenarios[0].load.burst.every: 10 bursts every 1s take 9s, not less than load.burst_timeout 5s"}},
		{"after_burst before a step timed within the burst, repeating, overlapping",
			head + "    load: {messages: 10}\n    faults:\n      - {action: purge-queue, after_burst: 1s}\n      - {action: kill, published: 5}\n" +
				"      - {action: memory-alarm, after_burst: 2s, down: 3s}\n      - {action: close-connections, after_burst: 4s, every: 1s, count: 2}\n",
			[]string{
				"s.yaml:7:9: scenarios[0].faults[1]: comes after faults[0], which fires after the burst: steps run in order, so every later step needs after_burst (or after_start) too",
				"s.yaml:9:50: scenarios[0].faults[3].after_burst: 4s overlaps the previous step, which lasts until 5s after the last publish",
				"s.yaml:9:61: scenarios[0].faults[3].every: an after_burst step cannot repeat: the burst it follows is over",
			}},
		{"after_start first, after a step that leaves the container down, on an action that needs a booted node",
			head + "    load: {messages: 10}\n    faults:\n      - {action: kill, after_start: 1s, down: 1s}\n      - {action: pause, after: 9s, down: 1s}\n" +
				"      - {action: kill, after_start: 1s, down: 1s}\n      - {action: kill, after: 20s, manual_recovery: true}\n      - {action: kill, after_start: 1s}\n" +
				"      - {action: start, after: 40s}\n      - {action: memory-alarm, after_start: 1s, down: 1s}\n",
			[]string{
				"s.yaml:6:37: scenarios[0].faults[0].after_start: the first step has no earlier step that starts the container; use after (since the burst start)",
				"s.yaml:8:37: scenarios[0].faults[2].after_start: faults[1] (pause) does not end by starting the broker's container once: after_start follows start, restart, or a kill or stop recovered after down",
				"s.yaml:10:18: scenarios[0].faults[4].action: kill needs a running broker, but it is stopped here (recover it with start first)",
				"s.yaml:10:37: scenarios[0].faults[4].after_start: faults[3] (kill) does not end by starting the broker's container once: after_start follows start, restart, or a kill or stop recovered after down",
				"s.yaml:12:45: scenarios[0].faults[6].after_start: memory-alarm needs a booted node; a node still booting can only be hit on its container (kill, stop, restart, pause, disconnect)",
			}},
		{"two triggers, negative after_start",
			head + "    load: {messages: 10}\n    faults:\n      - {action: kill, after: 1s, down: 1s}\n      - {action: kill, after_start: -1s, after_burst: 1s}\n",
			[]string{
				"s.yaml:7:9: scenarios[0].faults[1]: needs exactly one trigger (published_percent, published, in_flight, after, after_burst or after_start), got 2",
				"s.yaml:7:37: scenarios[0].faults[1].after_start: must not be negative",
			}},
		{"delete-queue with live consumers or companions, purge-queue with down, disk-alarm left for a later step",
			head + "    load: {messages: 10}\n    consumers: {count: 1}\n    faults: [{action: delete-queue, published: 5}]\n" +
				"  - name: b\n    load: {messages: 10}\n    queue: {dead_letter_queue: true}\n    faults: [{action: delete-queue, published: 5}, {action: purge-queue, published: 6, down: 1s}]\n" +
				"  - name: c\n    load: {messages: 10}\n    faults: [{action: disk-alarm, after: 1s, manual_recovery: true}, {action: start, after: 5s}]\n",
			[]string{
				"s.yaml:6:23: scenarios[0].faults[0].action: delete-queue cancels live consumers' subscriptions (basic.cancel) and they do not subscribe again: use purge-queue, or no consumers",
				"s.yaml:10:23: scenarios[1].faults[0].action: delete-queue re-declares only the queue under test: it cannot be combined with queue.also_bind_type or queue.dead_letter_queue",
				"s.yaml:10:94: scenarios[1].faults[1].down: purge-queue has nothing to recover; down applies to " + downActions(1),
				"s.yaml:13:63: scenarios[2].faults[0].manual_recovery: only kill, power-loss, stop, pause, disconnect can be recovered by a later step",
				"s.yaml:13:79: scenarios[2].faults[1].action: start needs a broker left stopped by an earlier step with manual_recovery, but it is up here",
			}},
	}
	expectParseErrors(t, tests)
}

// The new actions and triggers are accepted where they make sense, with
// their defaults, and describe themselves for reports.
func TestParseNewFaults(t *testing.T) {
	f, err := Parse("s.yaml", []byte(head+
		"    load:\n      messages: 5000\n      burst: {messages: 500, every: 1s}\n"+
		"    faults:\n      - {action: kill, published_percent: 50, down: 3s}\n      - {action: kill, signal: SIGTERM, after_start: 1s, down: 2s}\n"+
		"      - {action: purge-queue, after_burst: 1s}\n      - {action: disk-alarm, after_burst: 2s}\n      - {action: delete-queue, after_burst: 8s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := f.Scenarios[0]
	if s.Load.Bursts() != 10 || s.Load.BurstSpan() != 9*time.Second {
		t.Errorf("bursts %d over %s", s.Load.Bursts(), s.Load.BurstSpan())
	}
	if s.Faults[3].Down.D() != 5*time.Second || s.Faults[4].Down.D() != 5*time.Second || s.Faults[2].Down != 0 {
		t.Errorf("down defaults: disk-alarm %s, delete-queue %s, purge-queue %s", s.Faults[3].Down.D(), s.Faults[4].Down.D(), s.Faults[2].Down.D())
	}
	for i, want := range []string{"50% published", "1s after the container started", "1s after the last publish", "2s after the last publish", "8s after the last publish"} {
		if got := s.Faults[i].Trigger(); got != want {
			t.Errorf("faults[%d] trigger %q, want %q", i, got, want)
		}
	}
	if !s.Faults[0].StartsContainer() || s.Faults[2].StartsContainer() || !(Fault{Action: Start}).StartsContainer() ||
		(Fault{Action: Kill, ManualRecovery: true}).StartsContainer() {
		t.Error("StartsContainer")
	}
	if !DeleteQueue.RemovesMessages() || !PurgeQueue.RemovesMessages() || Kill.RemovesMessages() ||
		!Stop.ActsOnContainer() || DiskAlarm.ActsOnContainer() || DeleteQueue.ActsOnContainer() {
		t.Error("RemovesMessages / ActsOnContainer")
	}
	if (Load{Messages: 1001, Burst: &Burst{Messages: 500, Every: Duration(time.Second)}}).Bursts() != 3 || (Load{Messages: 5}).Bursts() != 0 {
		t.Error("the last burst holds what is left")
	}
}
