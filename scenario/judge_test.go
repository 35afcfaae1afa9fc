package scenario

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/metrics"
)

func intp(v int) *int { return &v }

func TestJudge(t *testing.T) {
	tests := []struct {
		name   string
		counts metrics.Counts
		expect Expect
		cond   Conditions
		want   Verdict
	}{
		{"clean confirm run passes", metrics.Counts{Sent: 10, Confirmed: 10}, Expect{}, Conditions{}, Verdict{Status: Pass}},
		{"fire-and-forget loss is reported, not failed, without an expectation",
			metrics.Counts{Sent: 10, UnconfirmedDelivered: 4, UnconfirmedMissing: 6}, Expect{}, Conditions{}, Verdict{Status: Pass}},
		{"fire-and-forget loss fails against an expectation",
			metrics.Counts{Sent: 10, UnconfirmedMissing: 6}, Expect{MaxUnconfirmedMissing: intp(5)}, Conditions{},
			Verdict{Fail, []string{"6 of 10 orders missing: published without an error, never delivered; expect.max_unconfirmed_missing allows 5"}}},
		{"fire-and-forget loss fails under --fail-on-missing, which sets the limit to 0",
			metrics.Counts{Sent: 20000, UnconfirmedDelivered: 401, UnconfirmedMissing: 19599}, Expect{MaxUnconfirmedMissing: intp(0)}, Conditions{},
			Verdict{Fail, []string{"19,599 of 20,000 orders missing: published without an error, never delivered; expect.max_unconfirmed_missing (or --fail-on-missing) allows 0"}}},
		{"a lost confirmed message always fails",
			metrics.Counts{Sent: 10, Confirmed: 9, Lost: 1}, Expect{}, Conditions{},
			Verdict{Fail, []string{"1 confirmed messages lost: basic.ack received, never delivered"}}},
		{"unexpected deliveries fail",
			metrics.Counts{Sent: 1, Confirmed: 1, Unexpected: 2}, Expect{}, Conditions{},
			Verdict{Fail, []string{"2 unexpected deliveries: ids this run never published (stale queue or bug)"}}},
		{"resurrected messages fail, even in a burst cut short, beside the loss the delete explains",
			metrics.Counts{Sent: 10, Confirmed: 4, Lost: 3, Resurrected: 3}, Expect{}, Conditions{Interrupted: true},
			Verdict{Fail, []string{"3 confirmed messages lost: basic.ack received, never delivered",
				"unexpected: 3 messages deleted with the queue by delete-queue were delivered after it was declared again (rabbitmq-server#12366)",
				"interrupted before the burst completed"}}},
		{"broker not back is inconclusive",
			metrics.Counts{Sent: 5, Confirmed: 5}, Expect{}, Conditions{BrokerNotBack: Failure{errors.New("broker not back")}, Unsent: 5},
			Verdict{Inconclusive, []string{"broker not back", "5 orders were never published"}}},
		{"fail outranks inconclusive and keeps both reasons",
			metrics.Counts{Sent: 5, Lost: 5}, Expect{}, Conditions{Interrupted: true},
			Verdict{Fail, []string{"5 confirmed messages lost: basic.ack received, never delivered", "interrupted before the burst completed"}}},
		{"a burst cut short by Ctrl-C: its expectations are not checked, and say so",
			metrics.Counts{Sent: 6200, Confirmed: 6200, WentInDoubt: 0, InDoubt: 3},
			Expect{MaxInDoubt: intp(0), Modes: map[Mode]ModeExpectations{ConfirmWindow: {Confirmed: intp(10000), Lost: intp(0), MinWentInDoubt: intp(1), ChannelClosedWith: "320"}, ConfirmEach: {Confirmed: intp(1)}}},
			Conditions{Interrupted: true, Unsent: 3800},
			Verdict{Inconclusive, []string{`not checked: interrupted: expect.modes.confirm-window confirmed 10000, lost 0, min_went_in_doubt 1, channel_closed_with "320"; expect.max_in_doubt 0`,
				"interrupted before the burst completed", "3,800 orders were never published"}}},
		{"a burst cut short by Ctrl-C still fails a confirmed message lost",
			metrics.Counts{Sent: 6200, Confirmed: 6199, Lost: 1}, Expect{Modes: map[Mode]ModeExpectations{ConfirmWindow: {Confirmed: intp(10000)}}}, Conditions{Interrupted: true},
			Verdict{Fail, []string{"1 confirmed messages lost: basic.ack received, never delivered", "not checked: interrupted: expect.modes.confirm-window confirmed 10000", "interrupted before the burst completed"}}},
		{"a burst cut short by Ctrl-C without expectations names none",
			metrics.Counts{Sent: 6200, Confirmed: 6200}, Expect{}, Conditions{Interrupted: true},
			Verdict{Inconclusive, []string{"interrupted before the burst completed"}}},
		{"exact per-mode expectations",
			metrics.Counts{Sent: 10, Confirmed: 4, Nacked: 6, WentInDoubt: 0},
			Expect{Modes: map[Mode]ModeExpectations{ConfirmWindow: {Confirmed: intp(5), Nacked: intp(6), MinWentInDoubt: intp(1), MinBlockedMS: intp(1), MinUnconfirmedMissing: intp(1), ChannelClosedWith: "320 CONNECTION_FORCED"}, ConfirmEach: {Confirmed: intp(0)}}}, Conditions{},
			Verdict{Fail, []string{"confirmed 4, expected exactly 5", "went_in_doubt 0, expected at least 1: the fault did not leave messages in doubt", "blocked 0 ms, expected at least 1 ms of connection.blocked", "unconfirmed_missing 0, expected at least 1",
				`no channel or connection closed with "320 CONNECTION_FORCED" (closes seen: ["channel closed by broker: 404 NOT_FOUND - no exchange"])`}}},
		{"a close reason that was seen passes",
			metrics.Counts{Sent: 1, Confirmed: 1}, Expect{Modes: map[Mode]ModeExpectations{ConfirmWindow: {ChannelClosedWith: "404 NOT_FOUND"}}}, Conditions{}, Verdict{Status: Pass}},
		{"more ids in doubt than one window per connection fails",
			metrics.Counts{Sent: 10, Confirmed: 10, WentInDoubt: 5, Republished: 5},
			Expect{Modes: map[Mode]ModeExpectations{ConfirmWindow: {MaxWentInDoubt: intp(4), MinWentInDoubt: intp(1)}}}, Conditions{},
			Verdict{Fail, []string{"went_in_doubt 5, expected at most 4"}}},
		{"in doubt at the bound passes",
			metrics.Counts{Sent: 10, Confirmed: 10, WentInDoubt: 4, Republished: 4},
			Expect{Modes: map[Mode]ModeExpectations{ConfirmWindow: {MaxWentInDoubt: intp(4)}}}, Conditions{}, Verdict{Status: Pass}},
		{"limits at their value pass",
			metrics.Counts{Sent: 3, InDoubt: 1, Nacked: 1, Returned: 1, Duplicates: 2}, Expect{MaxInDoubt: intp(1), MaxNacked: intp(1), MaxReturned: intp(1), MaxDuplicates: intp(2)}, Conditions{},
			Verdict{Status: Pass}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Judge(ConfirmWindow, tt.counts, Observed{ChannelCloses: []string{"channel closed by broker: 404 NOT_FOUND - no exchange"}}, tt.expect, tt.cond); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestOverall(t *testing.T) {
	got := Overall([]ModeResult{
		{Mode: FireAndForget, Verdict: Verdict{Status: Pass}},
		{Mode: ConfirmEach, Verdict: Verdict{Inconclusive, []string{"x"}}},
		{Mode: ConfirmWindow, Verdict: Verdict{Fail, []string{"y"}}},
	})
	want := Verdict{Fail, []string{"confirm-each: x", "confirm-window: y"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if Overall(nil).Status != Inconclusive {
		t.Error("no modes must be inconclusive")
	}
}

// Loss on the dead-letter path is its own check: it fails unless the
// queue's dead-lettering allows it, and the reason names the guarantee; an
// exact expectation on it is checked like any count.
func TestJudgeDeadLetterPath(t *testing.T) {
	c := metrics.Counts{Sent: 10, Confirmed: 7, LostDeadLetterPath: 3}
	guarantee := "this quorum queue dead-letters at least once (…)"
	got := Judge(ConfirmWindow, c, Observed{DeadLetterGuarantee: guarantee}, Expect{}, Conditions{})
	want := Verdict{Fail, []string{"3 confirmed messages lost on the dead-letter path: basic.ack received, found in neither the queue nor its dead-letter queue, and they may have been dead-lettered before the broker went down; " + guarantee}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if got := Judge(ConfirmWindow, c, Observed{DeadLetterLossAllowed: true}, Expect{}, Conditions{}); got.Status != Pass {
		t.Fatalf("allowed: %+v", got)
	}
	got = Judge(ConfirmWindow, c, Observed{DeadLetterLossAllowed: true}, Expect{Modes: map[Mode]ModeExpectations{ConfirmWindow: {LostDeadLetterPath: intp(0)}}}, Conditions{})
	if !reflect.DeepEqual(got, Verdict{Fail, []string{"lost_dead_letter_path 3, expected exactly 0"}}) {
		t.Fatalf("exact: %+v", got)
	}
}

// TestJudgeXDeathCountAtPark: the parked copies' x-death count is checked
// exactly, like retries: 3.10.8 counted every death of a republished copy
// (3), 4.x counts only the last (1).
func TestJudgeXDeathCountAtPark(t *testing.T) {
	c := metrics.Counts{Sent: 10, Confirmed: 10, DeadLettered: 10}
	e := Expect{Modes: map[Mode]ModeExpectations{ConfirmWindow: {XDeathCountAtPark: intp(3)}}}
	obs := Observed{Consumers: &ConsumerStats{XDeathCountAtPark: map[string]int{"3": 10}}}
	if got := Judge(ConfirmWindow, c, obs, e, Conditions{}); got.Status != Pass {
		t.Fatalf("3 on every parked copy: %+v", got)
	}
	obs.Consumers.XDeathCountAtPark = map[string]int{"1": 10}
	got := Judge(ConfirmWindow, c, obs, e, Conditions{})
	if got.Status != Fail || len(got.Reasons) != 1 || !strings.HasPrefix(got.Reasons[0], "x_death_count_at_park") {
		t.Fatalf("1 on every parked copy: %+v", got)
	}
	if got := Judge(ConfirmWindow, c, Observed{}, e, Conditions{}); !reflect.DeepEqual(got.Reasons, []string{"x_death_count_at_park: no live consumers measured it"}) {
		t.Fatalf("no consumers: %+v", got)
	}
}

// A failed assertion (assert-whole) fails the burst with its reason, after
// a loss and before an inconclusive condition; none passes.
func TestJudgeAssertions(t *testing.T) {
	failed := []string{"assert-whole (60% published): the cluster is not whole after 5s: the cluster is partitioned: rabbit@rmq1 sees rabbit@rmq2 partitioned"}
	got := Judge(ConfirmWindow, metrics.Counts{Sent: 5, Confirmed: 4, Lost: 1}, Observed{AssertionsFailed: failed}, Expect{}, Conditions{Unsent: 2})
	want := Verdict{Fail, []string{"1 confirmed messages lost: basic.ack received, never delivered", failed[0], "2 orders were never published"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := Judge(ConfirmWindow, metrics.Counts{Sent: 5, Confirmed: 5}, Observed{}, Expect{}, Conditions{}); got.Status != Pass {
		t.Errorf("no assertion failed: got %+v", got)
	}
}

// An unproven power cut makes the burst inconclusive, never a pass; a loss
// beside it still fails.
func TestJudgeUnprovenPowerCut(t *testing.T) {
	why := "power-loss (50% published) on rmqt-a: the unsynced control file was still there after the cut, so it did not behave as a power cut"
	obs := Observed{PowerCutsUnproven: []string{why}}
	v := Judge(ConfirmEach, metrics.Counts{Sent: 10, Confirmed: 10, Delivered: 10}, obs, Expect{}, Conditions{})
	if v.Status != Inconclusive || len(v.Reasons) != 1 || v.Reasons[0] != why {
		t.Errorf("verdict %+v, want inconclusive for %q", v, why)
	}
	v = Judge(ConfirmEach, metrics.Counts{Sent: 10, Confirmed: 10, Delivered: 9, Lost: 1}, obs, Expect{}, Conditions{})
	if v.Status != Fail {
		t.Errorf("verdict %+v with a lost message, want fail", v)
	}
}
