package cmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// outputFormat is the value of -o/--output: how a command prints its result
// on stdout. The empty value is the command's default (for run: the headline
// and a table that fits 100 columns).
type outputFormat string

const (
	outDefault  outputFormat = ""
	outWide     outputFormat = "wide"     // every column (run, report, compare, list)
	outJSON     outputFormat = "json"     // machine-readable, e.g. result.json on stdout
	outMarkdown outputFormat = "markdown" // the markdown report
)

// outputValue is the pflag.Value behind -o: it refuses a format the command
// does not offer when the flag is parsed, so a bad -o is bad input (exit 2)
// before anything starts.
type outputValue struct {
	p       *outputFormat
	allowed []outputFormat
}

func (v *outputValue) String() string { return string(*v.p) }
func (v *outputValue) Type() string   { return "format" }
func (v *outputValue) Set(s string) error {
	f := outputFormat(s)
	if !slices.Contains(v.allowed, f) {
		if m := scenario.Suggest(s, strings.Split(v.names(), ", ")); m != "" {
			return fmt.Errorf("unknown output format %q; did you mean %s?", s, m)
		}
		return fmt.Errorf("unknown output format %q; choose one of %s", s, v.names())
	}
	*v.p = f
	return nil
}

func (v *outputValue) names() string {
	var n []string
	for _, a := range v.allowed {
		n = append(n, string(a))
	}
	return strings.Join(n, ", ")
}

// addOutputFlag adds -o/--output to c, storing into p, accepting only
// allowed, and offering them to shell completion.
func addOutputFlag(c *cobra.Command, p *outputFormat, allowed ...outputFormat) {
	v := &outputValue{p: p, allowed: allowed}
	c.Flags().VarP(v, "output", "o", "output format on stdout: "+v.names()+" (default: a summary that fits 100 columns)")
	_ = c.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return strings.Split(v.names(), ", "), cobra.ShellCompDirectiveNoFileComp
	})
}
