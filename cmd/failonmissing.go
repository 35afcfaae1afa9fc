package cmd

import (
	"fmt"
	"slices"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// failOnMissingUnused is the warning --fail-on-missing gets when s runs no
// fire-and-forget mode: only fire-and-forget publishes orders without a
// confirm, so the flag then checks nothing; "" otherwise.
func failOnMissingUnused(set bool, s *scenario.Scenario) string {
	if !set || slices.Contains(s.Load.Modes, scenario.FireAndForget) {
		return ""
	}
	return fmt.Sprintf("--fail-on-missing checks nothing in scenario %q: it runs no fire-and-forget mode, the only one that publishes without a confirm (name it in --mode to check it)", s.Name)
}
