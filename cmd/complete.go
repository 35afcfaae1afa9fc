package cmd

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// Shell completion (rmqtorture completion bash|zsh|fish|powershell):
// scenario names for run and validate, from the file -f names or the
// built-in one, and the values of every flag that takes one of a fixed
// set. -o registers its own (addOutputFlag).

// flagValues are the values offered for each enum flag, by command.
func flagValues() map[string]map[string][]string {
	modes := make([]string, len(scenario.Modes))
	for i, m := range scenario.Modes {
		modes[i] = string(m)
	}
	return map[string]map[string][]string{
		"run": {
			"mode":        modes,
			"queue-types": {string(scenario.Quorum), string(scenario.Classic)},
			"persistence": {"persistent", "transient"},
			"nodes":       {"1", "3", "5"},
			// a flag not (yet) defined is skipped; one that registers its
			// own completion keeps it
			"queue-type": {string(scenario.Quorum), string(scenario.Classic), string(scenario.Stream)},
		},
		"report": {"format": {"markdown", "table", "json", "summary"}},
	}
}

// addCompletions registers the completions of root's commands.
func addCompletions(root *cobra.Command, g *globalOpts) {
	values := flagValues()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "run", "validate":
			c.ValidArgsFunction = scenarioNames(g)
		}
		for flag, vals := range values[c.Name()] {
			if c.Flags().Lookup(flag) == nil {
				continue
			}
			complete := oneOf(vals)
			if _, isList := c.Flags().Lookup(flag).Value.(interface{ GetSlice() []string }); isList {
				complete = listOf(vals)
			}
			_ = c.RegisterFlagCompletionFunc(flag, complete)
		}
	}
}

// scenarioNames completes the names of the scenario file's scenarios that
// start with the word typed and are not already given, each with the
// first sentence of its description.
func scenarioNames(g *globalOpts) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		f, err := g.load()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, s := range f.Scenarios {
			if strings.HasPrefix(s.Name, toComplete) && !slices.Contains(args, s.Name) {
				names = append(names, s.Name+"\t"+firstSentence(s.Description))
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// oneOf completes a flag that takes one of vals.
func oneOf(vals []string) cobra.CompletionFunc {
	return cobra.FixedCompletions(vals, cobra.ShellCompDirectiveNoFileComp)
}

// listOf completes a comma-separated list of vals: the word's last item,
// after the items before it, leaving out those already listed.
func listOf(vals []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		i := strings.LastIndex(toComplete, ",")
		head := toComplete[:i+1]
		listed := strings.Split(head, ",")
		var out []string
		for _, v := range vals {
			if !slices.Contains(listed, v) {
				out = append(out, head+v)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
