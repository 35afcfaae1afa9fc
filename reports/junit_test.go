package reports

import (
	"bytes"
	"encoding/xml"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jstemmer/go-junit-report/v2/junit"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// A run with a mode that lost confirmed messages, one that passed and one
// never run: a testcase per mode and check of the judge's table, the
// loss a <failure> of the "lost" check, the mode never run an <error> of
// its "verdict" testcase, and nothing said twice.
func TestJUnit(t *testing.T) {
	lost := metrics.Counts{Sent: 100, Confirmed: 100, Delivered: 97, Lost: 3}
	clean := metrics.Counts{Sent: 100, Confirmed: 100, Delivered: 100}
	judged := func(m scenario.Mode, c metrics.Counts) scenario.ModeResult {
		r := scenario.ModeResult{Mode: m, Counts: c}
		r.Checks = scenario.JudgeChecks(m, c, scenario.Observed{}, scenario.Expect{}, scenario.Conditions{})
		r.Verdict = scenario.VerdictOf(r.Checks)
		return r
	}
	notRun := scenario.ModeResult{Mode: scenario.FireAndForget, NotRun: true,
		Verdict: scenario.Verdict{Status: scenario.Inconclusive, Reasons: []string{"not run: the broker was gone"}}}
	r := &scenario.Result{Scenario: "kill-mid-burst", BrokerVersion: "4.0.5", DurationMS: 12345,
		StartedAt: time.Date(2026, 12, 5, 4, 0, 0, 0, time.UTC),
		Modes:     []scenario.ModeResult{judged(scenario.ConfirmWindow, lost), judged(scenario.ConfirmEach, clean), notRun}}
	r.Verdict = scenario.Overall(r.Modes)

	var buf bytes.Buffer
	if err := JUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	var doc junit.Testsuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	checks := len(scenario.JudgeChecks(scenario.ConfirmEach, clean, scenario.Observed{}, scenario.Expect{}, scenario.Conditions{}))
	if len(doc.Suites) != 1 {
		t.Fatalf("%d suites, want 1\n%s", len(doc.Suites), buf.String())
	}
	s := doc.Suites[0]
	// Two judged modes, a testcase per check each; the mode never run
	// one; the scenario's reasons are all some mode's, so no more.
	if want := 2*checks + 1; s.Name != "kill-mid-burst on 4.0.5" || s.Time != "12.345" || s.Timestamp != "2026-12-05T04:00:00Z" ||
		s.Tests != want || s.Failures != 1 || s.Errors != 1 || len(s.Testcases) != want || doc.Tests != want || doc.Failures != 1 || doc.Errors != 1 {
		t.Fatalf("suite %q time %s at %s: %d tests (%d failures, %d errors), %d testcases; totals %d/%d/%d; want %d tests, 1 failure, 1 error\n%s",
			s.Name, s.Time, s.Timestamp, s.Tests, s.Failures, s.Errors, len(s.Testcases), doc.Tests, doc.Failures, doc.Errors, want, buf.String())
	}
	var failed, errored []string
	for _, tc := range s.Testcases {
		if tc.Failure != nil {
			failed = append(failed, tc.Classname+" "+tc.Name+": "+tc.Failure.Message)
		}
		if tc.Error != nil {
			errored = append(errored, tc.Classname+" "+tc.Name+": "+tc.Error.Message)
		}
	}
	if want := "rmqtorture.kill-mid-burst.confirm-window lost: 3 confirmed messages lost: basic.ack received, never delivered"; len(failed) != 1 || failed[0] != want {
		t.Errorf("failures %q, want [%q]", failed, want)
	}
	if want := "rmqtorture.kill-mid-burst.fire-and-forget verdict: not run: the broker was gone"; len(errored) != 1 || errored[0] != want {
		t.Errorf("errors %q, want [%q]", errored, want)
	}
	if path, err := exec.LookPath("xmllint"); err == nil {
		cmd := exec.Command(path, "--noout", "-")
		cmd.Stdin = bytes.NewReader(buf.Bytes())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("xmllint: %v\n%s", err, out)
		}
	}
}

// A scenario whose broker never answered has no mode: its verdict is one
// testcase, an error with the scenario's reason.
func TestJUnitNoMode(t *testing.T) {
	r := &scenario.Result{Scenario: "kill-mid-burst", Image: "rabbitmq:4.0-management",
		Verdict: scenario.Verdict{Status: scenario.Inconclusive, Reasons: []string{"the broker never accepted a login within 60s"}}}
	var buf bytes.Buffer
	if err := JUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		`<testsuite name="kill-mid-burst on rabbitmq:4.0-management" tests="1" failures="0" errors="1"`,
		`<testcase name="verdict" classname="rmqtorture.kill-mid-burst">`,
		`<error message="the broker never accepted a login within 60s" type="inconclusive">`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %s in\n%s", want, out)
		}
	}
}
