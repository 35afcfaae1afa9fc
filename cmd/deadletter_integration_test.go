package cmd

// Queues that discard or divert messages by design, on the real broker:
// loss on the dead-letter path is counted apart from plain loss, a by-design
// drop is allowed with its reason named, and dead-lettered ids are shown
// wherever a dead-letter queue exists. Each test runs a shipped scenario
// (scenarios.yaml) whose verdict checks its exact expectations, and checks
// what the ids say beyond that.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/reports"
	"github.com/rmqtorture/rmqtorture/scenario"
	"github.com/rmqtorture/rmqtorture/verdict"
)

// runScenarioDir is runScenario that also returns the run folder.
func runScenarioDir(t *testing.T, name string) (*scenario.Result, string) {
	t.Helper()
	out := t.TempDir()
	r := runScenario(t, name, "--out", out)
	dirs, err := filepath.Glob(filepath.Join(out, name+"-*"))
	if err != nil || len(dirs) != 1 {
		t.Fatalf("run folders %v (%v)", dirs, err)
	}
	return r, dirs[0]
}

// publishHistory reads a burst's history: each id's latest publish time in
// µs since the history's start, and the trailer.
func publishHistory(t *testing.T, path string) (map[int]int64, historyTrailer) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := metrics.NewHistoryReader(f)
	if err != nil {
		t.Fatal(err)
	}
	pub := map[int]int64{}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Kind == metrics.HPublish {
			pub[rec.Seq] = rec.Time.Sub(r.Header.Start).Microseconds()
		}
	}
	var ev verdict.Trailer
	if err := json.Unmarshal(r.TrailerJSON(), &ev); err != nil {
		t.Fatal(err)
	}
	return pub, historyTrailer{r.Trailer(), ev}
}

// historyTrailer is a history's trailer: the codec's fields and the
// evidence's.
type historyTrailer struct {
	metrics.HistoryTrailer
	verdict.Trailer
}

func renderResult(t *testing.T, f func(io.Writer, *scenario.Result) error, r *scenario.Result) string {
	t.Helper()
	var buf bytes.Buffer
	if err := f(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// A classic queue dead-letters at most once (RabbitMQ's dead-lettering
// guide; rabbitmq-server#12856): ids that expired shortly before a SIGKILL
// are in neither queue afterwards. They are counted as lost on the
// dead-letter path, never as plain loss, and the verdict passes; every id
// so counted meets the rule (its publish call + x-message-ttl is before the
// kill took effect), checked here from the recorded history, and every
// other confirmed id reached the dead-letter queue.
func TestDeadLetterTTLKillCountsLossOnTheWayApart(t *testing.T) {
	r, dir := runScenarioDir(t, "dead-letter-ttl-kill")
	m := mode(t, r, scenario.ConfirmWindow)
	// Measured on RabbitMQ 4.0.5 on a quiet host: runs lose some (2,581
	// of the ids that expired before the kill): the dead-letter queue had
	// not written their copies yet. At most once allows none too: under
	// CPU load a run lost 0, so any number is accepted, and each one
	// counted must meet the rule below.
	t.Logf("lost on the dead-letter path: %d", m.LostDeadLetterPath)
	if m.Lost != 0 || m.Confirmed+m.LostDeadLetterPath != m.Sent {
		t.Fatalf("lost %d, lost on the dead-letter path %d, confirmed %d of %d", m.Lost, m.LostDeadLetterPath, m.Confirmed, m.Sent)
	}
	if !m.DeadLetterLossAllowed || !strings.Contains(m.DeadLetterGuarantee, "classic queues dead-letter at most once") {
		t.Fatalf("allowed %v, guarantee %q", m.DeadLetterLossAllowed, m.DeadLetterGuarantee)
	}
	// x-message-ttl (1 s) is shorter than the drain's idle wait (2 s):
	// every surviving id expired into the dead-letter queue.
	if m.DeadLettered != m.Confirmed || m.Delivered != m.Confirmed || m.Duplicates != m.DuplicatesFromRepublish {
		t.Fatalf("dead-lettered %d, delivered %d, confirmed %d, duplicates %d (%d from republish)", m.DeadLettered, m.Delivered, m.Confirmed, m.Duplicates, m.DuplicatesFromRepublish)
	}
	pub, tr := publishHistory(t, filepath.Join(dir, m.History))
	rule := tr.DeadLetterRule
	if rule == nil || rule.AfterPublishUS != 1_000_000 || len(rule.DownUS) != 1 || !tr.DeadLetterLossAllowed {
		t.Fatalf("history trailer: rule %+v allowed %v", rule, tr.DeadLetterLossAllowed)
	}
	for _, seq := range ids(m.IDs.LostDeadLetterPath) {
		if p, ok := pub[seq]; !ok || p+rule.AfterPublishUS >= rule.DownUS[0] {
			t.Fatalf("id %d counted as lost on the dead-letter path, published at %d µs + TTL, broker down at %d µs", seq, p, rule.DownUS[0])
		}
	}
	if m.LostDeadLetterPath == 0 {
		return // nothing lost on the way: no note and no column to check
	}
	var note string
	for _, n := range m.Notes {
		if strings.HasPrefix(n, "dead-letter path (x-message-ttl 1000 ms into "+m.DeadLetterQueue+")") {
			note = n
		}
	}
	if !strings.Contains(note, fmt.Sprintf("%d confirmed messages lost on it (allowed: classic queues", m.LostDeadLetterPath)) || !strings.Contains(note, "Rule: ") {
		t.Fatalf("notes %q", m.Notes)
	}
	table := renderResult(t, reports.Table, r)
	if !strings.Contains(table, fmt.Sprintf("%s (allowed)", num(m.LostDeadLetterPath))) {
		t.Fatalf("table does not show the loss on the dead-letter path:\n%s", table)
	}
}

// The counter-case: a quorum queue with at-least-once dead-lettering
// (x-dead-letter-strategy at-least-once, x-overflow reject-publish) loses
// nothing on the way across the same kill, and a loss there would fail:
// the rule is armed (one kill in the history's trailer) and not allowed.
func TestDeadLetterAtLeastOnceLosesNothingOnTheWay(t *testing.T) {
	r, dir := runScenarioDir(t, "dead-letter-ttl-kill-at-least-once")
	m := mode(t, r, scenario.ConfirmWindow)
	if m.DeadLetterLossAllowed || !strings.Contains(m.DeadLetterGuarantee, "dead-letters at least once") {
		t.Fatalf("allowed %v, guarantee %q", m.DeadLetterLossAllowed, m.DeadLetterGuarantee)
	}
	// The kill lands mid-burst by the rate schedule (1.5 s into 5 s).
	// Whether anything goes in doubt depends on how many basic.acks reach
	// the client before the process dies (under load a kill call took
	// 207 ms and every unconfirmed order was acked first): not asserted.
	if len(m.Faults) != 1 || m.Faults[0].Action != scenario.Kill || m.Faults[0].Error != "" || m.Faults[0].PublishedAtInject >= m.Sent {
		t.Fatalf("faults %+v: want one kill mid-burst", m.Faults)
	}
	_, tr := publishHistory(t, filepath.Join(dir, m.History))
	if tr.DeadLetterRule == nil || len(tr.DeadLetterRule.DownUS) != 1 || tr.DeadLetterLossAllowed {
		t.Fatalf("history trailer: rule %+v allowed %v", tr.DeadLetterRule, tr.DeadLetterLossAllowed)
	}
}

// Quorum queues fall back to drop-head for x-overflow reject-publish-dlx
// (rabbitmq-server PR #16673): without a dead-letter queue the 1,500
// oldest are dropped after their basic.ack, a drop by design allowed as
// drop-head; with one they are dead-lettered, and nothing is nacked. Both
// runs warn that the setting does not do what its name says.
func TestQuorumRejectPublishDLXFallsBackToDropHead(t *testing.T) {
	head := []metrics.Range{{First: 0, Last: 1499}}
	r := runScenario(t, "quorum-reject-publish-dlx")
	m := mode(t, r, scenario.ConfirmWindow)
	if !reflect.DeepEqual(m.IDs.Lost, head) || !m.LostAllowed || m.LostAllowedReason != "drop-head" {
		t.Fatalf("lost %v allowed %v (%q)", m.IDs.Lost, m.LostAllowed, m.LostAllowedReason)
	}
	checkDropHeadWarningAndNote(t, r, m, "0 nacked, 0 dead-lettered, 1500 confirmed lost")
	if table := renderResult(t, reports.Table, r); !strings.Contains(table, "1,500 (allowed: drop-head)") {
		t.Fatalf("table:\n%s", table)
	}

	r = runScenario(t, "quorum-reject-publish-dlx-dlq")
	m = mode(t, r, scenario.ConfirmWindow)
	if !reflect.DeepEqual(m.IDs.DeadLettered, head) || m.DeadLetteredNacked != 0 || m.LostAllowed {
		t.Fatalf("dead-lettered %v (%d nacked), lost allowed %v", m.IDs.DeadLettered, m.DeadLetteredNacked, m.LostAllowed)
	}
	checkDropHeadWarningAndNote(t, r, m, "0 nacked, 1500 dead-lettered, 0 confirmed lost")
}

func checkDropHeadWarningAndNote(t *testing.T, r *scenario.Result, m scenario.ModeResult, here string) {
	t.Helper()
	warning := "queue.arguments.x-overflow: reject-publish-dlx on a quorum queue acts as drop-head on " + r.BrokerVersion + ": "
	if len(r.Warnings) != 1 || !strings.HasPrefix(r.Warnings[0], warning) || !strings.Contains(r.Warnings[0], "rabbitmq-server PR #16673") {
		t.Fatalf("warnings %q, want one starting %q", r.Warnings, warning)
	}
	if !slices.ContainsFunc(m.Notes, func(n string) bool {
		return strings.HasPrefix(n, "x-overflow reject-publish-dlx acted as drop-head on this quorum queue") && strings.HasSuffix(n, "Here: "+here)
	}) {
		t.Fatalf("notes %q, want one ending %q", m.Notes, here)
	}
}

// x-overflow reject-publish-dlx on a classic queue with a dead-letter queue
// and no consumers: the ledger and the report show the 1,500 dead-lettered
// ids, that they are exactly the nacked ones, and where they ended up.
func TestClassicRejectPublishDLXShowsDeadLettered(t *testing.T) {
	r := runScenario(t, "classic-reject-publish-dlx-dlq")
	m := mode(t, r, scenario.ConfirmWindow)
	overflow := []metrics.Range{{First: 500, Last: 1999}}
	if !reflect.DeepEqual(m.IDs.Nacked, overflow) || !reflect.DeepEqual(m.IDs.DeadLettered, overflow) || m.DeadLetteredNacked != 1500 || m.Consumers != nil {
		t.Fatalf("nacked %v, dead-lettered %v (%d nacked), consumers %+v", m.IDs.Nacked, m.IDs.DeadLettered, m.DeadLetteredNacked, m.Consumers)
	}
	if table := renderResult(t, reports.Table, r); !strings.Contains(table, "dead-lettered") || !strings.Contains(table, "1,500 (1,500 nacked)") {
		t.Fatalf("table:\n%s", table)
	}
	md := renderResult(t, reports.Markdown, r)
	want := fmt.Sprintf("Dead-lettered: 1,500 of the 2,000 delivered ids were found in the dead-letter queue `%s`; 1,500 of them were basic.nack'd", m.DeadLetterQueue)
	if m.DeadLetterQueue == "" || !strings.Contains(md, want) || !strings.Contains(md, "Dead-lettered (found in the dead-letter queue): 1,500 ids (sequence numbers): 500-1999") {
		t.Fatalf("report.md lacks %q:\n%s", want, md)
	}
}

// The allowed-loss label names the real reason: TTL for a queue whose
// messages expire (every one, with x-message-ttl 0), a non-durable queue
// for one that is gone after a restart; never "transient" for persistent
// messages.
func TestAllowedLossNamesItsReason(t *testing.T) {
	r := runScenario(t, "ttl-discards")
	m := mode(t, r, scenario.ConfirmWindow)
	if m.LostAllowedReason != "TTL" || !reflect.DeepEqual(m.IDs.Lost, []metrics.Range{{First: 0, Last: 4999}}) {
		t.Fatalf("reason %q, lost %v", m.LostAllowedReason, m.IDs.Lost)
	}
	checkAllowedLabel(t, r, "5,000 (allowed: TTL)", "as allowed (TTL): x-message-ttl 0 ms")

	r = runScenario(t, "non-durable-queue-kill")
	m = mode(t, r, scenario.ConfirmWindow)
	// Every id acked before the kill was in the queue and is gone with it;
	// after the restart the queue no longer exists, so every later publish
	// (the republished in-doubt ones included) comes back unroutable.
	if m.LostAllowedReason != "non-durable queue" || m.Lost == 0 || m.Lost+m.Returned != m.Sent ||
		!reflect.DeepEqual(m.IDs.Lost, []metrics.Range{{First: 0, Last: m.Lost - 1}}) || !reflect.DeepEqual(m.IDs.Returned, []metrics.Range{{First: m.Lost, Last: m.Sent - 1}}) {
		t.Fatalf("reason %q, lost %d %v, returned %d %v", m.LostAllowedReason, m.Lost, m.IDs.Lost, m.Returned, m.IDs.Returned)
	}
	checkAllowedLabel(t, r, num(m.Lost)+" (allowed: non-durable queue)", "as allowed (non-durable queue): a non-durable classic queue is gone after a broker restart")
}

func checkAllowedLabel(t *testing.T, r *scenario.Result, cell, note string) {
	t.Helper()
	table, md := renderResult(t, reports.Table, r), renderResult(t, reports.Markdown, r)
	if !strings.Contains(table, cell) || !strings.Contains(md, cell) || strings.Contains(table+md, "transient: allowed") || strings.Contains(table+md, "allowed: transient") {
		t.Fatalf("want %q, never \"transient\":\n%s", cell, table)
	}
	if m := r.Modes[0]; !slices.ContainsFunc(m.Notes, func(n string) bool { return strings.Contains(n, note) }) {
		t.Fatalf("notes %q lack %q", m.Notes, note)
	}
}
