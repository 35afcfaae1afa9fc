package cmd

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/reports"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// CI outputs (docs/ci.md, "JUnit and annotations"): --junit writes a
// JUnit XML report when each scenario ends; under GitHub Actions
// (GITHUB_ACTIONS=true) each reason of a scenario that did not pass is
// also a workflow command, so it shows as an annotation on the run.

// addCIFlags adds --junit to run.
func (o *runOpts) addCIFlags(c *cobra.Command) {
	c.Flags().StringVar(&o.junitFile, "junit", "", "also write a JUnit XML report to this file when each scenario ends: a testcase per mode and check of the verdict, failed with its reason")
}

// writeJUnit writes --junit again with every scenario so far, atomically.
func (o *runOpts) writeJUnit(res *scenario.Result) error {
	if o.junitFile == "" {
		return nil
	}
	o.junitResults = append(o.junitResults, res)
	if err := writeAtomic(o.junitFile, func(f *os.File) error { return reports.JUnit(f, o.junitResults...) }); err != nil {
		return fmt.Errorf("write --junit %s: %w", o.junitFile, err)
	}
	return nil
}

// githubActions is the environment variable GitHub Actions sets to "true"
// in every step (https://docs.github.com/en/actions/reference/variables-reference).
const githubActions = "GITHUB_ACTIONS"

// annotate prints, when GITHUB_ACTIONS is "true", one workflow command per
// reason of res's verdict: ::error for a failed scenario, ::warning for an
// inconclusive one, titled "rmqtorture: SCENARIO"
// (https://docs.github.com/en/actions/reference/workflow-commands-for-github-actions).
// The runner takes workflow commands from a step's stdout and stderr
// alike (actions/runner, src/Runner.Worker/Handlers/ScriptHandler.cs): w
// is stdout, or stderr when stdout holds a document (-o json, -o markdown,
// the versions report).
func annotate(w io.Writer, res *scenario.Result) error {
	if os.Getenv(githubActions) != "true" || res.Verdict.Status == scenario.Pass {
		return nil
	}
	cmd := "warning"
	if res.Verdict.Status == scenario.Fail {
		cmd = "error"
	}
	reasons := res.Verdict.Reasons
	if len(reasons) == 0 {
		reasons = []string{string(res.Verdict.Status)}
	}
	title := workflowProperty("rmqtorture: " + res.Scenario)
	for _, r := range reasons {
		if _, err := fmt.Fprintf(w, "::%s title=%s::%s\n", cmd, title, workflowData(r)); err != nil {
			return err
		}
	}
	return nil
}

// workflowData escapes a workflow command's message as the runner
// unescapes it (actions/toolkit, packages/core/src/command.ts: escapeData):
// a reason with a newline or "%" stays one annotation, whole.
func workflowData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// workflowProperty escapes a workflow command's property value
// (escapeProperty): workflowData's, and ":" and "," that end a value.
func workflowProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
