package reports

import (
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"

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
// display columns on every fixture.
func TestSummaryFitsWidth(t *testing.T) {
	for name, r := range fixtures(t) {
		out := render(t, Summary, r)
		for i, l := range strings.Split(string(out), "\n") {
			if n := twwidth.Width(l); n > 100 {
				t.Errorf("%s: line %d is %d columns: %q", name, i+1, n, l)
			}
		}
	}
}
