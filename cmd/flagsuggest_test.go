package cmd

import (
	"strconv"
	"testing"
)

// TestFlagDidYouMean: a mistyped long flag gets the command's nearest flag
// (one or two edits away), exit 2, before anything starts; a flag nothing
// is near gets cobra's message alone.
func TestFlagDidYouMean(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"run", "baseline", "--mesages", "10"}, "rmqtorture: unknown flag: --mesages; did you mean --messages?\n"},
		{[]string{"run", "baseline", "--fail-on-mising"}, "rmqtorture: unknown flag: --fail-on-mising; did you mean --fail-on-missing?\n"},
		{[]string{"list", "--ouput", "json"}, "rmqtorture: unknown flag: --ouput; did you mean --output?\n"},
		{[]string{"report", "r.json", "--formt", "json"}, "rmqtorture: unknown flag: --formt; did you mean --format?\n"},
		{[]string{"run", "baseline", "--verbos"}, "rmqtorture: unknown flag: --verbos; did you mean --verbose?\n"},
		{[]string{"run", "baseline", "--nosuch"}, "rmqtorture: unknown flag: --nosuch\n"},
		{[]string{"report", storedResult, "--format", "sumary"}, "rmqtorture: --format: \"sumary\" is not a format (markdown, table, json, summary); did you mean summary?\n"},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != ExitUsage || stdout != "" || stderr != tc.stderr {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, stderr %q", tc.args, code, stdout, stderr, tc.stderr)
		}
	}
}

// TestUnknownScenarioManyNames: an unknown scenario name nothing is near
// lists the names of a small file, but points a file with dozens (the
// built-in one) to list instead of printing them all on one line.
func TestUnknownScenarioManyNames(t *testing.T) {
	for _, args := range [][]string{{"run", "nosuch"}, {"validate", "nosuch"}} {
		code, stdout, stderr := runCLI(t, args...)
		if want := "rmqtorture: scenarios.yaml: no scenario named \"nosuch\"; `rmqtorture list` names its " + strconv.Itoa(shippedCount(t)) + " scenarios\n"; code != ExitUsage || stdout != "" || stderr != want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, stderr %q", args, code, stdout, stderr, want)
		}
	}
}

// shippedCount is how many scenarios the built-in file has.
func shippedCount(t *testing.T) int {
	t.Helper()
	f, err := (&globalOpts{}).load()
	if err != nil {
		t.Fatal(err)
	}
	return len(f.Scenarios)
}
