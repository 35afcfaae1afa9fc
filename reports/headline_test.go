package reports

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// fixtures are every result the golden tests render.
func fixtures(t *testing.T) map[string]*scenario.Result {
	real, _ := realFixture(t)
	return map[string]*scenario.Result{
		"kill-mid-burst": real,
		"full":           fullResult(),
		"matrix":         matrixResult(),
		"deadline":       deadlineResult(),
		"tx":             txResult(),
		"deadletter":     deadLetterResult(),
	}
}

// TestHeadlineGolden pins the headline and the default terminal output
// (headline and compact table) of every fixture.
func TestHeadlineGolden(t *testing.T) {
	for name, r := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			golden(t, name+".headline.golden", render(t, Headline, r))
			golden(t, name+".summary.golden", render(t, Summary, r))
		})
	}
}

// TestSummaryFitsWidth: every line of the default output is at most 100
// display columns on every fixture (and on issue 12's run).
func TestSummaryFitsWidth(t *testing.T) {
	all := fixtures(t)
	all["issue"] = issueResult()
	for name, r := range all {
		out := render(t, Summary, r)
		for i, l := range strings.Split(string(out), "\n") {
			if n := twwidth.Width(l); n > 100 {
				t.Errorf("%s: line %d is %d columns: %q", name, i+1, n, l)
			}
		}
	}
}

func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		part, whole float64
		want        string
	}{
		{19599, 20000, "98%"}, {479, 129172, "0.4%"}, {13907, 129172, "11%"}, {3519, 4000, "88%"},
		{251, 7262, "3.5%"}, {1, 20000, "<0.1%"}, {19999, 20000, ">99%"}, {20000, 20000, "100%"},
		{0, 20000, "0.0%"}, {5, 0, "-"}, {99, 1000, "9.9%"}, {100, 1000, "10%"},
	} {
		if got := percent(tc.part, tc.whole); got != tc.want {
			t.Errorf("percent(%v, %v) = %q, want %q", tc.part, tc.whole, got, tc.want)
		}
	}
}

// issueResult is the run issue 12 describes: fire-and-forget lost 19,599
// of 20,000 orders; 129,172 / 479 / 13,907 msg/s before the kill.
func issueResult() *scenario.Result {
	return &scenario.Result{
		Scenario: "kill-mid-burst", BrokerVersion: "4.0.5", Messages: 20000, Topology: "quorum, durable",
		Modes: []scenario.ModeResult{
			{Mode: scenario.FireAndForget, Counts: metrics.Counts{Sent: 20000, UnconfirmedDelivered: 401, UnconfirmedMissing: 19599, Delivered: 401},
				PreFaultPublishRate: 129172, Verdict: scenario.Verdict{Status: scenario.Pass},
				Faults: []scenario.FaultRecord{{Action: scenario.Kill, Signal: "SIGKILL", Trigger: "50% published"}}},
			{Mode: scenario.ConfirmEach, Window: 1, Counts: metrics.Counts{Sent: 20000, Confirmed: 20000, Delivered: 20000, Duplicates: 1, DuplicatesFromRepublish: 1},
				PreFaultPublishRate: 479, ConfirmLatency: metrics.LatencySummary{Count: 20000, P99: 17.14}, Verdict: scenario.Verdict{Status: scenario.Pass}},
			{Mode: scenario.ConfirmWindow, Window: 1000, Counts: metrics.Counts{Sent: 20000, Confirmed: 19990, InDoubt: 10, Delivered: 20000},
				PreFaultPublishRate: 13907, ConfirmLatency: metrics.LatencySummary{Count: 19990, P99: 733.4}, Verdict: scenario.Verdict{Status: scenario.Pass}},
		},
		Verdict: scenario.Verdict{Status: scenario.Pass},
	}
}

// The cost figure is what the broker took in (ModeResult.IntakeRate), its
// share of the fastest mode's derived from it, not the publish calls'
// rate; a mode that cannot tell says so on its line and why below the
// legend, and the table shows "?".
func TestHeadlineIntake(t *testing.T) {
	r := issueResult()
	r.Modes[0].IntakeRate = 4727 // the socket-write rate beside it: 129,172
	r.Modes[1].IntakeRate = 473.5
	r.Modes[2].IntakeUnknown = "the window of 1,000 never filled and drained before the fault: 1,500 basic.acks (at least 2,000 are needed)"
	got := string(render(t, Headline, r))
	for _, want := range []string{
		"fire-and-forget  401/20,000 delivered, 19,599 missing (98%), 0 duplicates; 4,727 msg/s (100%)\n",
		"confirm-each     20,000/20,000 delivered, 0 lost, 1 duplicate; 474 msg/s (10%), p99 17.1 ms\n",
		"confirm-window   20,000/20,000 delivered, 0 lost, 10 in doubt, 0 duplicates;\n                 msg/s: cannot tell, p99 733 ms\n",
		"(msg/s: what the broker took in before the first fault, in basic.acks (fire-and-forget: messages\n  into the queue), as % of the fastest mode's; p99: confirm latency)\n" +
			"confirm-window: cannot tell its msg/s: the window of 1,000 never filled and drained before the\n  fault: 1,500 basic.acks (at least 2,000 are needed)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("headline lacks %q:\n%s", want, got)
		}
	}
	table := string(render(t, Summary, r))
	if !regexp.MustCompile(`(?m)^ confirm-window .* \? +733 +pass$`).MatchString(table) {
		t.Errorf("the table does not show ? for confirm-window's msg/s:\n%s", table)
	}
}

// TestHeadlineFigures checks the derived figures: the rate as a share of
// the fastest mode's, the missing share of sent, the p99.
func TestHeadlineFigures(t *testing.T) {
	got := string(render(t, Headline, issueResult()))
	want := `kill-mid-burst: 20,000 orders per mode; quorum, durable; 4.0.5
fire-and-forget  401/20,000 delivered, 19,599 missing (98%), 0 duplicates; 129,172 msg/s (100%)
confirm-each     20,000/20,000 delivered, 0 lost, 1 duplicate; 479 msg/s (0.4%), p99 17.1 ms
confirm-window   20,000/20,000 delivered, 0 lost, 10 in doubt, 0 duplicates;
                 13,907 msg/s (11%), p99 733 ms
(msg/s: publish rate before the first fault, as % of the fastest mode's; p99: confirm latency)
warning: fire-and-forget: 19,599 of 20,000 orders (98%) missing: published without an error, never
  delivered (--fail-on-missing fails the run on it)
verdict: PASS: the broker broke no promise and every expectation held; but fire-and-forget: 98%
  missing without an error
`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// A failed verdict names its reasons and drops the hint.
	r := issueResult()
	r.Modes[0].Verdict = scenario.Verdict{Status: scenario.Fail, Reasons: []string{"19599 orders missing"}}
	r.Verdict = scenario.Overall(r.Modes)
	got = string(render(t, Headline, r))
	if !strings.Contains(got, "never\n  delivered\nverdict: FAIL\n  - fire-and-forget: 19599 orders missing\n") {
		t.Fatalf("failed verdict:\n%s", got)
	}
}

// TestHeadlineIntendedLatency: with --rate the p99 is timed from each
// order's intended send time (confirmP99), so the legend says so; a
// reader would otherwise take 42 s behind the schedule for 42 s of
// broker confirm time.
func TestHeadlineIntendedLatency(t *testing.T) {
	r := issueResult()
	r.Modes[1].ConfirmLatencyIntended = &metrics.LatencySummary{Count: 20000, P99: 42467.3}
	got := string(render(t, Headline, r))
	for _, want := range []string{
		"479 msg/s (0.4%), p99 42,467 ms\n",
		"\n(msg/s: publish rate before the first fault, as % of the fastest mode's; p99: confirm latency from\n  each order's intended send time on the rate schedule)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("headline lacks %q:\n%s", want, got)
		}
	}
	// Without a rate schedule the legend stays short.
	if got := string(render(t, Headline, issueResult())); strings.Contains(got, "intended") {
		t.Errorf("no rate, yet the legend speaks of intended send times:\n%s", got)
	}
}

// TestHeadlineRepeats: a matrix cell says in how many of its runs each
// loss happened, and sums its counts.
func TestHeadlineRepeats(t *testing.T) {
	cell := func(mode scenario.Mode, repeat, lost, missing int, rate, p99 float64) scenario.ModeResult {
		m := scenario.ModeResult{Mode: mode, Cell: &scenario.Cell{QueueType: scenario.Quorum, Persistent: true, Repeat: repeat},
			Counts:              metrics.Counts{Sent: 2000, Confirmed: 2000 - lost, Lost: lost, UnconfirmedMissing: missing, Delivered: 2000 - lost - missing},
			PreFaultPublishRate: rate, Verdict: scenario.Verdict{Status: scenario.Pass}}
		if mode.ConfirmMode() {
			m.ConfirmLatency = metrics.LatencySummary{Count: 100, P99: p99}
		} else {
			m.Confirmed = 0
		}
		return m
	}
	r := &scenario.Result{Scenario: "repeat", Image: "rabbitmq:4", Messages: 2000, Topology: "matrix: quorum × persistent",
		Modes: []scenario.ModeResult{
			cell(scenario.FireAndForget, 1, 0, 2000, 30000, 0), cell(scenario.ConfirmWindow, 1, 0, 0, 3000, 10),
			cell(scenario.FireAndForget, 2, 0, 0, 20000, 0), cell(scenario.ConfirmWindow, 2, 7, 0, 1000, 30),
			cell(scenario.FireAndForget, 3, 0, 1, 10000, 0), cell(scenario.ConfirmWindow, 3, 0, 0, 2000, 20),
		}}
	r.Verdict = scenario.Overall(r.Modes)
	got := string(render(t, Headline, r))
	for _, want := range []string{
		"fire-and-forget · quorum · persistent, 3 runs:\n  3,999/6,000 delivered, 2,001 missing in 2 of 3 runs (33%), 0 duplicates; 20,000 msg/s (100%)\n",
		"confirm-window · quorum · persistent, 3 runs:\n  5,993/6,000 delivered, 7 lost in 1 of 3 runs, 0 duplicates; 2,000 msg/s (10%), p99 20.0 ms\n",
		"warning: fire-and-forget · quorum · persistent: orders missing in 2 of 3 runs (2,001 of 6,000, 33%):\n  published without an error, never delivered",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}

// TestSummaryNoModeRan: a run whose broker never came up has a headline
// (the error and the verdict) and no table.
func TestSummaryNoModeRan(t *testing.T) {
	r := &scenario.Result{Scenario: "kill-mid-burst", Image: "rabbitmq:4", Messages: 2000, Topology: "quorum, durable",
		Error:   "broker: no AMQP login within 60s",
		Verdict: scenario.Overall(nil)}
	want := `kill-mid-burst: 2,000 orders per mode; quorum, durable; rabbitmq:4
error: broker: no AMQP login within 60s
verdict: INCONCLUSIVE
  - no mode ran
`
	if got := string(render(t, Summary, r)); got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}

// TestReadmeShowsSummary: README's "How to read the answer" and the Output
// section of docs/commands.md show the default output of the stored
// kill-mid-burst result as it is rendered today.
func TestReadmeShowsSummary(t *testing.T) {
	real, _ := realFixture(t)
	got := render(t, Summary, real)
	for _, path := range []string{"../README.md", "../docs/commands.md"} {
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), "```\n"+string(got)+"```\n") {
			t.Errorf("%s differs from the summary of reports/testdata/kill-mid-burst.result.json: paste reports/testdata/kill-mid-burst.summary.golden into it", path[3:])
		}
	}
}

// TestHeadlineLoadPart: a split run's load part says which ids it holds,
// and its pass is its share done, not the run's verdict (check's); the
// drain says whose ids it drained.
func TestHeadlineLoadPart(t *testing.T) {
	r := issueResult()
	r.LoadPart = &metrics.Part{RunID: "nightly-42", Index: 2, Parts: 4, First: 5000, End: 10000}
	got := string(render(t, Headline, r))
	for _, want := range []string{
		"kill-mid-burst: part 2/4 of split run nightly-42, ids 5,000–9,999 of 20,000 orders per mode; quorum,\n",
		"verdict: PASS: part 2/4 did its share; the run's verdict is `rmqtorture check`'s\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("load part's headline lacks %q:\n%s", want, got)
		}
	}
	r.LoadPart = &metrics.Part{RunID: "nightly-42", Parts: 4, Drain: true}
	got = string(render(t, Headline, r))
	if want := "kill-mid-burst: drain of split run nightly-42 (4 load parts of 20,000 orders per mode); quorum,"; !strings.Contains(got, want) {
		t.Errorf("drain's headline lacks %q:\n%s", want, got)
	}
}

// The headline says what each mode's first fault found under way.
func TestLanding(t *testing.T) {
	n := 312
	m := scenario.ModeResult{Faults: []scenario.FaultRecord{{Action: scenario.Kill, PublishedAtInject: 2400, InFlightAtInject: &n}}}
	if got := landing(scenario.ConfirmWindow, m, 6000); got != "kill landed with 312 in flight, 3,600 to publish" {
		t.Errorf("confirm-window: %q", got)
	}
	if got := landing(scenario.FireAndForget, m, 6000); got != "kill landed with 3,600 to publish" {
		t.Errorf("fire-and-forget: %q", got)
	}
	m.Faults[0].InFlightAtInject = nil // written before it was recorded
	if got := landing(scenario.ConfirmWindow, m, 6000); got != "" {
		t.Errorf("old result: %q", got)
	}
}

// A mode whose cluster was still partitioned when the drain began says so
// in the default output, naming who sees whom; one that was whole says
// nothing of partitions.
func TestSummaryNamesAPartitionAtDrain(t *testing.T) {
	r := fullResult()
	r.Modes[1].PartitionedAtDrain = map[string][]string{"rabbit@rmq1": {"rabbit@rmq2", "rabbit@rmq3"}, "rabbit@rmq2": {"rabbit@rmq1"}}
	flat := strings.Join(strings.Fields(string(render(t, Summary, r))), " ")
	want := "partition: " + string(r.Modes[1].Mode) + ": the cluster was still partitioned when the drain began (rabbit@rmq1 sees rabbit@rmq2, rabbit@rmq3 partitioned; " +
		"rabbit@rmq2 sees rabbit@rmq1 partitioned); RabbitMQ's default partition handling keeps the sides apart until a node restarts (rabbitmq-server#17319)"
	if !strings.Contains(flat, want) || strings.Count(flat, "partition: ") != 1 {
		t.Fatalf("summary lacks %q once:\n%s", want, flat)
	}
	for i, l := range strings.Split(string(render(t, Summary, r)), "\n") {
		if n := twwidth.Width(l); n > 100 {
			t.Errorf("line %d is %d columns: %q", i+1, n, l)
		}
	}
}
