package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/rmqtorture/rmqtorture/scenario"
)

func newList(g *globalOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the scenarios in the scenario file, one line each",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			f, err := g.load()
			if err != nil {
				return err
			}
			for _, s := range f.Scenarios {
				desc := strings.Join(strings.Fields(s.Description), " ")
				if i := strings.Index(desc, ". "); i > 0 {
					desc = desc[:i+1]
				}
				fmt.Fprintf(c.OutOrStdout(), "%-24s %s\n", s.Name, desc)
			}
			return nil
		},
	}
}

func newValidate(g *globalOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "validate [scenario...]",
		Short: "Check the scenario file and print the resolved plan; touches nothing",
		Long: `validate reads the scenario file strictly (unknown keys are errors), reports
every problem with file:line:column and field path, and prints each scenario
(or the named ones) with every default filled in. It never talks to Docker or
a broker. Exit 0 when valid, 2 when not.`,
		RunE: func(c *cobra.Command, args []string) error {
			f, err := g.load()
			if err != nil {
				return err
			}
			out := f.Scenarios
			if len(args) > 0 {
				out = nil
				for _, name := range args {
					s, err := f.Find(g.file, name)
					if err != nil {
						return causeErr(CauseUnknownScenario, err)
					}
					out = append(out, *s)
				}
			}
			enc := yaml.NewEncoder(c.OutOrStdout())
			enc.SetIndent(2)
			if err := enc.Encode(scenario.File{Version: f.Version, Scenarios: out}); err != nil {
				return err
			}
			return enc.Close()
		},
	}
}
