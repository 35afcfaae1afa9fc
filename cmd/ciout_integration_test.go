package cmd

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jstemmer/go-junit-report/v2/junit"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// wrongExpectation publishes 300 orders with no fault and expects 1
// confirmed: a real run whose verdict fails on one check of the judge, the
// mode expectations, whatever the machine's speed.
const wrongExpectation = `version: 1
scenarios:
  - name: wrong-expectation
    description: 300 orders, no fault, and an expectation of 1 confirmed that no run can meet.
    load: {messages: 300, modes: [confirm-window]}
    expect:
      modes:
        confirm-window: {confirmed: 1}
`

// A failed run under GitHub Actions, against the real broker: --junit
// holds a testcase per check of the judge, the mode expectations' one
// failed with the verdict's reason, every other passed; stdout carries
// that reason as an ::error annotation, escaped as the runner reads it.
func TestJUnitAndAnnotations(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker and the broker image")
	}
	t.Setenv(githubActions, "true")
	dir := t.TempDir()
	file, report := filepath.Join(dir, "s.yaml"), filepath.Join(dir, "junit.xml")
	if err := os.WriteFile(file, []byte(wrongExpectation), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "wrong-expectation", "-f", file, "--out", dir, "--junit", report}
	if shareable(t, file, "wrong-expectation", nil) == sharedNode {
		args = append(args, "--container", sharedBroker(t).Name)
		t.Cleanup(func() { resetShared(t) })
	}
	code, stdout, stderr := runCLI(t, args...)
	r := readResult(t, stdout)
	m := mode(t, r, scenario.ConfirmWindow)
	if code != ExitFail || m.Verdict.Status != scenario.Fail || len(m.Verdict.Reasons) != 1 || m.Confirmed != 300 {
		t.Fatalf("exit %d, verdict %+v, confirmed %d; want exit %d and one reason\n%s\n%s", code, m.Verdict, m.Confirmed, ExitFail, stdout, stderr)
	}
	reason := m.Verdict.Reasons[0]
	// The one annotation: the scenario's reason, "MODE: reason".
	var annotations []string
	for _, line := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(line, "::") {
			annotations = append(annotations, line)
		}
	}
	if want := "::error title=rmqtorture%3A wrong-expectation::confirm-window: " + workflowData(reason); !slices.Equal(annotations, []string{want}) {
		t.Errorf("annotations %q, want [%q]", annotations, want)
	}
	var doc junit.Testsuites
	if err := xml.Unmarshal([]byte(readFile(t, report)), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d suites", len(doc.Suites))
	}
	s := doc.Suites[0]
	var failed []string
	for _, tc := range s.Testcases {
		if tc.Classname != "rmqtorture.wrong-expectation.confirm-window" || tc.Error != nil {
			t.Errorf("testcase %+v", tc)
		}
		if tc.Failure != nil {
			failed = append(failed, tc.Name+": "+tc.Failure.Message)
		}
	}
	checks := len(scenario.JudgeChecks(m.Mode, metrics.Counts{}, scenario.Observed{}, scenario.Expect{}, scenario.Conditions{}))
	if s.Name != "wrong-expectation on "+r.BrokerVersionOrImage() || s.Tests != checks || s.Failures != 1 || len(s.Testcases) != checks || checks == 0 {
		t.Errorf("suite %q: %d tests, %d failures; want one per check (%d), 1 failure", s.Name, s.Tests, s.Failures, checks)
	}
	if want := "mode expectations: " + reason; !slices.Equal(failed, []string{want}) {
		t.Errorf("failed testcases %q, want [%q]", failed, want)
	}
}
