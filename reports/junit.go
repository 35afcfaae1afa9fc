package reports

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/jstemmer/go-junit-report/v2/junit"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// JUnit writes results as a JUnit XML report (docs/ci.md, "JUnit and
// annotations"), the layout CI systems read (Jenkins, GitLab, GitHub
// test-report actions), with go-junit-report's junit package:
//
//   - a <testsuite> per scenario run, "SCENARIO on BROKER" (the broker's
//     version, else its image: the runs of --images differ by it), its
//     time the run's duration in s, its property "verdict" the scenario's;
//   - a <testcase> per mode (or matrix cell) and check of the judge's table
//     (scenario.JudgeChecks: "lost", "mode expectations", …), classname
//     "rmqtorture.SCENARIO.MODE"; a check whose findings fail the mode has
//     a <failure>, one that leaves it inconclusive an <error>, with the
//     findings as message ("; "-joined) and body (one a line);
//   - a testcase "verdict" for what the judge's checks do not say: a mode
//     never judged (not run, interrupted) or whose verdict the run set, and
//     the scenario's own reasons when no mode holds them (the broker never
//     answered).
//
// A check that found nothing passes. Errors are w's.
func JUnit(w io.Writer, results ...*scenario.Result) error {
	var doc junit.Testsuites
	for i, r := range results {
		s := junitSuite(r)
		s.ID = i
		doc.AddSuite(s)
	}
	return doc.WriteXML(w)
}

// junitSuite is one scenario run's testsuite.
func junitSuite(r *scenario.Result) junit.Testsuite {
	name := r.Scenario
	if b := r.BrokerVersionOrImage(); b != "" {
		name += " on " + b // runs of --images differ by their broker
	}
	s := junit.Testsuite{Name: name, Time: junitSeconds(r.DurationMS)}
	if !r.StartedAt.IsZero() {
		s.SetTimestamp(r.StartedAt)
	}
	s.AddProperty("verdict", string(r.Verdict.Status))
	class := "rmqtorture." + r.Scenario
	said := map[string]bool{} // the reasons some mode's testcase holds
	for _, m := range r.Modes {
		mc := class + "." + junitLabel(m)
		for _, tc := range junitMode(mc, m) {
			for _, res := range []*junit.Result{tc.Failure, tc.Error} {
				if res != nil {
					for _, line := range strings.Split(res.Data, "\n") {
						said[line] = true
					}
				}
			}
			s.AddTestcase(tc)
		}
	}
	// The scenario's reasons no mode holds: each mode's reason is prefixed
	// with its mode in the scenario's verdict (scenario.Overall).
	var rest []string
	for _, reason := range r.Verdict.Reasons {
		_, after, found := strings.Cut(reason, ": ")
		if !said[reason] && !(found && said[after]) {
			rest = append(rest, reason)
		}
	}
	if len(r.Modes) == 0 || len(rest) > 0 {
		s.AddTestcase(junitCase(class, "verdict", r.Verdict.Status, rest))
	}
	return s
}

// junitMode is a mode's testcases: one per check of the judge when the
// mode was judged and its verdict is theirs, else one "verdict" testcase.
func junitMode(class string, m scenario.ModeResult) []junit.Testcase {
	if len(m.Checks) == 0 || !slices.Equal(scenario.VerdictOf(m.Checks).Reasons, m.Verdict.Reasons) {
		return []junit.Testcase{junitCase(class, "verdict", m.Verdict.Status, m.Verdict.Reasons)}
	}
	out := make([]junit.Testcase, 0, len(m.Checks))
	for _, c := range m.Checks {
		status := scenario.Pass
		switch {
		case len(c.Reasons) > 0 && c.Fails:
			status = scenario.Fail
		case len(c.Reasons) > 0:
			status = scenario.Inconclusive
		}
		out = append(out, junitCase(class, c.Name, status, c.Reasons))
	}
	return out
}

// junitCase is one testcase: a failure for fail, an error for
// inconclusive (the run could not measure what it set out to), nothing for
// pass. A fail or inconclusive with no reason says the status.
func junitCase(class, name string, status scenario.Status, reasons []string) junit.Testcase {
	tc := junit.Testcase{Name: name, Classname: class}
	if status == scenario.Pass {
		return tc
	}
	if len(reasons) == 0 {
		reasons = []string{string(status)}
	}
	res := &junit.Result{Message: strings.Join(reasons, "; "), Type: string(status), Data: strings.Join(reasons, "\n")}
	if status == scenario.Fail {
		tc.Failure = res
	} else {
		tc.Error = res
	}
	return tc
}

// junitLabel names a mode result in a classname: its mode, and its
// matrix cell if any ("confirm-window.quorum.persistent.1").
func junitLabel(m scenario.ModeResult) string {
	if m.Cell == nil {
		return string(m.Mode)
	}
	return fmt.Sprintf("%s.%s.%s.%d", m.Mode, m.Cell.QueueType, scenario.Persistence(m.Cell.Persistent), m.Cell.Repeat)
}

// junitSeconds formats ms as JUnit's time attribute: seconds, 3 decimals.
func junitSeconds(ms float64) string {
	return fmt.Sprintf("%.3f", ms/1000)
}
